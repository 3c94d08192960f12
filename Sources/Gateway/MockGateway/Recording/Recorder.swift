import HTTPCore
import JSON
import RecordLine
import Synchronization

/// Writes every exchange as one JSON object a line (JSON Lines) to a `RecordFile`, and hands
/// the same encoded line to the `RequestJournal` of the control API: one encoding, one
/// sequence number for both (the file's, assigned under the journal's lock so the journal's
/// lines stay in order; the journal's own count when there is no file).
/// The line format is `RecordLine`'s (the contract `pushproof check` and other tools read,
/// documented in the README's "Recording format"); this class only routes the encoded line.
///
/// Secrets never reach the file (`Redaction`, applied by `RecordLine.encodeTail`): an
/// `authorization` value keeps only what identifies the key, never a signature; an OAuth
/// assertion in a `/token` body loses its signature the same way.
public final class Recorder: GatewayObserver {
    /// `--record FILE`, if given.
    public let file: RecordFile?
    /// The control API's journal, if on (`--journal-size`, not 0).
    public let journal: RequestJournal?

    /// Line writers kept between lines, so a line's buffer is not allocated and freed each time;
    /// a few, for the event-loop threads writing at once (one more is made when none is free).
    private let spareWriters = Mutex<[JSONWriter]>([])
    private static let spareWritersKept = 8

    /// At least one of `file` and `journal`.
    public init(file: RecordFile?, journal: RequestJournal? = nil) {
        self.file = file
        self.journal = journal
    }

    public var wantsRecordedRequestHead: Bool { true }

    public func observe(_ exchange: GatewayExchange) {
        var writer = spareWriters.withLock { $0.popLast() }
            ?? JSONWriter(capacity: RecordLine.lineCapacity(bodyBytes: exchange.request.body.count))
        Self.encode(exchange, into: &writer)
        // The file and the journal copy the line; the writer's buffer is ours again after.
        let suffix = writer.bytes
        let prefix = RecordLine.linePrefix
        if let journal {
            journal.append(lineTail: suffix, of: exchange) { next in
                file?.appendLine(prefix: prefix, suffix: suffix) ?? next
            }
        } else {
            file?.appendLine(prefix: prefix, suffix: suffix)
        }
        // A line of a large body (FCM allows 64 KiB) leaves a large buffer: not kept.
        guard writer.bytes.capacity <= Self.writerCapacityKept else { return }
        spareWriters.withLock { spare in
            if spare.count < Self.spareWritersKept { spare.append(writer) }
        }
    }

    private static let writerCapacityKept = 16_384

    /// The line split around the sequence number, which the file (or the journal) assigns.
    static func encode(_ exchange: GatewayExchange) -> (prefix: [UInt8], suffix: [UInt8]) {
        var writer = JSONWriter(capacity: RecordLine.lineCapacity(bodyBytes: exchange.request.body.count))
        encode(exchange, into: &writer)
        return (RecordLine.linePrefix, writer.bytes)
    }

    /// The line after its sequence number, which the file (or the journal) assigns; the line
    /// begins with `RecordLine.linePrefix`.
    static func encode(_ exchange: GatewayExchange, into writer: inout JSONWriter) {
        RecordLine.encodeTail(request: exchange.request, response: exchange.response, route: exchange.route,
                              reason: exchange.reason, detail: exchange.detail, fault: exchange.fault, rule: exchange.answerRule,
                              verdict: exchange.verdict, answeredNanos: exchange.answeredNanos,
                              clientCertificateSubject: exchange.clientCertificateSubject,
                              redactAssertion: exchange.route == .oauth, requestHead: exchange.recordedRequestHead, verdictEncoding: exchange.verdictEncoding,
                              bodyParsedAsJSON: exchange.bodyParsedAsJSON, into: &writer)
    }
}
