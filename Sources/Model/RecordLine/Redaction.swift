import JSON

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
