import HTTPCore
import JSON
import Testing
@testable import SpecValidator

/// A header rule passes on the field's bytes where they settle it, and reads the value as text
/// otherwise: the verdicts are those of the text comparison either way.
@Suite struct HeaderRuleTests {
    func violations(_ kind: HeaderRule.Kind, optional: Bool = false, _ headers: [(name: String, value: String)]) -> [SpecViolation] {
        let rule = HeaderRule(id: "header:x-rule", name: "x-rule", kind: kind, optional: optional, source: SpecSource(sentence: "test"))
        let request = RequestView(path: "/", headers: HTTPFields(lowercasingNames: headers), body: nil)
        var found: [SpecViolation] = []
        rule.check(request, into: &found)
        return found
    }

    @Test func equalsAndOneOfPassOnEqualBytesAndFailOtherwise() {
        #expect(violations(.equals("voip"), [("x-rule", "voip")]).isEmpty)
        #expect(violations(.equals("voip"), [("x-rule", "VOIP")]).count == 1)
        #expect(violations(.equals("voip"), [("x-other", "voip")]).count == 1)
        #expect(violations(.equals("voip"), optional: true, [("x-other", "voip")]).isEmpty)
        #expect(violations(.oneOf(["5", "10"]), [("x-rule", "10")]).isEmpty)
        #expect(violations(.oneOf(["5", "10"]), [("x-rule", "1")]).count == 1)
        // The first field of the name is the one judged, as the text path reads it.
        #expect(violations(.equals("a"), [("x-rule", "b"), ("x-rule", "a")]).count == 1)
    }

    /// Canonically equivalent text is equal text (String ==), though its bytes differ.
    @Test func canonicallyEquivalentTextStillPasses() {
        #expect(violations(.equals("\u{e9}"), [("x-rule", "e\u{301}")]).isEmpty)
        #expect(violations(.oneOf(["x", "\u{e9}"]), [("x-rule", "e\u{301}")]).isEmpty)
    }

    /// A derived `concat` (the poolse specs' `apns-topic`: a bundle id and `.voip`) passes on
    /// the field's bytes when they spell it; otherwise the text path decides and explains.
    @Test func aDerivedConcatPassesOnTheBytesThatSpellIt() {
        let bundles = SpecExpression.elements(.reference(.constant(.array([.string("com.a"), .string("com.b\u{e9}")]))))
        let topic = HeaderRule.Kind.derived(.concat([bundles, .literal(.string(".voip"))]), tolerance: 0)
        #expect(violations(topic, [("x-rule", "com.a.voip")]).isEmpty)
        #expect(violations(topic, [("x-rule", "com.b\u{e9}.voip")]).isEmpty)
        #expect(violations(topic, [("x-rule", "com.c.voip")]).count == 1)
        #expect(violations(topic, [("x-rule", "com.a")]).count == 1)
        #expect(violations(topic, [("x-rule", "com.a.voip.voip")]).count == 1)
        #expect(violations(topic, [("x-rule", "com.c.voip"), ("x-rule", "com.a.voip")]).count == 1)
        #expect(violations(topic, []).count == 1)
        #expect(violations(topic, optional: true, []).isEmpty)
        // One that reads the request is matched part by part on the bytes.
        let fromHeader = HeaderRule.Kind.derived(.concat([.reference(.header("x-base")), .literal(.string(".voip"))]), tolerance: 0)
        #expect(violations(fromHeader, [("x-base", "com.a"), ("x-rule", "com.a.voip")]).isEmpty)
        #expect(violations(fromHeader, [("x-base", "com.a"), ("x-rule", "com.b.voip")]).count == 1)
        // Bytes that are not UTF-8 spell no part: the text path reads them as before.
        var fields = HTTPFields()
        let bytes: [UInt8] = Array("com.a".utf8) + [0xFF] + Array(".voip".utf8)
        Array("x-rule".utf8).withUnsafeBufferPointer { name in bytes.withUnsafeBufferPointer { fields.append(name: name, value: $0) } }
        let rule = HeaderRule(id: "header:x-rule", name: "x-rule", kind: topic, optional: false, source: SpecSource(sentence: "test"))
        var found: [SpecViolation] = []
        rule.check(RequestView(path: "/", headers: fields, body: nil), into: &found)
        #expect(found.count == 1)
    }

    @Test func presenceAbsenceAndIntegers() {
        #expect(violations(.required, [("x-rule", "")]).isEmpty)
        #expect(violations(.required, []).count == 1)
        #expect(violations(.forbidden, []).isEmpty)
        #expect(violations(.forbidden, [("x-rule", "1")]).count == 1)
        #expect(violations(.integer, [("x-rule", "0123")]).isEmpty)
        #expect(violations(.integer, [("x-rule", "")]).count == 1)
        #expect(violations(.integer, [("x-rule", "-1")]).count == 1)
        #expect(violations(.prefix("com."), [("x-rule", "com.a")]).isEmpty)
        #expect(violations(.suffix(".voip"), [("x-rule", "com.a")]).count == 1)
    }
}
