import HTTPCore
import JSON

/// Writes every exchange as one JSON object a line (JSON Lines) to a `RecordFile`, and hands
/// the same encoded line to the `RequestJournal` of the control API: one encoding, one
/// sequence number for both (the file's, assigned under the journal's lock so the journal's
/// lines stay in order; the journal's own count when there is no file).
/// The line format is the contract `pushproof check` and other tools read; it is documented
/// in the README ("Recording format") and its version is the `v` field.
///
/// Secrets never reach the file: an `authorization` value keeps only what identifies the
/// key (a JWT's header and claims; the first characters of an opaque token), never a
/// signature; an OAuth assertion in a `/token` body loses its signature the same way.
public final class Recorder: GatewayObserver {
    public static let formatVersion = 1
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
    static let linePrefix = Array(#"{"v":1,"seq":"#.utf8)

    static func encode(_ exchange: GatewayExchange) -> (prefix: [UInt8], suffix: [UInt8]) {
        let prefix = linePrefix
        var w = JSONWriter(capacity: 512 + exchange.request.body.count)
        let request = exchange.request
        w.continueAfterValue()  // the line so far is `{"v":1,"seq":N`
        w.key(plain: "time"); w.string(utf8: Timestamp.iso8601Bytes(nanos: request.arrivalNanos))
        w.key(plain: "arrival_ns"); w.uint(request.arrivalNanos)
        w.key(plain: "answered_ns"); w.uint(exchange.answeredNanos)
        w.key(plain: "connection"); w.uint(request.connectionID)
        w.key(plain: "stream"); w.int(Int(request.streamID))
        w.key(plain: "protocol"); w.string(request.version.rawValue)
        w.key(plain: "tls"); w.bool(request.isTLS)
        w.key(plain: "route"); w.string(exchange.route.rawValue)
        w.key(plain: "method"); w.string(request.method)
        w.key(plain: "path"); w.string(request.path)
        if let authority = request.authority { w.key(plain: "authority"); w.string(authority) }
        if let subject = exchange.clientCertificateSubject {
            w.key(plain: "client_certificate")
            w.beginObject()
            w.key(plain: "subject"); w.string(subject)
            w.endObject()
        }
        w.key(plain: "headers")
        writeHeaders(request.headers, to: &w)
        writeBody(request.body, redactAssertion: exchange.route == .oauth, to: &w)
        w.key(plain: "response")
        w.beginObject()
        w.key(plain: "status"); w.int(exchange.response.status)
        w.key(plain: "reason")
        if let reason = exchange.reason { w.string(reason) } else { w.null() }
        if let detail = exchange.detail { w.key(plain: "detail"); w.string(detail) }
        w.key(plain: "headers")
        writeHeaders(exchange.response.headers, to: &w)
        writeBody(exchange.response.body, redactAssertion: false, to: &w)
        if exchange.response.delayNanos > 0 { w.key(plain: "delay_ns"); w.uint(exchange.response.delayNanos) }
        if !exchange.response.actions.isEmpty {
            w.key(plain: "actions")
            w.beginArray()
            for action in exchange.response.actions { w.string(describe(action)) }
            w.endArray()
        }
        w.endObject()
        if let fault = exchange.fault { w.key(plain: "fault"); w.string(fault) }
        if let verdict = exchange.verdict { w.key(plain: "verdict"); w.value(verdict) }
        var suffix = w.bytes
        suffix.append(UInt8(ascii: "}"))
        suffix.append(0x0A)
        return (prefix, suffix)
    }

    private static func writeHeaders(_ headers: [HTTPHeader], to w: inout JSONWriter) {
        // Pairs, not an object: order and repeated names are part of what is judged.
        w.beginArray()
        for header in headers {
            w.beginArray()
            w.string(header.name)
            if header.name == "authorization" {
                w.string(Redaction.authorization(header.value))
            } else {
                w.string(header.value)
            }
            w.endArray()
        }
        w.endArray()
    }

    private static func writeBody(_ body: [UInt8], redactAssertion: Bool, to w: inout JSONWriter) {
        if body.isEmpty {
            w.key(plain: "body"); w.string("")
            return
        }
        if UTF8Check.isValid(body) {
            w.key(plain: "body")
            if redactAssertion {
                w.string(Redaction.formAssertion(String(decoding: body, as: UTF8.self)))
            } else {
                w.string(utf8: body)
            }
        } else {
            // Not text: kept exactly, as base64, so nothing received is lost.
            w.key("body_base64"); w.string(Base64.encode(body))
        }
    }

    private static func describe(_ action: ConnectionAction) -> String {
        switch action {
        case .goAway(let code, _): "goaway:\(code)"
        case .resetStream(let code): "rst_stream:\(code)"
        case .closeConnection: "close"
        case .setMaxConcurrentStreams(let n): "max_concurrent_streams:\(n)"
        }
    }
}

/// What of a credential may be written down.
public enum Redaction {
    /// `bearer <jwt>` keeps the JWT's header and claims (kid, iss, iat: what identifies the
    /// key) and replaces the signature; any other token keeps its first 8 characters.
    public static func authorization(_ value: String) -> String {
        if let redacted = asciiSchemeAndToken(value) { return redacted }
        let parts = value.split(separator: " ", maxSplits: 1)
        guard parts.count == 2 else { return "<redacted>" }
        return parts[0] + " " + token(String(parts[1]))
    }

    /// `authorization` for the shape nearly every request has (ASCII `scheme token`, no
    /// leading space), on bytes: the Substring splits were ~2.5% of the server's time with
    /// `--record` on. Nil sends the value through the general path, which gives the same
    /// answer for this shape.
    private static func asciiSchemeAndToken(_ value: String) -> String? {
        var value = value
        return value.withUTF8 { bytes -> String? in
            guard let first = bytes.first, first != UInt8(ascii: " "), UTF8Check.isASCII(bytes),
                  let space = bytes.firstIndex(of: UInt8(ascii: " ")), space + 1 < bytes.count else { return nil }
            let token = UnsafeBufferPointer(rebasing: bytes[(space + 1)...])
            var dots = 0
            var secondDot = -1
            for i in token.indices where token[i] == UInt8(ascii: ".") {
                dots += 1
                if dots == 2 { secondDot = i }
            }
            var out: [UInt8] = []
            out.reserveCapacity(bytes.count + 16)
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[...space]))
            if dots == 2 {
                out.append(contentsOf: UnsafeBufferPointer(rebasing: token[...secondDot]))
                out.append(contentsOf: "<redacted>".utf8)
            } else {
                out.append(contentsOf: UnsafeBufferPointer(rebasing: token.prefix(8)))
                out.append(contentsOf: "…<redacted>".utf8)
            }
            return String(decoding: out, as: UTF8.self)
        }
    }

    static func token(_ token: String) -> String {
        let segments = token.split(separator: ".", omittingEmptySubsequences: false)
        if segments.count == 3 {
            return segments[0] + "." + segments[1] + ".<redacted>"
        }
        return String(token.prefix(8)) + "…<redacted>"
    }

    /// A form body `…&assertion=<jwt>&…` with the assertion's signature replaced.
    public static func formAssertion(_ body: String) -> String {
        body.split(separator: "&", omittingEmptySubsequences: false).map { field -> String in
            if field.hasPrefix("assertion=") {
                return "assertion=" + token(String(field.dropFirst("assertion=".count)))
            }
            return String(field)
        }.joined(separator: "&")
    }
}

enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var i = 0
        while i + 2 < bytes.count {
            let n = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
            out += [alphabet[Int(n >> 18 & 63)], alphabet[Int(n >> 12 & 63)], alphabet[Int(n >> 6 & 63)], alphabet[Int(n & 63)]]
            i += 3
        }
        let rest = bytes.count - i
        if rest > 0 {
            let n = UInt32(bytes[i]) << 16 | (rest == 2 ? UInt32(bytes[i + 1]) << 8 : 0)
            out += [alphabet[Int(n >> 18 & 63)], alphabet[Int(n >> 12 & 63)]]
            out += rest == 2 ? [alphabet[Int(n >> 6 & 63)], UInt8(ascii: "=")] : [UInt8(ascii: "="), UInt8(ascii: "=")]
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// UTC timestamps without Foundation or String building (this runs once per request).
public enum Timestamp {
    /// `2026-11-29T20:01:02.123456Z` (microseconds).
    public static func iso8601(nanos: UInt64) -> String {
        String(decoding: iso8601Bytes(nanos: nanos), as: UTF8.self)
    }

    public static func iso8601Bytes(nanos: UInt64) -> [UInt8] {
        let seconds = Int64(nanos / 1_000_000_000)
        let micros = Int((nanos / 1000) % 1_000_000)
        var days = seconds / 86_400
        let secondOfDay = Int(seconds % 86_400)
        // Howard Hinnant's days-to-civil algorithm.
        days += 719_468
        let era = (days >= 0 ? days : days - 146_096) / 146_097
        let dayOfEra = days - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        var year = yearOfEra + era * 400
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = Int(dayOfYear - (153 * mp + 2) / 5 + 1)
        let month = Int(mp < 10 ? mp + 3 : mp - 9)
        if month <= 2 { year += 1 }
        var out = [UInt8](repeating: 0, count: 27)
        func put(_ value: Int, at offset: Int, width: Int) {
            var v = value
            for i in stride(from: offset + width - 1, through: offset, by: -1) {
                out[i] = UInt8(ascii: "0") + UInt8(v % 10)
                v /= 10
            }
        }
        put(Int(year), at: 0, width: 4); out[4] = UInt8(ascii: "-")
        put(month, at: 5, width: 2); out[7] = UInt8(ascii: "-")
        put(day, at: 8, width: 2); out[10] = UInt8(ascii: "T")
        put(secondOfDay / 3600, at: 11, width: 2); out[13] = UInt8(ascii: ":")
        put(secondOfDay / 60 % 60, at: 14, width: 2); out[16] = UInt8(ascii: ":")
        put(secondOfDay % 60, at: 17, width: 2); out[19] = UInt8(ascii: ".")
        put(micros, at: 20, width: 6); out[26] = UInt8(ascii: "Z")
        return out
    }
}
