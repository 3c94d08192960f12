// The connection's previous header Strings reused by position (RepeatedHeaders): a repeat is
// the same String (the same storage), anything else is made from its own bytes.
import HTTPCore
import Testing
@testable import HTTP2Server

private func header(_ cache: inout RepeatedHeaders, _ position: Int, _ name: String, _ value: [UInt8]) -> HTTPHeader {
    Array(name.utf8).withUnsafeBufferPointer { name in
        value.withUnsafeBufferPointer { value in cache.header(at: position, name: name, value: value) }
    }
}

/// Whether two Strings share one heap storage (a reused value, not an equal copy).
private func sameStorage(_ a: String, _ b: String) -> Bool {
    let a = a.utf8.withContiguousStorageIfAvailable { $0.baseAddress }
    let b = b.utf8.withContiguousStorageIfAvailable { $0.baseAddress }
    return a != nil && a == b
}

@Test func repeatedHeaderIsTheSameStringAndAChangedOneIsNew() {
    var cache = RepeatedHeaders()
    let topic = Array("com.example.app.voip".utf8)
    let first = header(&cache, 0, "apns-topic", topic)
    let again = header(&cache, 0, "apns-topic", topic)
    #expect(again == first)
    #expect(sameStorage(again.value, first.value))

    let changed = header(&cache, 0, "apns-topic", Array("com.example.other.voip".utf8))
    #expect(changed == HTTPHeader("apns-topic", "com.example.other.voip"))
    // The same value under another name is not the same header.
    let renamed = header(&cache, 0, "x-topic", Array("com.example.other.voip".utf8))
    #expect(renamed == HTTPHeader("x-topic", "com.example.other.voip"))
    // Another position does not match position 0's header.
    #expect(header(&cache, 1, "apns-topic", topic) == HTTPHeader("apns-topic", "com.example.app.voip"))
}

@Test func invalidUTF8IsRepairedEveryTimeNeverReusedForOtherBytes() {
    var cache = RepeatedHeaders()
    let invalid: [UInt8] = [0x61, 0xFF, 0x62]
    let first = header(&cache, 0, "x-bytes", invalid)
    #expect(first.value == "a\u{FFFD}b")
    // The repaired String's bytes are not the received ones: made again, equal all the same.
    #expect(header(&cache, 0, "x-bytes", invalid).value == "a\u{FFFD}b")
    // The replacement character's own bytes are a different header value, equal as text.
    #expect(header(&cache, 0, "x-bytes", Array("a\u{FFFD}b".utf8)).value == "a\u{FFFD}b")
}

@Test func pathAndAuthorityAreReusedWhileTheyRepeat() {
    var cache = RepeatedHeaders()
    let path = Array("/3/device/7f3c5d1e9a2b4c6d8e0f1a3b5c7d9e1f2a4b6c8d0e2f4a6b8c0d2e4f6a8b0c2d".utf8)
    let first = path.withUnsafeBufferPointer { cache.path($0) }
    let again = path.withUnsafeBufferPointer { cache.path($0) }
    #expect(again == String(decoding: path, as: UTF8.self))
    #expect(sameStorage(first, again))
    let other = Array("/3/device/00".utf8).withUnsafeBufferPointer { cache.path($0) }
    #expect(other == "/3/device/00")
    #expect(Array("".utf8).withUnsafeBufferPointer { cache.authority($0) } == "")
    #expect(Array("localhost:2197".utf8).withUnsafeBufferPointer { cache.authority($0) } == "localhost:2197")
}

@Test func positionsPastTheLimitAreNotKept() {
    var cache = RepeatedHeaders()
    let position = RepeatedHeaders.positionsKept
    for index in 0...position { _ = header(&cache, index, "x-h\(index)", Array("a-value-over-15-bytes-long".utf8)) }
    let past = header(&cache, position, "x-h\(position)", Array("a-value-over-15-bytes-long".utf8))
    #expect(past == HTTPHeader("x-h\(position)", "a-value-over-15-bytes-long"))
    let kept = header(&cache, position - 1, "x-h\(position - 1)", Array("a-value-over-15-bytes-long".utf8))
    let keptAgain = header(&cache, position - 1, "x-h\(position - 1)", Array("a-value-over-15-bytes-long".utf8))
    #expect(sameStorage(kept.value, keptAgain.value))
}
