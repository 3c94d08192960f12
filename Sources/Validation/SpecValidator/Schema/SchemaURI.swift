import Encoding
/// Just enough of RFC 3986 to resolve `$id` and `$ref` against a base URI (§5.2, reference
/// resolution with dot-segment removal). Compile-time only.
struct SchemaURI: Equatable {
    var scheme: String?
    var authority: String?
    var path: String
    var query: String?
    var fragment: String?

    init(parsing text: String) {
        var rest = Substring(text)
        if let hash = rest.firstIndex(of: "#") {
            fragment = String(rest[rest.index(after: hash)...])
            rest = rest[..<hash]
        }
        if let question = rest.firstIndex(of: "?") {
            query = String(rest[rest.index(after: question)...])
            rest = rest[..<question]
        }
        // A scheme is letters, digits, + - . before the first ':' that precedes any '/'.
        if let colon = rest.firstIndex(of: ":"), let first = rest.first, first.isLetter {
            let candidate = rest[..<colon]
            if candidate.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "+" || $0 == "-" || $0 == ".") }) {
                scheme = String(candidate)
                rest = rest[rest.index(after: colon)...]
            }
        }
        if rest.hasPrefix("//") {
            rest = rest.dropFirst(2)
            let end = rest.firstIndex(of: "/") ?? rest.endIndex
            authority = String(rest[..<end])
            rest = rest[end...]
        }
        path = String(rest)
    }

    /// `reference` resolved against `self` (RFC 3986 §5.2.2).
    func resolving(_ reference: SchemaURI) -> SchemaURI {
        var target = reference
        if reference.scheme != nil {
            target.path = Self.removingDotSegments(reference.path)
            return target
        }
        target.scheme = scheme
        if reference.authority != nil {
            target.path = Self.removingDotSegments(reference.path)
            return target
        }
        target.authority = authority
        if reference.path.isEmpty {
            target.path = path
            target.query = reference.query ?? query
        } else if reference.path.hasPrefix("/") {
            target.path = Self.removingDotSegments(reference.path)
        } else {
            let merged: String
            if authority != nil && path.isEmpty {
                merged = "/" + reference.path
            } else if let slash = path.lastIndex(of: "/") {
                merged = path[...slash] + reference.path
            } else {
                merged = reference.path
            }
            target.path = Self.removingDotSegments(merged)
        }
        return target
    }

    func resolving(_ reference: String) -> SchemaURI { resolving(SchemaURI(parsing: reference)) }

    var withoutFragment: SchemaURI {
        var copy = self
        copy.fragment = nil
        return copy
    }

    var text: String {
        var out = ""
        if let scheme { out += scheme + ":" }
        if let authority { out += "//" + authority }
        out += path
        if let query { out += "?" + query }
        if let fragment { out += "#" + fragment }
        return out
    }

    static func removingDotSegments(_ path: String) -> String {
        guard path.contains(".") else { return path }
        let absolute = path.hasPrefix("/")
        var output: [Substring] = []
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        for (i, segment) in segments.enumerated() {
            if absolute && i == 0 { continue }
            switch segment {
            case ".": if i == segments.count - 1 { output.append("") }
            case "..":
                if !output.isEmpty { output.removeLast() }
                if i == segments.count - 1 { output.append("") }
            default: output.append(segment)
            }
        }
        return (absolute ? "/" : "") + output.joined(separator: "/")
    }
}

/// `%XX` decoding for URI fragments holding JSON pointers (`#/$defs/foo%22bar`): nil for a
/// bad escape or bytes that are not UTF-8.
func percentDecoded(_ text: String) -> String? {
    guard text.contains("%") else { return text }
    return PercentEncoding.decode(text.utf8).flatMap { String(validating: $0, as: UTF8.self) }
}
