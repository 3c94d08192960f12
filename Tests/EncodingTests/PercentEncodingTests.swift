import Encoding
import Testing

@Suite struct PercentEncodingTests {
    private func decoded(_ text: String, plusIsSpace: Bool = false, lenient: Bool = false) -> String? {
        PercentEncoding.decode(text.utf8, plusIsSpace: plusIsSpace, lenient: lenient).map { String(decoding: $0, as: UTF8.self) }
    }

    @Test func escapesAreDecodedInEitherCase() {
        #expect(decoded("a%20b%2Fc%2fd") == "a b/c/d")
        #expect(decoded("%E2%82%AC") == "€")
        #expect(decoded("a+b") == "a+b", "a plus is a plus outside forms")
        #expect(decoded("a+b", plusIsSpace: true) == "a b")
    }

    @Test func aBadEscapeIsAnErrorUnlessLenient() {
        for text in ["%", "%2", "%zz", "abc%"] {
            #expect(decoded(text) == nil, "\(text)")
            #expect(decoded(text, lenient: true) == text, "\(text)")
        }
        #expect(decoded("100%+sure", plusIsSpace: true, lenient: true) == "100% sure")
    }
}
