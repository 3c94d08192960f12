import JSON
@testable import SpecValidator
import Testing

private func schema(_ text: String, options: JSONSchema.Options = .init()) throws -> JSONSchema {
    try JSONSchema(try JSONParser.parse(text), options: options)
}

private func instance(_ text: String) throws -> JSONValue { try JSONParser.parse(text) }

private func compileError(_ text: String, options: JSONSchema.Options = .init()) throws -> SchemaError? {
    let document = try JSONParser.parse(text)
    do {
        _ = try JSONSchema(document, options: options)
        return nil
    } catch {
        return error
    }
}

@Suite("JSONSchema violations")
struct JSONSchemaViolationTests {
    /// `type: integer` tells integers by a conversion below 2^52 and by finiteness above: the
    /// same answer as "finite, and equal to itself rounded toward zero" at and around the edges.
    @Test(arguments: [0.0, -0.0, 1, -1, 1.5, -1.5, 0.1, 4_503_599_627_370_495.5, 4_503_599_627_370_496, 4_503_599_627_370_497,
                      -4_503_599_627_370_496, 9_007_199_254_740_993, 1e300, -1e300, 9.223372036854775807e18, -9.223372036854775808e18,
                      Double.infinity, -Double.infinity, Double.nan, Double.leastNonzeroMagnitude, Double.greatestFiniteMagnitude])
    func integersAreToldAsRoundingTowardZeroTellsThem(_ d: Double) {
        #expect(TypeSet.isIntegral(d) == (d.isFinite && d.rounded(.towardZero) == d), "\(d)")
    }

    @Test func constViolationNamesBothLocationsAndValues() throws {
        let s = try schema(##"{"properties": {"cv": {"const": "1"}}}"##)
        let violations = s.validate(try instance(##"{"cv": 1}"##))
        #expect(violations == [SchemaViolation(
            instanceLocation: JSONPointer("/cv")!, keywordLocation: JSONPointer("/properties/cv/const")!,
            keyword: "const", message: ##"expected "1", found 1"##)])
        #expect(!s.isValid(try instance(##"{"cv": 1}"##)))
        #expect(s.validate(try instance(##"{"cv": "1"}"##)).isEmpty)
    }

    @Test func keywordLocationFollowsRefs() throws {
        let s = try schema(##"{"$defs": {"count": {"type": "integer"}}, "properties": {"badge": {"$ref": "#/$defs/count"}}}"##)
        let violations = s.validate(try instance(##"{"badge": "3"}"##))
        #expect(violations.count == 1)
        #expect(violations.first?.keywordLocation.description == "/properties/badge/$ref/type")
        #expect(violations.first?.schemaLocation.description == "/$defs/count/type")
        #expect(violations.first?.instanceLocation.description == "/badge")
        #expect(violations.first?.keyword == "type")
    }

    @Test func everyViolationIsCollectedButIsValidStopsEarly() throws {
        let s = try schema(##"{"type": "object", "required": ["aps", "token"], "properties": {"ttl": {"minimum": 0}}}"##)
        let bad = try instance(##"{"ttl": -1}"##)
        let violations = s.validate(bad)
        #expect(violations.map(\.keyword).sorted() == ["minimum", "required", "required"])
        #expect(violations.filter { $0.keyword == "required" }.map(\.message) == [
            ##"missing required property "aps""##, ##"missing required property "token""##,
        ])
        #expect(!s.isValid(bad))
    }

    @Test func additionalPropertiesFalseNamesTheProperty() throws {
        let s = try schema(##"{"properties": {"a": {}}, "additionalProperties": false}"##)
        let violations = s.validate(try instance(##"{"a": 1, "extra": 2}"##))
        #expect(violations.count == 1)
        #expect(violations.first?.instanceLocation.description == "/extra")
        #expect(violations.first?.keywordLocation.description == "/additionalProperties")
        #expect(violations.first?.schemaLocation.description == "/additionalProperties")
        #expect(violations.first?.keyword == "additionalProperties")
        #expect(violations.first?.message == ##"property "extra" is not allowed"##)
    }

    @Test func arrayItemsAreLocatedByIndex() throws {
        let s = try schema(##"{"items": {"type": "string"}}"##)
        let violations = s.validate(try instance(##"["a", 2, "c", null]"##))
        #expect(violations.map(\.instanceLocation.description) == ["/1", "/3"])
        #expect(violations.map(\.keywordLocation.description) == ["/items/type", "/items/type"])
    }

    @Test func combinatorsReportOnceAtTheKeyword() throws {
        let s = try schema(##"{"oneOf": [{"type": "integer"}, {"minimum": 2}]}"##)
        #expect(s.isValid(1))
        #expect(s.isValid(2.5))
        let both = s.validate(3)
        #expect(both.map(\.keyword) == ["oneOf"])
        #expect(both.first?.message.contains("[0, 1]") == true)
        let anyOf = try schema(##"{"anyOf": [{"type": "string"}, {"type": "null"}]}"##)
        #expect(anyOf.validate(1).map(\.keywordLocation.description) == ["/anyOf"])
        let not = try schema(##"{"not": {"type": "string"}}"##)
        #expect(not.validate("x").map(\.keyword) == ["not"])
    }

    @Test func failedAnyOfExplainsTheClosestBranch() throws {
        let s = try schema(##"{"properties": {"alert": {"anyOf": [{"type": "string"}, {"type": "object", "properties": {"title": {"type": "string"}}}]}}}"##)
        let violations = s.validate(try instance(##"{"alert": {"title": 3}}"##))
        #expect(violations.count == 1)
        let violation = try #require(violations.first)
        #expect(violation.keywordLocation.description == "/properties/alert/anyOf")
        #expect(violation.instanceLocation.description == "/alert")
        #expect(violation.message.contains("closest: /alert/title: expected string, found number 3 [/properties/alert/anyOf/1/properties/title/type]"))
    }

    @Test func lengthsCountCodePointsNotBytesOrGraphemes() throws {
        let one = try schema(##"{"maxLength": 1, "minLength": 1}"##)
        #expect(one.isValid("😀"))                    // 4 UTF-8 bytes, 1 code point
        #expect(!one.isValid("e\u{301}"))            // 1 grapheme, 2 code points
        #expect(one.validate("ab").first?.message == "expected at most 1 characters, found 2")
        #expect(!one.isValid(""))
    }

    @Test func propertyNamesSharingLongPrefixesAreTellApart() throws {
        let s = try schema(##"{"properties": {"apns-collapse-id": {"type": "string"}, "apns-collapse-ix": {"type": "integer"}, "\u00e9": {"const": 1}}}"##)
        #expect(s.isValid(try instance(##"{"apns-collapse-id": "a", "apns-collapse-ix": 2}"##)))
        #expect(s.validate(try instance(##"{"apns-collapse-id": 1}"##)).map(\.keywordLocation.description) == ["/properties/apns-collapse-id/type"])
        #expect(s.validate(try instance(##"{"apns-collapse-ix": "a"}"##)).map(\.keywordLocation.description) == ["/properties/apns-collapse-ix/type"])
        #expect(!s.isValid(.object(["\u{e9}": 2])))
        #expect(s.isValid(.object(["e\u{301}": 2])))   // a different name by code points
    }

    @Test func stringEqualityIsByCodePoints() throws {
        let s = try schema(##"{"enum": ["\u00e9"]}"##)
        #expect(s.isValid("\u{e9}"))
        #expect(!s.isValid("e\u{301}"))
    }

    @Test func multipleOfToleratesBinaryFloatingPoint() throws {
        let cents = try schema(##"{"multipleOf": 0.01}"##)
        #expect(cents.isValid(19.99))
        #expect(cents.isValid(0.07))
        #expect(!cents.isValid(0.075))
        let integers = try schema(##"{"multipleOf": 3}"##)
        #expect(integers.isValid(9))
        #expect(!integers.isValid(10))
        #expect(!integers.isValid(1e308))   // the double 1e308 is an integer ≡ 2 (mod 3)
        #expect(integers.isValid(1e300))    // ≡ 0 (mod 3)
    }

    @Test func unevaluatedPropertiesSeesThroughRefsAndAllOf() throws {
        let s = try schema(##"""
            {"$defs": {"base": {"properties": {"id": {"type": "string"}}}},
             "allOf": [{"$ref": "#/$defs/base"}],
             "properties": {"name": {}},
             "unevaluatedProperties": false}
            """##)
        #expect(s.isValid(try instance(##"{"id": "a", "name": "b"}"##)))
        let violations = s.validate(try instance(##"{"id": "a", "other": 1}"##))
        #expect(violations.map(\.instanceLocation.description) == ["/other"])
        #expect(violations.map(\.keyword) == ["unevaluatedProperties"])
    }

    @Test func recursiveSchemaValidatesTrees() throws {
        let s = try schema(##"{"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#"}}, "name": {"type": "string"}}}"##)
        #expect(s.isValid(try instance(##"{"name": "a", "children": [{"name": "b", "children": []}]}"##)))
        let violations = s.validate(try instance(##"{"children": [{"children": [{"name": 3}]}]}"##))
        #expect(violations.map(\.instanceLocation.description) == ["/children/0/children/0/name"])
        #expect(violations.first?.keywordLocation.description
                == "/properties/children/items/$ref/properties/children/items/$ref/properties/name/type")
        #expect(violations.first?.schemaLocation.description == "/properties/name/type")
    }

    @Test func validationAgreesWithIsValidAcrossThreads() async throws {
        let s = try schema(##"{"properties": {"token": {"pattern": "^[0-9a-f]{64}$"}, "name": {"pattern": "^\\p{Letter}+$"}}}"##)
        let good = JSONValue.object(["token": .string(String(repeating: "ab", count: 32)), "name": "Zoë"])
        let bad = JSONValue.object(["token": "xyz", "name": "42"])
        let results = await withTaskGroup(of: Bool.self) { group in
            for i in 0..<64 {
                group.addTask { i.isMultiple(of: 2) ? s.isValid(good) : (s.validate(bad).count == 2 && !s.isValid(bad)) }
            }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(results.count == 64)
        #expect(results.allSatisfy { $0 })
    }
}

@Suite("JSONSchema compile errors")
struct JSONSchemaCompileErrorTests {
    @Test func strictModeRejectsUnknownKeywordsWithTheirPointer() throws {
        let text = ##"{"properties": {"aps": {"type": "object", "requried": ["alert"]}}}"##
        let error = try #require(try compileError(text, options: .init(strict: true)))
        #expect(error.pointer.description == "/properties/aps/requried")
        #expect(error.message.contains("unknown keyword"))
        // Lenient mode ignores it, as 2020-12 says for unknown keywords.
        #expect(try compileError(text) == nil)
    }

    @Test func strictModeAcceptsRegisteredExtensionsAndAnnotations() throws {
        let text = ##"{"title": "t", "x-derived": "hash", "format": "uri", "default": 1, "$comment": "c"}"##
        #expect(try compileError(text, options: .init(strict: true, extensionKeywords: ["x-derived"])) == nil)
        #expect(try compileError(text, options: .init(strict: true))?.pointer.description == "/x-derived")
    }

    @Test func strictModeRejectsOtherDrafts() throws {
        let draft7 = ##"{"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"}"##
        #expect(try compileError(draft7, options: .init(strict: true))?.pointer.description == "/$schema")
        #expect(try compileError(draft7) == nil)
        let current = ##"{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object"}"##
        #expect(try compileError(current, options: .init(strict: true)) == nil)
    }

    @Test func wrongKeywordTypesAreNamed() throws {
        #expect(try compileError(##"{"minLength": "3"}"##)?.pointer.description == "/minLength")
        #expect(try compileError(##"{"maxItems": -1}"##)?.pointer.description == "/maxItems")
        #expect(try compileError(##"{"type": "strin"}"##)?.pointer.description == "/type")
        #expect(try compileError(##"{"required": [1]}"##)?.pointer.description == "/required/0")
        #expect(try compileError(##"{"properties": {"a": 3}}"##)?.pointer.description == "/properties/a")
        #expect(try compileError(##"{"allOf": []}"##)?.pointer.description == "/allOf")
        #expect(try compileError(##"{"multipleOf": 0}"##)?.pointer.description == "/multipleOf")
        #expect(try compileError("3")?.pointer.description == "")
    }

    @Test func badRegexIsReportedAtThePattern() throws {
        let error = try #require(try compileError(##"{"properties": {"id": {"pattern": "(unclosed"}}}"##))
        #expect(error.pointer.description == "/properties/id/pattern")
        #expect(error.message.contains("(unclosed"))
        #expect(try compileError(##"{"patternProperties": {"[a-": {}}}"##)?.pointer.description == "/patternProperties/[a-")
    }

    @Test func unresolvableRefsAreReported() throws {
        #expect(try compileError(##"{"properties": {"a": {"$ref": "#/$defs/missing"}}}"##)?.pointer.description == "/properties/a/$ref")
        #expect(try compileError(##"{"$ref": "https://example.com/other.json"}"##)?.message.contains("unresolvable") == true)
        #expect(try compileError(##"{"$ref": "#nowhere"}"##)?.pointer.description == "/$ref")
    }

    @Test func refsToGivenRemoteDocumentsResolveAndAreLocatedThere() throws {
        let remote = try instance(##"{"$defs": {"code": {"type": "string", "maxLength": 3}}}"##)
        let options = JSONSchema.Options(remoteDocuments: ["https://example.com/other.json": remote])
        let s = try schema(##"{"properties": {"c": {"$ref": "https://example.com/other.json#/$defs/code"}}}"##, options: options)
        #expect(s.isValid(try instance(##"{"c": "abc"}"##)))
        let violations = s.validate(try instance(##"{"c": "abcd"}"##))
        #expect(violations.map(\.keyword) == ["maxLength"])
        #expect(violations.first?.schemaDocument == "https://example.com/other.json")
        #expect(violations.first?.schemaLocation.description == "/$defs/code/maxLength")
        #expect(violations.first?.schemaLocation.resolve(in: remote) != nil)
        // A document that is not given stays unresolvable: nothing is fetched.
        #expect(try compileError(##"{"$ref": "https://example.com/third.json"}"##, options: options)?.message.contains("unresolvable") == true)
        let broken = JSONSchema.Options(remoteDocuments: ["https://example.com/other.json": .string("not a schema")])
        #expect(try compileError(##"{"$ref": "https://example.com/other.json"}"##, options: broken)?.message.contains("does not compile") == true)
    }

    @Test func refCyclesThatNeverDescendAreRejected() throws {
        #expect(try compileError(##"{"$ref": "#"}"##) != nil)
        #expect(try compileError(##"{"$defs": {"a": {"allOf": [{"$ref": "#/$defs/b"}]}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}"##) != nil)
        // Recursion through properties moves into the instance, so it terminates.
        #expect(try compileError(##"{"properties": {"next": {"$ref": "#"}}}"##) == nil)
    }

    @Test func draft2019RecursiveRefIsRefusedRatherThanIgnored() throws {
        #expect(try compileError(##"{"items": {"$recursiveRef": "#"}}"##)?.pointer.description == "/items/$recursiveRef")
        #expect(try compileError(##"{"$dynamicRef": "#/$defs/missing"}"##)?.pointer.description == "/$dynamicRef")
    }

    @Test func errorDescriptionCarriesPointerAndReason() throws {
        let error = try #require(try compileError(##"{"minLength": true}"##))
        #expect(error.description == "schema error at /minLength: must be a non-negative integer, found true")
    }
}

@Suite("JSONSchema pattern (PCRE2, ECMA-262 semantics)")
struct JSONSchemaPatternTests {
    struct Case: CustomTestStringConvertible, Sendable {
        var pattern: String
        var string: String
        var matches: Bool
        var testDescription: String { "/\(pattern)/ on \(string.debugDescription): \(matches)" }
    }

    /// ECMA-262 (no flags) as JSON Schema means it; each row is a place PCRE2's defaults differ
    /// or the engine this replaced (POSIX ERE plus Swift Regex) needed care.
    static let cases: [Case] = [
        Case(pattern: "^[0-9a-f]{64}$", string: String(repeating: "ab", count: 32), matches: true),
        Case(pattern: "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$",
             string: "123e4567-e89b-12d3-a456-426614174000", matches: true),
        Case(pattern: "^.{2,4}$", string: "ππ", matches: true),                 // code points, not bytes
        Case(pattern: "^.{2,4}$", string: "a", matches: false),
        Case(pattern: "^a*$", string: "aaa\n", matches: false),                  // `$` only at the very end
        Case(pattern: "^a*$", string: "aaa", matches: true),
        Case(pattern: "^.$", string: "\n", matches: false),                      // `.` stops at line terminators
        Case(pattern: "^.$", string: "\r", matches: false),
        Case(pattern: "^.$", string: "\u{2028}", matches: false),
        Case(pattern: "^.$", string: "π", matches: true),
        Case(pattern: "^[.]$", string: "x", matches: false),
        Case(pattern: "^\\.$", string: ".", matches: true),
        Case(pattern: "\\s", string: "\u{A0}", matches: true),                   // ECMA-262 \s is Unicode
        Case(pattern: "\\s", string: "\u{FEFF}", matches: true),
        Case(pattern: "[\\s]", string: "\u{2003}", matches: true),
        Case(pattern: "^\\S+$", string: "a\u{A0}", matches: false),
        Case(pattern: "\\s", string: "a", matches: false),
        Case(pattern: "\\d", string: "\u{663}", matches: false),                 // \d \w ASCII only
        Case(pattern: "\\w", string: "é", matches: false),
        Case(pattern: "\\bword\\b", string: "a word here", matches: true),
        Case(pattern: "\\bword\\b", string: "swordfish", matches: false),
        Case(pattern: "^\\p{Letter}+$", string: "héllo", matches: true),
        Case(pattern: "^\\p{L}+$", string: "h3llo", matches: false),
        Case(pattern: "(a)\\1", string: "aa", matches: true),
        Case(pattern: "(?=a)a", string: "a", matches: true),
        Case(pattern: "(?<!b)a", string: "ba", matches: false),
        Case(pattern: "^\\u0041$", string: "A", matches: true),                   // ECMA-262 \u escapes
        Case(pattern: "^\\u{1F600}$", string: "😀", matches: true),
        Case(pattern: "[]", string: "a", matches: false),                       // [] matches nothing
        Case(pattern: "^[^]$", string: "\n", matches: true),                     // [^] anything
        Case(pattern: "^[\\]a-]$", string: "]", matches: true),
        Case(pattern: "^a{,3}$", string: "a{,3}", matches: true),               // not a quantifier in ECMA-262
        Case(pattern: "é+", string: "ééé", matches: true),
        Case(pattern: "a", string: "xa\u{0}b", matches: true),                   // a NUL does not end the string
        Case(pattern: "b$", string: "a\u{0}b", matches: true),
    ]

    @Test(arguments: cases)
    func matchesAsECMA262(_ c: Case) throws {
        let pattern = try CompiledPattern(c.pattern)
        #expect(pattern.matches(c.string) == c.matches)
        var bytes = Array(c.string.utf8)
        #expect(bytes.withUnsafeMutableBufferPointer { pattern.matches(utf8: UnsafeBufferPointer($0)) } == c.matches)
    }

    @Test func dollarAnchorsAtTheEndOnly() throws {
        // ECMA-262 without the m flag: `$` does not match before a final newline.
        let pattern = try CompiledPattern("^a*$")
        #expect(!pattern.matches("aaa\n"))
        #expect(pattern.matches("aaa"))
    }

    @Test func aBadPatternSaysWhereAndWhy() throws {
        #expect(throws: PatternError.self) { try CompiledPattern("[a-") }
        do {
            _ = try CompiledPattern("(a")
            Issue.record("compiled")
        } catch {
            #expect(error.description.contains("missing closing parenthesis"), "\(error)")
        }
    }

    /// Issue 9, row 9: nested quantifiers on 41 characters ran for over a minute. The match
    /// limit stops it within milliseconds; the bound here is generous (5 s) but finite.
    @Test func catastrophicBacktrackingIsAbandonedQuickly() throws {
        let pattern = try CompiledPattern("^(?=(a+)+$)")
        let hostile = String(repeating: "a", count: 40) + "!"
        let started = ContinuousClock.now
        guard case .abandoned(let why) = pattern.search(hostile) else {
            Issue.record("expected the match limit to stop the search")
            return
        }
        #expect(ContinuousClock.now - started < .seconds(5))
        #expect(why.contains("(a+)+"), "\(why)")
        // Through a schema: one violation that says so, on the tree and on the tape alike.
        let schema = try JSONSchema(JSONParser.parse(#"{"properties": {"id": {"pattern": "^(?=(a+)+$)"}}}"#))
        let document = try JSONParser.parse(#"{"id": ""# + hostile + #""}"#)
        let violations = schema.validate(document)
        #expect(violations.count == 1)
        #expect(violations.first?.message.contains("gave up") == true, "\(violations)")
        #expect(!schema.isValid(document))
        #expect(!schema.isValid(try #require(JSONParser.tape(document.bytes()))))
        // Ordinary strings still match.
        #expect(pattern.search("aaaa") == .matched)
    }
}

@Suite("specs lint: nested quantifiers")
struct NestedQuantifierTests {
    @Test(arguments: ["(a+)+", "^(?=(a+)+$)", "(a*)*", "(\\s*\\w+)*$", "^(?:[a-z]+){2,}$", "((ab)+)+", "(a+|b+)+"])
    func reported(_ source: String) {
        #expect(CompiledPattern.nestsQuantifiers(source))
    }

    @Test(arguments: ["^[a-z]+(-[a-z]+)*$", "^(?:[a-z0-9-]+\\.)+[a-z]{2,}$", "^[0-9a-f]{64}$", "(ab)+", "(a+)?", "(a{2})+",
                      "[(a+)+]", "\\(a+\\)+", "^(a+)b$"])
    func notReported(_ source: String) {
        #expect(!CompiledPattern.nestsQuantifiers(source))
    }
}
