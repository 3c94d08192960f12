// HTTPFields: a request's header fields as bytes. Read as HTTPHeaders or through the unsafe
// view, the same fields in the same order, repeats kept; RepeatedText gives the same String
// while the bytes repeat.
import HTTPCore
import Testing

private let sample: [HTTPHeader] = [
    HTTPHeader("apns-topic", "com.example.app"),
    HTTPHeader("authorization", "bearer eyJ.eyJ.sig"),
    HTTPHeader("apns-topic", "com.example.other"),
    HTTPHeader("x-empty", ""),
    HTTPHeader("x-text", "naïve \"quoted\""),
]

@Test func fieldsReadBackInOrderWithRepeats() {
    let fields = HTTPFields(sample)
    #expect(Array(fields) == sample)
    #expect(fields.count == 5)
    #expect(fields.value(of: "apns-topic") == "com.example.app")
    #expect(fields.values(of: "apns-topic") == ["com.example.app", "com.example.other"])
    #expect(fields.value(of: "x-empty") == "")
    #expect(fields.value(of: "missing") == nil)
    #expect(fields.values(of: "missing").isEmpty)
    #expect(fields.byteCount == sample.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count })
}

@Test func theViewGivesNamesAndValuesAsBytes() {
    HTTPFields(sample).withUnsafeFields { fields in
        #expect(fields.count == 5)
        #expect(Array(fields.name(at: 1)) == Array("authorization".utf8))
        #expect(Array(fields.value(at: 1)) == Array("bearer eyJ.eyJ.sig".utf8))
        #expect(Array(fields.field(at: 1)) == Array("authorizationbearer eyJ.eyJ.sig".utf8))
        #expect(fields.nameLength(at: 1) == 13)
        #expect(fields.name(at: 0, is: "apns-topic"))
        #expect(!fields.name(at: 0, is: "apns-topi"))
        #expect(fields.name(at: 0, hasPrefix: "apns-"))
        #expect(!fields.name(at: 1, hasPrefix: "apns-"))
        #expect(fields.value(at: 3).isEmpty)
        #expect(!fields.nameRepeatsEarlier(0))
        #expect(fields.nameRepeatsEarlier(2))
        #expect(!fields.nameRepeatsEarlier(3))
        #expect(fields.firstIndex(of: "apns-topic") == 0)
        #expect(fields.firstIndex(of: "apns-topic", after: 0) == 2)
        #expect(fields.firstIndex(of: "apns-topic", after: 2) == nil)
    }
}

@Test func appendingBytesIsAppendingText() {
    var fromBytes = HTTPFields()
    for header in sample {
        Array(header.name.utf8).withUnsafeBufferPointer { name in
            Array(header.value.utf8).withUnsafeBufferPointer { value in fromBytes.append(name: name, value: value) }
        }
    }
    #expect(fromBytes == HTTPFields(sample))
    #expect(fromBytes.sameBytes(as: HTTPFields(sample)))
}

@Test func sameBytesTellsWhereTheBoundaryFalls() {
    // The same bytes back to back, split differently between name and value: not the same fields.
    let a: HTTPFields = [HTTPHeader("ab", "c")]
    let b: HTTPFields = [HTTPHeader("a", "bc")]
    #expect(!a.sameBytes(as: b))
    #expect(a != b)
    #expect(HTTPFields().sameBytes(as: []))
    #expect(!a.sameBytes(as: []))
    #expect(a.sameBytes(as: [HTTPHeader("ab", "c")]))
}

@Test func removeAllEmptiesWithoutTouchingACopy() {
    var fields = HTTPFields(sample)
    let kept = fields
    fields.removeAll(keepingCapacity: true)
    #expect(fields.isEmpty)
    #expect(fields.byteCount == 0)
    #expect(Array(kept) == sample)
}

@Test func invalidUTF8IsReplacedWhenReadAsText() {
    var fields = HTTPFields()
    let name = Array("x-bytes".utf8)
    let value: [UInt8] = [0x61, 0xFF, 0x62]
    name.withUnsafeBufferPointer { name in value.withUnsafeBufferPointer { fields.append(name: name, value: $0) } }
    #expect(fields.value(of: "x-bytes") == "a\u{FFFD}b")
    fields.withUnsafeFields { #expect(Array($0.value(at: 0)) == value) }
}

/// Whether two Strings share one heap storage (a reused value, not an equal copy).
private func sameStorage(_ a: String, _ b: String) -> Bool {
    let a = a.utf8.withContiguousStorageIfAvailable { $0.baseAddress }
    let b = b.utf8.withContiguousStorageIfAvailable { $0.baseAddress }
    return a != nil && a == b
}

@Test func repeatedTextIsTheSameStringWhileTheBytesRepeat() {
    var text = RepeatedText()
    let topic = Array("com.example.app.voip.long".utf8)
    let first = topic.withUnsafeBufferPointer { text.string($0) }
    let again = topic.withUnsafeBufferPointer { text.string($0) }
    #expect(first == "com.example.app.voip.long")
    #expect(sameStorage(first, again))
    #expect(Array("other".utf8).withUnsafeBufferPointer { text.string($0) } == "other")
    // Invalid UTF-8: repaired every time, never mistaken for the replacement's own bytes.
    let invalid: [UInt8] = [0x61, 0xFF, 0x62]
    #expect(invalid.withUnsafeBufferPointer { text.string($0) } == "a\u{FFFD}b")
    #expect(invalid.withUnsafeBufferPointer { text.string($0) } == "a\u{FFFD}b")
    #expect(Array("a\u{FFFD}b".utf8).withUnsafeBufferPointer { text.string($0) } == "a\u{FFFD}b")
}
