import CPCRE2
import JSON
#if canImport(Glibc)
import Glibc
#endif

/// Why a `pattern` did not compile: PCRE2's message and the offset in the pattern.
public struct PatternError: Error, Sendable, CustomStringConvertible {
    public var message: String
    /// In code points of the pattern as PCRE2 saw it (after `\s` and `.` are spelled out).
    public var offset: Int

    public var description: String { "\(message) at offset \(offset)" }
}

/// What matching one string found.
enum PatternMatch: Equatable, Sendable {
    case matched
    case notMatched
    /// PCRE2 stopped at a limit before deciding: the pattern backtracks catastrophically on
    /// this string (nested quantifiers such as `(a+)+`). Reported as a failed check, never as
    /// a pass, so a hostile string cannot slip through either.
    case abandoned(String)
}

/// An ECMA-262 `pattern` (2020-12 validation §6.3.3) compiled once by PCRE2. Matching is an
/// unanchored search over Unicode code points (PCRE2_UTF), `\d`, `\w` and `\b` ASCII-only as in
/// ECMA-262 (no PCRE2_UCP), `$` only at the very end (PCRE2_DOLLAR_ENDONLY), `\uXXXX` and
/// `\u{…}` escapes (PCRE2_ALT_BSUX, PCRE2_EXTRA_ALT_BSUX), `[]` and `[^]` (PCRE2_ALLOW_EMPTY_CLASS).
/// `\s` and `.` differ between the two: they are spelled out as ECMA-262 defines them
/// (`ecmaToPCRE2`).
///
/// Every match runs under limits (`matchLimit`, `depthLimit`, `heapLimitKiB`; the JIT's stack):
/// `^(?=(a+)+$)` on 41 characters ran for over a minute on the backtracking engines this
/// replaced, holding a `--specs` gateway's event loop. Now it gives up in
/// milliseconds and that one check fails with a clear message.
final class CompiledPattern: @unchecked Sendable {
    // @unchecked: `code` is immutable after init, and PCRE2 documents a compiled pattern (and
    // its JIT code) as safe to match from many threads at once; the only mutable state of a
    // match, the match data, is per thread (`MatchData`). The match context is only read.
    let source: String
    private let code: OpaquePointer
    /// The limits every match runs under, read-only once set.
    private let matchContext: OpaquePointer?

    /// Backtracking steps per match. A push payload's patterns (ids, tokens, URLs) on strings of
    /// up to 4 KB take far fewer; `(a+)+$` on 41 characters takes ~2^40.
    static let matchLimit: UInt32 = 1_000_000
    /// Nested backtracking depth per match.
    static let depthLimit: UInt32 = 10_000
    /// Heap for backtracking frames per match.
    static let heapLimitKiB: UInt32 = 8_192

    private static let options: UInt32 = UInt32(PCRE2_UTF) | UInt32(PCRE2_ALT_BSUX) | UInt32(PCRE2_DOLLAR_ENDONLY)
        | UInt32(PCRE2_ALLOW_EMPTY_CLASS)

    init(_ source: String) throws(PatternError) {
        self.source = source
        let translated = Array(Self.ecmaToPCRE2(source).utf8)
        let context = pcre2_compile_context_create_8(nil)
        defer { pcre2_compile_context_free_8(context) }
        pcre2_set_compile_extra_options_8(context, UInt32(PCRE2_EXTRA_ALT_BSUX))
        var errorCode: Int32 = 0
        var errorOffset = 0
        let compiled = translated.withUnsafeBufferPointer { pattern in
            pcre2_compile_8(pattern.baseAddress, pattern.count, Self.options, &errorCode, &errorOffset, context)
        }
        guard let compiled else {
            throw PatternError(message: Self.message(for: errorCode), offset: errorOffset)
        }
        // The JIT is ~10x faster and honours the match limit; without it (not built for this
        // CPU, or out of executable memory) the interpreter runs the same pattern.
        _ = pcre2_jit_compile_8(compiled, UInt32(PCRE2_JIT_COMPLETE))
        code = compiled
        matchContext = pcre2_match_context_create_8(nil)
        pcre2_set_match_limit_8(matchContext, Self.matchLimit)
        pcre2_set_depth_limit_8(matchContext, Self.depthLimit)
        pcre2_set_heap_limit_8(matchContext, Self.heapLimitKiB)
    }

    deinit {
        pcre2_match_context_free_8(matchContext)
        pcre2_code_free_8(code)
    }

    func matches(_ string: String) -> Bool { search(string) == .matched }

    /// `matches` on a string's UTF-8 bytes (valid UTF-8): no String.
    func matches(utf8 bytes: UnsafeBufferPointer<UInt8>) -> Bool { search(utf8: bytes) == .matched }

    func search(_ string: String) -> PatternMatch {
        var string = string
        return string.withUTF8 { search(utf8: $0) }
    }

    /// The search on valid UTF-8 (a Swift string's bytes, or a tape string the parser checked):
    /// PCRE2's own UTF check is skipped.
    func search(utf8 bytes: UnsafeBufferPointer<UInt8>) -> PatternMatch {
        var empty: UInt8 = 0
        let base = bytes.baseAddress ?? withUnsafeMutablePointer(to: &empty) { UnsafePointer($0) }
        let result = pcre2_match_8(code, base, bytes.count, 0, UInt32(PCRE2_NO_UTF_CHECK), MatchData.current, matchContext)
        // 0: matched, but the one-pair ovector was too small for the groups (we want none).
        if result >= 0 { return .matched }
        switch result {
        case PCRE2_ERROR_NOMATCH: return .notMatched
        case PCRE2_ERROR_MATCHLIMIT, PCRE2_ERROR_DEPTHLIMIT, PCRE2_ERROR_HEAPLIMIT, PCRE2_ERROR_JIT_STACKLIMIT:
            return .abandoned("/\(source)/ gave up on this string (\(Self.message(for: result))): the pattern backtracks "
                              + "catastrophically, e.g. nested quantifiers such as (a+)+")
        default:
            return .abandoned("/\(source)/ could not be matched: \(Self.message(for: result))")
        }
    }


    static func message(for code: Int32) -> String {
        var buffer = [UInt8](repeating: 0, count: 256)
        let length = buffer.withUnsafeMutableBufferPointer { pcre2_get_error_message_8(code, $0.baseAddress, $0.count) }
        return length > 0 ? String(decoding: buffer[..<Int(length)], as: UTF8.self) : "PCRE2 error \(code)"
    }

    /// ECMA-262's `\s` (WhiteSpace and LineTerminator, ECMA-262 §22.2.2.9) and `.` (anything but
    /// a LineTerminator) in PCRE2 syntax: PCRE2's `\s` without UCP is ASCII only, and its `.`
    /// stops only at `\n`. Everything else is passed through; a backslash keeps the character
    /// after it, so `\.` and `[.]` stay literal.
    static func ecmaToPCRE2(_ source: String) -> String {
        // In PCRE2_ALT_BSUX's spelling (`\uhhhh`; `\x{…}` is not an escape there).
        let spaces = #"\t\n\x0B\f\r \u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000\uFEFF"#
        let lineTerminators = #"\n\r\u2028\u2029"#
        var out = ""
        var inClass = false
        var iterator = source.unicodeScalars.makeIterator()
        while let scalar = iterator.next() {
            switch scalar {
            case "\\":
                guard let escaped = iterator.next() else { out.unicodeScalars.append(scalar); break }
                switch (escaped, inClass) {
                case ("s", false): out += "[" + spaces + "]"
                case ("S", false): out += "[^" + spaces + "]"
                case ("s", true): out += spaces
                case ("p", _), ("P", _):
                    out.unicodeScalars.append(scalar)
                    out.unicodeScalars.append(escaped)
                    var lookahead = iterator
                    guard lookahead.next() == "{" else { break }
                    var name = ""
                    while let c = lookahead.next(), c != "}" { name.unicodeScalars.append(c) }
                    iterator = lookahead
                    out += "{" + Self.pcre2PropertyName(name) + "}"
                default:
                    out.unicodeScalars.append(scalar)
                    out.unicodeScalars.append(escaped)
                }
            case "[" where !inClass:
                inClass = true
                out += "["
                // ECMA-262: `]` straight after `[` or `[^` closes the class (`[]`, `[^]`).
                var lookahead = iterator
                if lookahead.next() == "^" { out += "^"; iterator = lookahead }
                var close = iterator
                if close.next() == "]" { out += "]"; iterator = close; inClass = false }
            case "]" where inClass:
                inClass = false
                out += "]"
            case "." where !inClass:
                out += "[^" + lineTerminators + "]"
            default:
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}

extension CompiledPattern {
    /// Whether a group made only of quantified parts, one of them unbounded (`*`, `+`, `{n,}`),
    /// is itself quantified without bound, as in `(a+)+` or `(\\s*\\w+)*`: the shape that can split
    /// one string in exponentially many ways. A group with an unquantified part, such as the `-`
    /// of `^[a-z]+(-[a-z]+)*$`, splits one way only and is not reported. For `specs lint`: a
    /// heuristic over escapes, classes and groups, not a proof either way.
    static func nestsQuantifiers(_ source: String) -> Bool {
        struct Group { var unbounded = false, unquantified = false }
        let scalars = Array(source.unicodeScalars)
        var groups = [Group()]
        var i = 0
        /// The length of the quantifier at `index` (0: none) and whether it is unbounded.
        func quantifier(at index: Int) -> (length: Int, unbounded: Bool) {
            guard index < scalars.count else { return (0, false) }
            var length = 0
            var unbounded = false
            switch scalars[index] {
            case "*", "+": length = 1; unbounded = true
            case "?": length = 1
            case "{":
                var j = index + 1
                while j < scalars.count, scalars[j].properties.numericType != nil || scalars[j] == "," { j += 1 }
                guard j < scalars.count, scalars[j] == "}", j > index + 1 else { return (0, false) }
                length = j - index + 1
                unbounded = scalars[j - 1] == ","
            default: return (0, false)
            }
            if index + length < scalars.count, scalars[index + length] == "?" { length += 1 }  // lazy
            return (length, unbounded)
        }
        while i < scalars.count {
            var atom = Group(unbounded: false, unquantified: true)  // what this atom adds to its group
            switch scalars[i] {
            case "\\":
                i += 1
            case "[":
                // ECMA-262: `]` right after `[` or `[^` closes the class.
                i += 1
                if i < scalars.count, scalars[i] == "^" { i += 1 }
                while i < scalars.count, scalars[i] != "]" { i += scalars[i] == "\\" ? 2 : 1 }
            case "(":
                groups.append(Group())
                i += 1
                // `(?:`, `(?=`, `(?!`, `(?<=`, `(?<!`, `(?<name>`: the prefix is not an atom.
                if i < scalars.count, scalars[i] == "?" {
                    i += 1
                    if i < scalars.count, scalars[i] == "<" {
                        i += 1
                        if i < scalars.count, scalars[i] == "=" || scalars[i] == "!" { i += 1 } else {
                            while i < scalars.count, scalars[i] != ">" { i += 1 }
                            i += 1
                        }
                    } else {
                        i += 1
                    }
                }
                continue
            case ")":
                guard groups.count > 1 else { return false }
                let closed = groups.removeLast()
                let (_, unbounded) = quantifier(at: i + 1)
                if unbounded, closed.unbounded, !closed.unquantified { return true }
                atom = Group(unbounded: closed.unbounded, unquantified: closed.unquantified)
            case "|":
                i += 1
                continue
            case "^", "$":
                i += 1
                continue
            default:
                break
            }
            let (length, unbounded) = quantifier(at: i + 1)
            if length > 0 {
                groups[groups.count - 1].unbounded = groups[groups.count - 1].unbounded || unbounded || atom.unbounded
            } else {
                groups[groups.count - 1].unquantified = groups[groups.count - 1].unquantified || atom.unquantified
                groups[groups.count - 1].unbounded = groups[groups.count - 1].unbounded || atom.unbounded
            }
            i += 1 + length
        }
        return false
    }

    /// ECMA-262's `\p{…}` names (`Letter`, `General_Category=Letter`, `gc=L`, `Script=Greek`,
    /// `sc=Greek`) as PCRE2 10.42 spells them: general categories by their short alias only.
    static func pcre2PropertyName(_ name: String) -> String {
        var value = Substring(name)
        for prefix in ["General_Category=", "gc=", "Script=", "sc="] where value.hasPrefix(prefix) {
            value = value.dropFirst(prefix.count)
            break
        }
        return generalCategories[String(value)] ?? String(value)
    }

    /// Unicode's long general-category names and their short aliases (PropertyValueAliases.txt).
    static let generalCategories: [String: String] = [
        "Letter": "L", "Cased_Letter": "L&", "Uppercase_Letter": "Lu", "Lowercase_Letter": "Ll", "Titlecase_Letter": "Lt",
        "Modifier_Letter": "Lm", "Other_Letter": "Lo", "Mark": "M", "Combining_Mark": "M", "Nonspacing_Mark": "Mn",
        "Spacing_Mark": "Mc", "Enclosing_Mark": "Me", "Number": "N", "Decimal_Number": "Nd", "digit": "Nd",
        "Letter_Number": "Nl", "Other_Number": "No", "Punctuation": "P", "punct": "P", "Connector_Punctuation": "Pc",
        "Dash_Punctuation": "Pd", "Open_Punctuation": "Ps", "Close_Punctuation": "Pe", "Initial_Punctuation": "Pi",
        "Final_Punctuation": "Pf", "Other_Punctuation": "Po", "Symbol": "S", "Math_Symbol": "Sm", "Currency_Symbol": "Sc",
        "Modifier_Symbol": "Sk", "Other_Symbol": "So", "Separator": "Z", "Space_Separator": "Zs", "Line_Separator": "Zl",
        "Paragraph_Separator": "Zp", "Other": "C", "Control": "Cc", "cntrl": "Cc", "Format": "Cf", "Surrogate": "Cs",
        "Private_Use": "Co", "Unassigned": "Cn",
    ]
}

/// One PCRE2 match data per thread, reused by every pattern's matches on it: the gateway's
/// event loops judge concurrently, and a match data per match was a malloc and free each time.
/// Freed when its thread exits (the key's destructor).
private enum MatchData {
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key) { pcre2_match_data_free_8(OpaquePointer($0)) }
        return key
    }()

    static var current: OpaquePointer? {
        if let existing = pthread_getspecific(key) { return OpaquePointer(existing) }
        // One ovector pair: only whether it matched is wanted (a match with more groups returns 0).
        let created = pcre2_match_data_create_8(1, nil)
        pthread_setspecific(key, UnsafeRawPointer(created))
        return created
    }
}
