import JSON

// Push payloads are written straight to bytes with the JSON module's `JSONWriter`: no
// intermediate `JSONValue`, one buffer per payload reserved up front, so building a push
// allocates little more than its own body. `PayloadWriter` adds the one thing the seeds need
// on top: the same field written as a JSON number/boolean for APNs or as a string for FCM.

/// How numbers and flags travel. APNs keeps JSON types ("On iOS, numbers stay numbers");
/// FCM data maps carry strings only ("numbers arrive as "1793952000000", flags as "0" / "1"").
public enum PayloadEncoding: Sendable {
    case apns
    case fcmData
}

struct PayloadWriter {
    private var json: JSONWriter

    init(capacity: Int) {
        json = JSONWriter(capacity: capacity)
    }

    var bytes: [UInt8] { json.bytes }

    // MARK: Structure

    mutating func beginObject() {
        json.beginObject()
    }

    mutating func beginObject(_ key: String) {
        json.key(key)
        json.beginObject()
    }

    mutating func endObject() {
        json.endObject()
    }

    // MARK: Members

    mutating func string(_ key: String, _ value: String) {
        json.key(key)
        json.string(value)
    }

    mutating func integer(_ key: String, _ value: Int64, _ encoding: PayloadEncoding = .apns) {
        json.key(key)
        switch encoding {
        case .apns: json.int(Int(truncatingIfNeeded: value))
        // At most 20 characters: a small (inline) string, no heap allocation.
        case .fcmData: json.string(String(value))
        }
    }

    mutating func integer(_ key: String, _ value: Int, _ encoding: PayloadEncoding = .apns) {
        integer(key, Int64(value), encoding)
    }

    /// A flag: `true`/`false` for APNs, `"1"`/`"0"` in an FCM data map.
    mutating func flag(_ key: String, _ value: Bool, _ encoding: PayloadEncoding) {
        json.key(key)
        switch encoding {
        case .apns: json.bool(value)
        case .fcmData: json.string(value ? "1" : "0")
        }
    }

    /// The `alert` dictionary of an `aps` object: `title` (left out when nil) and `body`,
    /// the two keys Apple's "Generating a remote notification" lists for a visible alert.
    mutating func alert(title: String?, body: String) {
        beginObject("alert")
        if let title { string("title", title) }
        string("body", body)
        endObject()
    }

    /// Already-serialized JSON, e.g. a data map shared by several devices.
    mutating func raw(_ key: String, _ serialized: [UInt8]) {
        json.key(key)
        json.raw(serialized)
    }
}
