/// An RFC 6901 JSON Pointer: where in a document a violation is. Tokens are kept unescaped;
/// `description` escapes `~` as `~0` and `/` as `~1`.
public struct JSONPointer: Sendable, Hashable, CustomStringConvertible {
    public private(set) var tokens: [String]

    public init(tokens: [String] = []) { self.tokens = tokens }

    /// Parses "/a/b~1c". The empty string is the whole document.
    public init?(_ text: String) {
        if text.isEmpty { tokens = []; return }
        guard text.hasPrefix("/") else { return nil }
        var result: [String] = []
        for part in text.dropFirst().split(separator: "/", omittingEmptySubsequences: false) {
            var token = ""
            var iterator = part.makeIterator()
            while let c = iterator.next() {
                if c == "~" {
                    switch iterator.next() {
                    case "0": token.append("~")
                    case "1": token.append("/")
                    default: return nil
                    }
                } else {
                    token.append(c)
                }
            }
            result.append(token)
        }
        tokens = result
    }

    public static let root = JSONPointer()

    public func appending(_ token: String) -> JSONPointer {
        var copy = self
        copy.tokens.append(token)
        return copy
    }

    public func appending(_ index: Int) -> JSONPointer { appending(String(index)) }

    public var description: String {
        tokens.map { "/" + $0.replacingOccurrences(of: "~", with: "~0").replacingOccurrences(of: "/", with: "~1") }.joined()
    }

    /// The value the pointer designates, or nil when it does not exist.
    public func resolve(in document: JSONValue) -> JSONValue? {
        var current = document
        for token in tokens {
            switch current {
            case .object(let object):
                guard let next = object[token] else { return nil }
                current = next
            case .array(let array):
                // RFC 6901: array indices are decimal without leading zeros.
                guard let index = Int(token), String(index) == token, array.indices.contains(index) else { return nil }
                current = array[index]
            default:
                return nil
            }
        }
        return current
    }
}

extension String {
    /// Foundation-free replacement, enough for pointer escaping on cold paths.
    fileprivate func replacingOccurrences(of target: Character, with replacement: String) -> String {
        guard contains(target) else { return self }
        var out = ""
        for c in self { if c == target { out += replacement } else { out.append(c) } }
        return out
    }
}
