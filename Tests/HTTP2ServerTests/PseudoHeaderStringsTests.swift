// The pseudo-headers as Strings (PseudoHeaderStrings): the common methods and schemes are the
// static words, a repeated path or authority is the same String (the same storage), anything
// else is made from its own bytes.
import HTTPCore
import Testing
@testable import HTTP2Server

/// Whether two Strings share one heap storage (a reused value, not an equal copy).
private func sameStorage(_ a: String, _ b: String) -> Bool {
    let a = a.utf8.withContiguousStorageIfAvailable { $0.baseAddress }
    let b = b.utf8.withContiguousStorageIfAvailable { $0.baseAddress }
    return a != nil && a == b
}

private func bytes<R>(_ text: String, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
    Array(text.utf8).withUnsafeBufferPointer(body)
}

@Test(arguments: ["GET", "PUT", "POST", "HEAD", "PATCH", "DELETE", "OPTIONS", "CONNECT", "BREW", "post", "POSTS", ""])
func methodIsItsBytes(_ method: String) {
    let cache = PseudoHeaderStrings()
    #expect(bytes(method) { cache.method($0) } == method)
}

@Test(arguments: ["https", "http", "HTTPS", "ftp", ""])
func schemeIsItsBytes(_ scheme: String) {
    let cache = PseudoHeaderStrings()
    #expect(bytes(scheme) { cache.scheme($0) } == scheme)
}

@Test func pathAndAuthorityAreReusedWhileTheyRepeat() {
    var cache = PseudoHeaderStrings()
    let path = "/3/device/7f3c5d1e9a2b4c6d8e0f1a3b5c7d9e1f2a4b6c8d0e2f4a6b8c0d2e4f6a8b0c2d"
    let first = bytes(path) { cache.path($0) }
    let again = bytes(path) { cache.path($0) }
    #expect(again == path)
    #expect(sameStorage(first, again))
    #expect(bytes("/3/device/00") { cache.path($0) } == "/3/device/00")
    #expect(bytes("") { cache.authority($0) } == "")
    #expect(bytes("localhost:2197") { cache.authority($0) } == "localhost:2197")
}
