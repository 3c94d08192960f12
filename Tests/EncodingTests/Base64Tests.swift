import Testing
@testable import Encoding

@Suite struct Base64URLTests {
    @Test(arguments: [
        ([UInt8](), ""),
        ([0x66], "Zg"),
        ([0x66, 0x6F], "Zm8"),
        ([0x66, 0x6F, 0x6F], "Zm9v"),
        (Array("foobar".utf8), "Zm9vYmFy"),
        ([0xFB, 0xFF, 0xBF], "-_-_"),   // the two characters that differ from plain base64
        ([0x00, 0x00, 0x00, 0x00], "AAAAAA"),
    ])
    func encodesWithoutPadding(bytes: [UInt8], expected: String) {
        #expect(Base64URL.encode(bytes) == expected)
        #expect(Base64URL.decode(expected) == bytes)
    }

    @Test func acceptsCorrectPadding() {
        #expect(Base64URL.decode("Zg==") == [0x66])
        #expect(Base64URL.decode("Zm8=") == [0x66, 0x6F])
    }

    @Test(arguments: [
        "Zg=",        // padding that does not complete a quantum
        "Zg===",      // too much padding
        "Z===",
        "====",
        "Zm9v=",
        "Z",          // one character left over cannot encode a byte
        "Zm9vY",
        "Zm+v",       // plain-base64 characters
        "Zm/v",
        "Zm 9v",      // whitespace
        "Zm9v\n",
        "Zh",         // non-zero unused bits (canonical form is "Zg")
        "Zm9",        // canonical form is "Zm8"
        "Zm8=Zm8=",   // padding in the middle
        "é",
    ])
    func rejectsInvalid(text: String) {
        #expect(Base64URL.decode(text) == nil)
    }

    @Test func roundTripsEveryLengthAndByte() {
        var bytes: [UInt8] = []
        for length in 0 ..< 300 {
            bytes.append(UInt8(truncatingIfNeeded: length &* 37 &+ 11))
            let encoded = Base64URL.encode(bytes)
            #expect(!encoded.contains("="))
            #expect(Base64URL.decode(encoded) == bytes)
            #expect(Base64URL.decode(bytes: Array(encoded.utf8)) == bytes)
        }
    }

    @Test func decodesSubstringsAndNonContiguousCollections() {
        let text = "xx.Zm9vYmFy.yy"
        let middle = text.split(separator: ".")[1]
        #expect(Base64URL.decode(middle) == Array("foobar".utf8))
        #expect(Base64URL.encode(Array("foobar".utf8).lazy.map { $0 }) == "Zm9vYmFy")
        #expect(Base64URL.decode(bytes: "Zm9vYmFy".utf8.lazy.map { $0 }) == Array("foobar".utf8))
    }
}

@Suite struct Base64StandardTests {
    @Test(arguments: [("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="), ("fooba", "Zm9vYmE="), ("foobar", "Zm9vYmFy")])
    func rfc4648Vectors(plain: String, encoded: String) {
        #expect(Base64.standard.encode(Array(plain.utf8)) == encoded)
        #expect(Base64.standard.decode(encoded) == Array(plain.utf8))
    }

    @Test func theAlphabetsDifferInTwoCharacters() {
        let bytes: [UInt8] = [0xFB, 0xFF, 0xBF]
        #expect(Base64.standard.encode(bytes) == "+/+/")
        #expect(Base64.url.encode(bytes) == "-_-_")
        #expect(Base64.standard.decode("-_-_") == nil)
        #expect(Base64.url.decode("+/+/") == nil)
    }

    @Test func everyByteRoundTrips() {
        let bytes = (0...255).map(UInt8.init)
        for count in 0...bytes.count {
            #expect(Base64.standard.decode(Base64.standard.encode(bytes.prefix(count))) == Array(bytes.prefix(count)))
        }
    }
}
