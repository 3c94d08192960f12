// Local development without credentials: log the push, send nothing (Concierge seed:
// "Without credentials, local dev logs each push instead of sending it").
import PushModel

public enum DryRun {
    /// One line describing the request that would have gone out: transport, method and
    /// path, headers in order, body. Control characters in the body are escaped so the
    /// line stays one line; no authorization header is shown because none exists.
    public static func logLine(for push: PushRequest, fcmProjectID: String?) -> String {
        var line = "dry-run \(push.transport.rawValue) POST \(path(for: push, fcmProjectID: fcmProjectID))"
        var headers = push.headers.map { "\($0.name): \($0.value)" }
        if push.transport == .fcm, !push.headers.contains(where: { $0.name.lowercased() == "content-type" }) {
            headers.append("content-type: application/json")
        }
        line += " headers: [" + headers.joined(separator: "; ") + "]"
        line += " body: " + escapedOneLine(push.body)
        return line
    }

    static func path(for push: PushRequest, fcmProjectID: String?) -> String {
        switch push.transport {
        case .apns: "/3/device/" + percentEncodedPathSegment(push.device.token)
        case .fcm: "/v1/projects/" + percentEncodedPathSegment(fcmProjectID ?? "-") + "/messages:send"
        }
    }

    static func escapedOneLine(_ body: [UInt8]) -> String {
        var text = ""
        for scalar in String(decoding: body, as: UTF8.self).unicodeScalars {
            switch scalar {
            case "\n": text += "\\n"
            case "\r": text += "\\r"
            case "\t": text += "\\t"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F:
                text += "\\u{\(String(scalar.value, radix: 16))}"
            default: text.unicodeScalars.append(scalar)
            }
        }
        return text
    }
}

/// Percent-encodes everything but RFC 3986 unreserved characters, so a token or project id
/// cannot change the shape of the path. APNs tokens are hex and pass through unchanged.
func percentEncodedPathSegment(_ segment: String) -> String {
    var needsEncoding = false
    for byte in segment.utf8 where !isUnreserved(byte) {
        needsEncoding = true
        break
    }
    guard needsEncoding else { return segment }
    let hex: [UInt8] = Array("0123456789ABCDEF".utf8)
    var bytes: [UInt8] = []
    bytes.reserveCapacity(segment.utf8.count * 3)
    for byte in segment.utf8 {
        if isUnreserved(byte) {
            bytes.append(byte)
        } else {
            bytes.append(UInt8(ascii: "%"))
            bytes.append(hex[Int(byte >> 4)])
            bytes.append(hex[Int(byte & 0x0F)])
        }
    }
    return String(decoding: bytes, as: UTF8.self)
}

/// application/x-www-form-urlencoded value encoding (space as %20 is accepted everywhere).
func formEncoded(_ value: String) -> String { percentEncodedPathSegment(value) }

private func isUnreserved(_ byte: UInt8) -> Bool {
    switch byte {
    case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
         UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."),
         UInt8(ascii: "_"), UInt8(ascii: "~"):
        true
    default:
        false
    }
}
