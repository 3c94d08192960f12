import JSON
#if canImport(Glibc)
import Glibc
#endif

/// An ECMA-262 `pattern` (2020-12 validation §6.3.3), compiled once. Matching is an
/// unanchored search over Unicode code points, with `\d` and `\w` ASCII-only as in ECMA-262.
///
/// Two engines, chosen per pattern at compile time. Measured in release, a UUID pattern on a
/// 36-character string: Swift `Regex` ~2.5 µs per match (half the 5 µs budget for a whole
/// push payload), glibc `regexec` ~0.5 µs. POSIX ERE cannot express all of
/// ECMA-262 (`\p{Letter}`, lookahead, backreferences, `\s` with its Unicode spaces), so only
/// patterns that translate to ERE with the same meaning go to `regexec`; every other pattern
/// uses Swift `Regex`. A match-or-not answer does not depend on greedy versus lazy, or on
/// leftmost-longest versus backtracking, so those differences do not matter here.
///
/// `regexec` works on bytes (the C locale) where ECMA-262 works on code points: the two agree
/// for ASCII classes and literals (a UTF-8 multi-byte sequence never matches them), but `.`
/// and negated classes would consume one byte of a multi-byte character. Patterns with those
/// go to `regexec` only for ASCII strings.
final class CompiledPattern: @unchecked Sendable {
    // @unchecked: both engines are immutable after init. `Regex<AnyRegexOutput>` is a value
    // never mutated, not declared Sendable only because its output type is existential; glibc's
    // `regexec` takes the compiled DFA's internal lock (`dfa->lock` in posix/regexec.c), which
    // makes concurrent matches on one `regex_t` safe.
    let source: String
    private let swiftRegex: Regex<AnyRegexOutput>
    #if canImport(Glibc)
    private let posix: UnsafeMutablePointer<regex_t>?
    /// `.` or a negated class: bytes and code points differ on non-ASCII strings.
    private let posixNeedsASCII: Bool
    #endif

    init(_ source: String) throws {
        self.source = source
        swiftRegex = try Regex(source)
            .matchingSemantics(.unicodeScalar)
            .asciiOnlyDigits()
            .asciiOnlyWordCharacters()
            .wordBoundaryKind(.simple)   // ECMA-262 \b: between \w and \W, not UAX #29 words
        #if canImport(Glibc)
        if let translation = PosixTranslation(ecma: source) {
            let compiled = UnsafeMutablePointer<regex_t>.allocate(capacity: 1)
            if regcomp(compiled, translation.pattern, REG_EXTENDED | REG_NOSUB) == 0 {
                posix = compiled
            } else {
                compiled.deallocate()
                posix = nil
            }
            posixNeedsASCII = translation.needsASCII
        } else {
            posix = nil
            posixNeedsASCII = false
        }
        #endif
    }

    deinit {
        #if canImport(Glibc)
        if let posix {
            regfree(posix)
            posix.deallocate()
        }
        #endif
    }

    /// Whether the fast engine handles this pattern (for tests and diagnostics).
    var usesPosix: Bool {
        #if canImport(Glibc)
        posix != nil
        #else
        false
        #endif
    }

    func matches(_ string: String) -> Bool {
        #if canImport(Glibc)
        if let posix, !posixNeedsASCII || string.utf8.allSatisfy({ $0 < 0x80 }) {
            return Self.posixSearch(posix, string)
        }
        #endif
        return matchesUsingSwiftRegex(string)
    }

    /// `matches` on a string's UTF-8 bytes (valid UTF-8): no String when `regexec` takes it.
    func matches(utf8 bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        #if canImport(Glibc)
        if let posix, !posixNeedsASCII || UTF8Check.isASCII(bytes) {
            return Self.posixSearch(posix, bytes)
        }
        #endif
        return matchesUsingSwiftRegex(String(decoding: bytes, as: UTF8.self))
    }

    func matchesUsingSwiftRegex(_ string: String) -> Bool {
        (try? swiftRegex.firstMatch(in: string)) != nil
    }

    #if canImport(Glibc)
    private static func posixSearch(_ regex: UnsafeMutablePointer<regex_t>, _ string: String) -> Bool {
        var string = string
        return string.withUTF8 { posixSearch(regex, $0) }
    }

    private static func posixSearch(_ regex: UnsafeMutablePointer<regex_t>, _ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        // REG_STARTEND bounds the search by length, so a "\u0000" inside the string does not end it.
        var range = regmatch_t(rm_so: 0, rm_eo: regoff_t(bytes.count))
        guard let base = bytes.baseAddress else {
            var empty: CChar = 0
            return regexec(regex, &empty, 1, &range, REG_STARTEND) == 0
        }
        return base.withMemoryRebound(to: CChar.self, capacity: bytes.count) { chars in
            regexec(regex, chars, 1, &range, REG_STARTEND) == 0
        }
    }
    #endif
}

/// A conservative ECMA-262 → POSIX ERE translation: nil whenever the pattern uses anything
/// whose meaning could differ (then Swift `Regex` runs it).
struct PosixTranslation {
    var pattern: String
    var needsASCII: Bool

    init?(ecma source: String) {
        var out = ""
        var needsASCII = false
        let chars = Array(source.unicodeScalars)
        var i = 0
        // Whether the previous token can take a quantifier (ERE rejects `(*` and `^*`).
        var quantifiable = false
        func isDigit(_ c: Unicode.Scalar) -> Bool { ("0"..."9").contains(c) }

        while i < chars.count {
            let c = chars[i]
            guard c.isASCII, c.value >= 0x20 else { return nil }
            switch c {
            case "\\":
                guard i + 1 < chars.count else { return nil }
                let e = chars[i + 1]
                i += 2
                switch e {
                case "d": out += "[0-9]"
                case "D": out += "[^0-9]"; needsASCII = true
                case "w": out += "[A-Za-z0-9_]"
                case "W": out += "[^A-Za-z0-9_]"; needsASCII = true
                default:
                    guard let literal = Self.escapedLiteral(e) else { return nil }
                    out += Self.literal(literal)
                }
                quantifiable = true
                continue
            case "[":
                guard let (bracket, negated, next) = Self.bracket(chars, from: i) else { return nil }
                out += bracket
                if negated { needsASCII = true }
                i = next
                quantifiable = true
                continue
            case "(":
                if i + 1 < chars.count && chars[i + 1] == "?" {
                    guard i + 2 < chars.count, chars[i + 2] == ":" else { return nil }   // lookaround, named groups
                    i += 3
                } else {
                    i += 1
                }
                guard i < chars.count, chars[i] != ")" else { return nil }   // ERE rejects `()`
                out += "("
                quantifiable = false
                continue
            case ")":
                out += ")"
                quantifiable = true
            case "|":
                out += "|"
                quantifiable = false
            case "^", "$":
                out.unicodeScalars.append(c)
                quantifiable = false
            case ".":
                out += "[^\n\r]"
                needsASCII = true
                quantifiable = true
            case "*", "+", "?":
                guard quantifiable else { return nil }
                out.unicodeScalars.append(c)
                i += 1
                if i < chars.count && chars[i] == "?" { i += 1 }   // lazy: same match-or-not
                if i < chars.count && ["*", "+", "?", "{"].contains(chars[i]) { return nil }
                quantifiable = false
                continue
            case "{":
                // Only a well-formed {n}, {n,}, {n,m}; ECMA-262 Annex B reads others as literals.
                guard quantifiable else { return nil }
                var j = i + 1
                var text = "{"
                while j < chars.count, isDigit(chars[j]) || chars[j] == "," { text.unicodeScalars.append(chars[j]); j += 1 }
                guard j < chars.count, chars[j] == "}", text.count > 1, isDigit(text.unicodeScalars[text.unicodeScalars.index(after: text.unicodeScalars.startIndex)]) else { return nil }
                guard text.filter({ $0 == "," }).count <= 1 else { return nil }
                out += text + "}"
                i = j + 1
                if i < chars.count && chars[i] == "?" { i += 1 }
                if i < chars.count && ["*", "+", "?", "{"].contains(chars[i]) { return nil }
                quantifiable = false
                continue
            case "}", "]":
                return nil
            default:
                out += Self.literal(c)
                quantifiable = true
            }
            i += 1
        }
        pattern = out
        self.needsASCII = needsASCII
    }

    /// `\X` outside a class, as the literal it stands for; nil for escapes ERE cannot express
    /// the same way (`\b`, `\s`, `\p{...}`, `\u....`, backreferences...).
    private static func escapedLiteral(_ e: Unicode.Scalar) -> Unicode.Scalar? {
        switch e {
        case "n": "\n"
        case "t": "\t"
        case "r": "\r"
        case "f": "\u{0C}"
        case "v": "\u{0B}"
        case ".", "\\", "/", "-", "+", "*", "?", "(", ")", "[", "]", "{", "}", "|", "^", "$", ",", ":", "=", "!", "#", "&", "~", "\"", "'", "@", "%", "<", ">", ";", "_", " ", "`":
            e
        default: nil
        }
    }

    /// A literal character in ERE syntax outside a bracket expression.
    private static func literal(_ c: Unicode.Scalar) -> String {
        switch c {
        case ".", "[", "]", "\\", "(", ")", "*", "+", "?", "{", "}", "|", "^", "$": "\\" + String(c)
        default: String(c)
        }
    }

    /// Parses an ECMA class `[...]` from `start` into an ASCII set, renders it as an ERE
    /// bracket expression. Returns the rendering, whether it is negated, and the next index.
    private static func bracket(_ chars: [Unicode.Scalar], from start: Int) -> (String, Bool, Int)? {
        var i = start + 1
        var negated = false
        if i < chars.count && chars[i] == "^" { negated = true; i += 1 }
        var set = [Bool](repeating: false, count: 128)
        var previous: UInt32?   // last single char, for ranges
        var closed = false
        while i < chars.count {
            var c = chars[i]
            guard c.isASCII else { return nil }
            if c == "]" { closed = true; i += 1; break }
            if c == "\\" {
                guard i + 1 < chars.count else { return nil }
                let e = chars[i + 1]
                i += 2
                switch e {
                case "d": for v in 48...57 { set[v] = true }; previous = nil; continue
                case "w":
                    for v in 48...57 { set[v] = true }
                    for v in 65...90 { set[v] = true }
                    for v in 97...122 { set[v] = true }
                    set[95] = true
                    previous = nil
                    continue
                default:
                    guard let literal = escapedLiteral(e) else { return nil }
                    c = literal
                }
            } else if c == "-" && previous != nil && i + 1 < chars.count && chars[i + 1] != "]" {
                // A range previous-next.
                var upper = chars[i + 1]
                i += 2
                if upper == "\\" {
                    guard i < chars.count, let literal = escapedLiteral(chars[i]) else { return nil }
                    upper = literal
                    i += 1
                }
                guard upper.isASCII, let lower = previous, lower <= upper.value else { return nil }
                for v in lower...upper.value { set[Int(v)] = true }
                previous = nil
                continue
            } else {
                i += 1
            }
            set[Int(c.value)] = true
            previous = c.value
        }
        guard closed else { return nil }
        // ECMA-262's `[]` matches nothing and `[^]` anything: leave those to Swift Regex.
        guard set.contains(true) else { return nil }
        // Render: `]` first, `-` last, `^` never first, everything else as ranges of singles.
        var body = ""
        if set[93] { body += "]" }
        for v in 0..<128 where set[v] && v != 93 && v != 45 && v != 94 && v >= 0x20 {
            body.unicodeScalars.append(Unicode.Scalar(UInt8(v)))
        }
        for v in 0..<0x20 where set[v] { body.unicodeScalars.append(Unicode.Scalar(UInt8(v))) }
        if set[94] {
            guard !body.isEmpty else { return nil }   // `[^]`-like ambiguity; rare, leave to Swift Regex
            body += "^"
        }
        if set[45] { body += "-" }
        // `[.` `[:` `[=` open POSIX collating/class syntax; keep `[` out of first position.
        if body.hasPrefix("[") { return nil }
        if body.contains("[.") || body.contains("[:") || body.contains("[=") { return nil }
        return ("[" + (negated ? "^" : "") + body + "]", negated, i)
    }
}
