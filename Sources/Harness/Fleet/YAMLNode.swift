/// The little YAML the manifests need: maps (in the order given), lists, strings, integers and
/// booleans, written as block YAML. Every string value is double-quoted with JSON's escapes (a
/// subset of YAML's), so no value can become a key, a comment, a number or a second document,
/// whatever it holds (`:`, `#`, quotes, newlines). Keys are plain only when they are safe
/// identifiers; any other key is quoted too.
public indirect enum YAMLNode: Equatable, Sendable {
    case string(String)
    case int(Int)
    case bool(Bool)
    case list([YAMLNode])
    case map([(String, YAMLNode)])

    public static func == (a: YAMLNode, b: YAMLNode) -> Bool {
        switch (a, b) {
        case (.string(let x), .string(let y)): return x == y
        case (.int(let x), .int(let y)): return x == y
        case (.bool(let x), .bool(let y)): return x == y
        case (.list(let x), .list(let y)): return x == y
        case (.map(let x), .map(let y)): return x.count == y.count && zip(x, y).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: return false
        }
    }

    /// One YAML document, without the `---` that separates documents.
    public var document: String {
        var out = ""
        write(into: &out, indent: 0)
        return out
    }

    private var isScalar: Bool {
        switch self {
        case .string, .int, .bool: return true
        case .list(let items): return items.isEmpty
        case .map(let entries): return entries.isEmpty
        }
    }

    private var scalarText: String {
        switch self {
        case .string(let text): return YAMLNode.quoted(text)
        case .int(let n): return String(n)
        case .bool(let b): return b ? "true" : "false"
        case .list: return "[]"
        case .map: return "{}"
        }
    }

    private func write(into out: inout String, indent: Int) {
        let pad = String(repeating: " ", count: indent)
        switch self {
        case .map(let entries) where !entries.isEmpty:
            for (key, value) in entries {
                out += pad + YAMLNode.key(key) + ":"
                if value.isScalar {
                    out += " " + value.scalarText + "\n"
                } else {
                    out += "\n"
                    value.write(into: &out, indent: indent + 2)
                }
            }
        case .list(let items) where !items.isEmpty:
            for item in items {
                if item.isScalar {
                    out += pad + "- " + item.scalarText + "\n"
                } else if case .map = item {
                    // The map's first line goes on the dash's line: `- name: x`, the rest under it.
                    var nested = ""
                    item.write(into: &nested, indent: indent + 2)
                    out += pad + "- " + nested.dropFirst(indent + 2)
                } else {
                    out += pad + "-\n"
                    item.write(into: &out, indent: indent + 2)
                }
            }
        default:
            out += pad + scalarText + "\n"
        }
    }

    /// Words YAML 1.1 readers (PyYAML among them) take for booleans or null even unquoted as keys.
    private static let readAsNonString: Set<String> = ["y", "yes", "n", "no", "true", "false", "on", "off", "null", "~"]

    static func key(_ key: String) -> String {
        let safe = key.unicodeScalars.allSatisfy { ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0)
            || $0 == "." || $0 == "-" || $0 == "_" || $0 == "/" }
        let first = key.unicodeScalars.first
        if safe, let first, ("a"..."z").contains(first) || ("A"..."Z").contains(first), !readAsNonString.contains(key.lowercased()) {
            return key
        }
        return quoted(key)
    }

    /// A double-quoted scalar: `\` and `"` escaped, every control character and the characters
    /// YAML treats as line breaks (U+0085, U+2028, U+2029) or strips (U+FEFF) as `\uXXXX`.
    static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            case "\r": out += "\\r"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F || scalar.value == 0x85 || scalar.value == 0x2028
                    || scalar.value == 0x2029 || scalar.value == 0xFEFF {
                    let hex = String(scalar.value, radix: 16, uppercase: true)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }

    /// Documents joined as one YAML stream (`kubectl apply -f -` reads it).
    public static func stream(_ documents: [YAMLNode]) -> String {
        documents.map { "---\n" + $0.document }.joined()
    }
}
