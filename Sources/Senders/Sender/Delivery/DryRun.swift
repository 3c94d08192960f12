// Local development without credentials: log the push, send nothing (Concierge seed:
// "Without credentials, local dev logs each push instead of sending it").
import CCurl
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
/// libcurl's curl_easy_escape does it (%XX, upper-case hex; the handle is unused since 7.82).
func percentEncodedPathSegment(_ segment: String) -> String {
    var segment = segment
    return segment.withUTF8 { bytes in
        guard !bytes.isEmpty else { return "" }
        let escaped = bytes.withMemoryRebound(to: CChar.self) { curl_easy_escape(nil, $0.baseAddress, Int32(clamping: $0.count)) }
        guard let escaped else { return "" }  // only when libcurl is out of memory
        defer { curl_free(escaped) }
        return String(cString: escaped)
    }
}

/// application/x-www-form-urlencoded value encoding (space as %20 is accepted everywhere).
func formEncoded(_ value: String) -> String { percentEncodedPathSegment(value) }
