import HTTPCore
import JSON
import RecordLine

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

    /// At least one of `file` and `journal`.
    public init(file: RecordFile?, journal: RequestJournal? = nil) {
        self.file = file
        self.journal = journal
    }

    public func observe(_ exchange: GatewayExchange) {
        let (prefix, suffix) = Self.encode(exchange)
        guard let journal else {
            file?.appendLine(prefix: prefix, suffix: suffix)
            return
        }
        journal.append(lineTail: suffix, of: exchange) { next in
            file?.appendLine(prefix: prefix, suffix: suffix) ?? next
        }
    }

    /// The line split around the sequence number, which the file (or the journal) assigns.
    static func encode(_ exchange: GatewayExchange) -> (prefix: [UInt8], suffix: [UInt8]) {
        let suffix = RecordLine.encodeTail(request: exchange.request, response: exchange.response, route: exchange.route.rawValue,
                                           reason: exchange.reason, detail: exchange.detail, fault: exchange.fault,
                                           verdict: exchange.verdict, answeredNanos: exchange.answeredNanos,
                                           clientCertificateSubject: exchange.clientCertificateSubject,
                                           redactAssertion: exchange.route == .oauth, requestHeaders: exchange.recordedHeaders)
        return (RecordLine.linePrefix, suffix)
    }
}
