import JSON
import PushModel

// What a push says, compared with what the reference rules say it must (`run` without
// `expect`): the schema only tells whether a title is a string; this tells whether it is the
// right one. A spec file declares the fields the sender chooses freely (`content.free`, each
// with why); every other field of the body, and the APNs headers the rules set, is decided by
// the rules and compared. So nothing falls through silently: a field is compared, or it is
// declared free in the file that describes the push.

/// A field the product's rules leave to the sender: its own clock's `sent_at`, a grant it
/// mints. `pointer` is into the request, as violations name it: `/body/sent_at`,
/// `/headers/apns-id`; it covers what lies below it too.
public struct FreeContent: Sendable, Equatable {
    public var pointer: JSONPointer
    /// Why the sender may choose it, in words.
    public var why: String
    /// The sentence that leaves it free, where the product document has one.
    public var source: SpecSource?
}

/// One place where a push says something other than the reference rules' push for the same
/// device and spec.
public struct ContentDifference: Sendable, Equatable, CustomStringConvertible {
    /// `/body/aps/alert/title`, `/headers/apns-collapse-id`.
    public var pointer: JSONPointer
    /// What the push carried, as JSON text (a header value as a JSON string); nil: nothing.
    public var sent: String?
    /// What the rules say, the same way; nil: nothing.
    public var expected: String?
    /// The nearest sentence behind the field: its schema's `x-source` or its header rule's.
    public var source: SpecSource?

    /// `/body/aps/alert/title is "Acme", expected "Kirill"`.
    public var description: String {
        "\(pointer) is \(sent ?? "absent"), expected \(expected ?? "nothing")"
    }
}

extension PushSpec {
    /// The APNs request headers the product rules set (apns.md: push type, topic, priority,
    /// expiration, collapse id); `authorization`, `apns-id` and the like are the transport's.
    static let decidedHeaders = ["apns-push-type", "apns-topic", "apns-priority", "apns-expiration", "apns-collapse-id"]
    /// Where each of `decidedHeaders` is named in a difference: made once, not once a push.
    static let decidedHeaderPointers = decidedHeaders.map { JSONPointer(tokens: ["headers", $0]) }

    /// An expiration ("expires after 24 hours") is a time after the send, not a value: the
    /// sender's, measured from its own clock (the scenario's, or the wall clock), may sit this
    /// many seconds from the reference's.
    public static let expirationToleranceSeconds: Int64 = 60

    /// Whether `pointer` lies in a field declared free.
    func isFree(_ pointer: JSONPointer) -> Bool { Self.isFree(pointer, in: freeContent) }

    static func isFree(_ pointer: JSONPointer, in freeContent: [FreeContent]) -> Bool {
        freeContent.contains { pointer.tokens.starts(with: $0.pointer.tokens) }
    }

    /// Where the push (`headers`, lowercase names; `body`) differs from `reference` on what the
    /// rules decide, at most `limit` places. `token`: the device's, where `reference` has it cut
    /// out of its body (a fan-out's one template). `wallClockMs`: now, for an expiration the
    /// sender computed from the wall clock.
    public func compareContent(headers: [(name: String, value: String)], body: [UInt8], with reference: ContentReference,
                               token: String? = nil, wallClockMs: Int64, limit: Int = 10) -> [ContentDifference] {
        var differences: [ContentDifference] = []
        if transport == .apns {
            for (name, pointer) in comparedHeaders {
                var sent = headers.first { $0.name == name }?.value
                // The reference's names as its sender wrote them: lowered only when they are not already.
                var expected = reference.headers.first {
                    $0.name.utf8.count == name.utf8.count && ($0.name == name || $0.name.lowercased() == name)
                }?.value
                // Apple: a push without apns-priority is sent at 10.
                if name == "apns-priority" {
                    sent = sent ?? "10"
                    expected = expected ?? "10"
                }
                if name == "apns-expiration", let sent, let expected,
                   expirationsAgree(sent: sent, expected: expected, decidedAtMs: reference.decidedAtMs, wallClockMs: wallClockMs) {
                    continue
                }
                if sent != expected {
                    differences.append(ContentDifference(pointer: pointer, sent: sent.map { JSONValue.string($0).serialized() },
                                                         expected: expected.map { JSONValue.string($0).serialized() },
                                                         source: headerRules.first { $0.name == name }?.source ?? schemaSource))
                }
            }
        }
        // The same bytes say the same thing (most pushes of a sender that writes JSON as the
        // rules do): two trees are built only for bodies that differ somewhere.
        let same = token.map { reference.bodyEquals(body, token: $0) } ?? (body == reference.body)
        if !same {
            let whole = token.map { reference.withToken($0) } ?? reference
            compare(try? JSONParser.parse(body), try? JSONParser.parse(whole.body), at: JSONPointer(tokens: ["body"]), into: &differences)
        }
        return Array(differences.prefix(limit))
    }

    /// Both 0 ("deliver now or never"), or both a time whose distance from its sender's clock
    /// agrees within the tolerance.
    private func expirationsAgree(sent: String, expected: String, decidedAtMs: Int64, wallClockMs: Int64) -> Bool {
        guard let sentSeconds = Int64(sent), let expectedSeconds = Int64(expected) else { return false }
        if sentSeconds == 0 || expectedSeconds == 0 { return sentSeconds == expectedSeconds }
        let wanted = expectedSeconds - decidedAtMs / 1000
        func agrees(clock: Int64) -> Bool { abs(sentSeconds - clock / 1000 - wanted) <= Self.expirationToleranceSeconds }
        return agrees(clock: decidedAtMs) || agrees(clock: wallClockMs)
    }

    private func compare(_ sent: JSONValue?, _ expected: JSONValue?, at pointer: JSONPointer, into differences: inout [ContentDifference]) {
        guard !isFree(pointer) else { return }
        switch (sent, expected) {
        case (.object(let a)?, .object(let b)?):
            for key in b.keys {
                compare(a[key], b[key], at: pointer.appending(key), into: &differences)
            }
            for key in a.keys where b[key] == nil {
                compare(a[key], nil, at: pointer.appending(key), into: &differences)
            }
        case (.array(let a)?, .array(let b)?) where a.count == b.count:
            for index in a.indices { compare(a[index], b[index], at: pointer.appending(index), into: &differences) }
        default:
            guard sent != expected else { return }
            differences.append(ContentDifference(pointer: pointer, sent: sent?.serialized(), expected: expected?.serialized(),
                                                 source: bodySource(at: pointer)))
        }
    }

    /// The `x-source` nearest above `pointer` (`/body/...`) in the body schema's `properties`.
    func bodySource(at pointer: JSONPointer) -> SpecSource? {
        var best = schemaSource
        var node: JSONValue? = schemaDocument
        for token in pointer.tokens.dropFirst() {
            node = node?["properties"]?[token] ?? (Int(token) != nil ? node?["items"] : nil)
            guard let here = node else { break }
            if let text = here["x-source"], let source = try? SpecSource.parse(text, defaultSeed: schemaSource?.seed) { best = source }
        }
        return best
    }

    /// Whether the body schema declares the field at `pointer` (`/body/...`), through its
    /// `properties` (and `items` for an index).
    func schemaDeclares(_ pointer: JSONPointer) -> Bool {
        var node: JSONValue? = schemaDocument
        for token in pointer.tokens.dropFirst() {
            node = node?["properties"]?[token] ?? (Int(token) != nil ? node?["items"] : nil)
            if node == nil { return false }
        }
        return true
    }
}
