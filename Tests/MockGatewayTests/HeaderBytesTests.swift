// The APNs checks read header values as bytes: each reading must say what the String-based
// one it replaced said (`Int(_:)` for apns-priority, the digit rule for apns-expiration), and
// `APNSService.Headers` must find the same fields, duplicates and push types.
import HTTPCore
import PushModel
import PushproofTestSupport
import Testing
@testable import MockGateway

private func onBytes<R>(_ text: String, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
    Array(text.utf8).withUnsafeBufferPointer(body)
}

@Suite struct HeaderBytesTests {
    static let edgeCases = ["", "0", "10", "5", "1", "+10", "-1", "-", "+", "+-1", "010", " 10", "10 ", "1 0", "1e1", "0x10",
                            "9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
                            "99999999999999999999", "١٠", "10\u{0}", "１０"]

    @Test func priorityIsReadAsIntReadsIt() {
        for text in Self.edgeCases { #expect(onBytes(text) { decimalInteger($0) } == Int(text), "\(text)") }
        var random = SplitMix64(seed: 13)
        let alphabet = Array("0123456789+- x".utf8)
        for _ in 0..<5000 {
            let length = Int(random.next() % 22)
            let text = String(decoding: (0..<length).map { _ in alphabet[Int(random.next() % UInt64(alphabet.count))] }, as: UTF8.self)
            #expect(onBytes(text) { decimalInteger($0) } == Int(text), "\(text)")
        }
    }

    @Test func expirationIsAnIntegerAsBefore() {
        func reference(_ text: String) -> Bool {
            var digits = Substring(text).utf8
            if digits.first == UInt8(ascii: "-") { digits = digits.dropFirst() }
            return !digits.isEmpty && digits.count <= 19 && digits.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
        }
        for text in Self.edgeCases + ["1234567890123456789", "12345678901234567890", "-1234567890123456789"] {
            #expect(onBytes(text) { isInteger($0) } == reference(text), "\(text)")
        }
    }

    @Test func headersFindTheirFieldsDuplicatesAndPushTypes() {
        var texts = APNSService.HeaderTexts()
        let plain = APNSService.Headers([HTTPHeader("apns-topic", "com.x.voip"), HTTPHeader("apns-push-type", "voip"),
                                         HTTPHeader("apns-priority", "+10"), HTTPHeader("apns-expiration", "0"),
                                         HTTPHeader("apns-collapse-id", "é"), HTTPHeader("authorization", "bearer t"),
                                         HTTPHeader("apns-id", "123e4567-e89b-12d3-a456-426614174000"),
                                         HTTPHeader("x-other", "1")], texts: &texts)
        #expect(!plain.duplicate)
        #expect(plain.topic == "com.x.voip")
        #expect(plain.pushType == .known(.voip))
        #expect(plain.priority == .some(10))
        #expect(!plain.expirationIsMalformed)
        #expect(plain.collapseIDBytes == 2)
        #expect(plain.authorization == "bearer t")
        #expect(plain.id == "123e4567-e89b-12d3-a456-426614174000")

        let odd = APNSService.Headers([HTTPHeader("apns-push-type", "VoIP"), HTTPHeader("apns-priority", "ten"),
                                       HTTPHeader("apns-expiration", "soon")], texts: &texts)
        #expect(odd.pushType == .unknown)
        #expect(odd.priority == .some(nil))
        #expect(odd.expirationIsMalformed)
        #expect(odd.topic == nil && odd.collapseIDBytes == nil && odd.authorization == nil)

        for pushType in ["alert", "background", "voip", "complication", "fileprovider", "location", "liveactivity",
                         "pushtotalk", "widgets", "controls", "mdm"] {
            let headers = APNSService.Headers([HTTPHeader("apns-push-type", pushType)], texts: &texts)
            #expect(headers.pushType == .known(APNSPushType(rawValue: pushType)!), "\(pushType)")
        }
        for repeated in ["apns-topic", "authorization", "apns-id", "apns-unique-id", "apns-future"] {
            let headers = APNSService.Headers([HTTPHeader(repeated, "a"), HTTPHeader("x", "y"), HTTPHeader(repeated, "a")], texts: &texts)
            #expect(headers.duplicate, "\(repeated)")
        }
        // Only apns-* and authorization count: another header may repeat.
        #expect(!APNSService.Headers([HTTPHeader("x-trace", "1"), HTTPHeader("x-trace", "2")], texts: &texts).duplicate)
    }
}
