import JSON
import PushModel

/// Every spec's `match` again, for a body on a tape: per product and route the specs that may
/// recognise a request, and their conditions as plain numbers over one pool of bytes (the
/// pointer's tokens, the wanted string), read through buffer pointers.
///
/// Why a second form: `SpecMatch.recognises` copies each `MatchCondition` (its pointer, its
/// reference and its wanted value, a retain and a release each) and checks every token and
/// wanted string for ASCII on every request; with the request view it needs, that was most of
/// the reference counting in `SpecSet.judge` (perf, `serve --specs` on poolse rings).
///
/// A condition is settled here only where `MatchCondition.holds` on a tape would settle it on
/// the same bytes (`RequestView.body(at:equals:)`, `RequestView.entry`): a body place named by
/// ASCII tokens, present, absent, or equal to null, a boolean, a number or an ASCII string held
/// without escapes. Anything else (another kind of reference, a wanted array or object, a string
/// with an escape or a non-ASCII byte) is `undecided`, and the caller asks `holds` itself.
struct TapeMatchTable: Sendable {
    struct Candidate: Sendable {
        /// Index into `SpecSet.specs`.
        var spec: Int
        /// `PushSpec.specificity`.
        var specificity: Int
        /// `conditions[conditionStart..<conditionEnd]`, in `match.conditions`' order.
        var conditionStart: Int32
        var conditionEnd: Int32
    }

    struct Condition: Sendable {
        enum Test: UInt8, Sendable {
            case present, absent, equalsNull, equalsTrue, equalsFalse, equalsNumber, equalsString
            /// Not compiled: `MatchCondition.holds` decides.
            case general
        }
        var test: Test
        /// `tokens[tokenStart..<tokenEnd]`: the place below the body's root.
        var tokenStart: Int32
        var tokenEnd: Int32
        /// `equalsString`: the wanted text, `pool[literalStart..<literalEnd]`.
        var literalStart: Int32
        var literalEnd: Int32
        var number: Double
        /// Its index in its spec's `match.conditions`.
        var index: Int
    }

    /// A pointer token: `pool[start..<end]`, and the array index it names (`RequestView.entry`:
    /// digits without a leading zero), or -1.
    struct Token: Sendable {
        var start: Int32
        var end: Int32
        var arrayIndex: Int
    }

    enum Outcome { case holds, fails, undecided }

    /// The candidates of slot `s` (`slot(product:route:)`) are `candidates[slotStarts[s]..<slotStarts[s + 1]]`.
    let slotStarts: [Int]
    let candidates: [Candidate]
    /// Per candidate, its `match.method` (nil: any).
    let methods: [String?]
    let conditions: [Condition]
    let tokens: [Token]
    let pool: [UInt8]

    static let routeCount = GatewayRoute.allCases.count

    static func slot(product: Int, route: GatewayRoute) -> Int {
        let ordinal: Int
        switch route {
        case .apns: ordinal = 0
        case .fcm: ordinal = 1
        case .oauth: ordinal = 2
        case .unknown: ordinal = 3
        }
        return product * routeCount + ordinal
    }

    /// `byProduct`: `SpecSet.specsByProduct`, whose order the candidates keep.
    init(specs: [PushSpec], productCount: Int, byProduct: [[(route: GatewayRoute, specs: [Int])]]) {
        var slotStarts: [Int] = [0]
        var candidates: [Candidate] = []
        var methods: [String?] = []
        var conditions: [Condition] = []
        var tokens: [Token] = []
        var pool: [UInt8] = []
        func bytes(_ text: String) -> (Int32, Int32) {
            let start = Int32(pool.count)
            pool.append(contentsOf: text.utf8)
            return (start, Int32(pool.count))
        }
        for product in 0..<productCount {
            for route in GatewayRoute.allCases {
                for index in byProduct[product].first(where: { $0.route == route })?.specs ?? [] {
                    let spec = specs[index]
                    let conditionStart = Int32(conditions.count)
                    for (i, condition) in spec.match.conditions.enumerated() {
                        var compiled = Condition(test: .general, tokenStart: 0, tokenEnd: 0, literalStart: 0, literalEnd: 0,
                                                 number: 0, index: i)
                        if case .body(let path) = condition.reference, path.allSatisfy({ $0.utf8.allSatisfy { $0 < 0x80 } }) {
                            let test: Condition.Test
                            switch condition.kind {
                            case .present: test = .present
                            case .absent: test = .absent
                            case .equals(.null): test = .equalsNull
                            case .equals(.bool(let b)): test = b ? .equalsTrue : .equalsFalse
                            case .equals(.number(let d)):
                                test = .equalsNumber
                                compiled.number = d
                            case .equals(.string(let text)) where text.utf8.allSatisfy({ $0 < 0x80 }):
                                test = .equalsString
                                (compiled.literalStart, compiled.literalEnd) = bytes(text)
                            case .equals: test = .general
                            }
                            if test != .general {
                                compiled.test = test
                                compiled.tokenStart = Int32(tokens.count)
                                for token in path {
                                    let (start, end) = bytes(token)
                                    let arrayIndex = Int(token).flatMap { $0 >= 0 && String($0) == token ? $0 : nil } ?? -1
                                    tokens.append(Token(start: start, end: end, arrayIndex: arrayIndex))
                                }
                                compiled.tokenEnd = Int32(tokens.count)
                            }
                        }
                        conditions.append(compiled)
                    }
                    candidates.append(Candidate(spec: index, specificity: spec.specificity, conditionStart: conditionStart,
                                                conditionEnd: Int32(conditions.count)))
                    methods.append(spec.match.method)
                }
                slotStarts.append(candidates.count)
            }
        }
        self.slotStarts = slotStarts
        self.candidates = candidates
        self.methods = methods
        self.conditions = conditions
        self.tokens = tokens
        self.pool = pool
    }

    /// Whether condition `index` holds on `tape`, or `undecided` (see the type).
    func test(_ index: Int, on tape: JSONTape) -> Outcome {
        conditions.withUnsafeBufferPointer { conditions in
            tokens.withUnsafeBufferPointer { tokens in
                pool.withUnsafeBufferPointer { pool in
                    tape.entries.withUnsafeBufferPointer { entries in
                        tape.bytes.withUnsafeBufferPointer { bytes in
                            Self.test(conditions[index], tokens, pool, entries, bytes)
                        }
                    }
                }
            }
        }
    }

    private static func test(_ condition: Condition, _ tokens: UnsafeBufferPointer<Token>, _ pool: UnsafeBufferPointer<UInt8>,
                             _ entries: UnsafeBufferPointer<JSONTape.Entry>, _ bytes: UnsafeBufferPointer<UInt8>) -> Outcome {
        if condition.test == .general { return .undecided }
        // `RequestView.entry`, on bytes: every token here is ASCII.
        var current = 0
        var found = true
        for t in Int(condition.tokenStart)..<Int(condition.tokenEnd) {
            let token = tokens[t]
            let entry = entries[current]
            switch entry.kind {
            case .object:
                let wanted = UnsafeBufferPointer(rebasing: pool[Int(token.start)..<Int(token.end)])
                var key = current + 1
                var member = -1
                for _ in 0..<entry.count {
                    let keyEntry = entries[key]
                    if bytesEqual(UnsafeBufferPointer(rebasing: bytes[Int(keyEntry.start)..<Int(keyEntry.end)]), wanted) {
                        member = key + 1
                        break
                    }
                    key = Int(entries[key + 1].next)
                }
                if member < 0 { found = false } else { current = member }
            case .array:
                guard token.arrayIndex >= 0, token.arrayIndex < Int(entry.count) else {
                    found = false
                    break
                }
                var item = current + 1
                for _ in 0..<token.arrayIndex { item = Int(entries[item].next) }
                current = item
            default:
                found = false
            }
            if !found { break }
        }
        switch condition.test {
        case .present: return found ? .holds : .fails
        case .absent: return found ? .fails : .holds
        default: break
        }
        guard found else { return .fails }
        let entry = entries[current]
        switch condition.test {
        case .equalsNull: return entry.kind == .null ? .holds : .fails
        case .equalsTrue: return entry.kind == .true ? .holds : .fails
        case .equalsFalse: return entry.kind == .false ? .holds : .fails
        case .equalsNumber: return entry.kind == .number && entry.number == condition.number ? .holds : .fails
        case .equalsString:
            guard entry.kind == .string else { return .fails }
            // An escape or a non-ASCII byte may still spell the text (U+212A is "K"): `holds` compares Strings.
            guard entry.flags == 0 else { return .undecided }
            let wanted = UnsafeBufferPointer(rebasing: pool[Int(condition.literalStart)..<Int(condition.literalEnd)])
            return bytesEqual(UnsafeBufferPointer(rebasing: bytes[Int(entry.start)..<Int(entry.end)]), wanted) ? .holds : .fails
        case .present, .absent, .general: return .undecided
        }
    }
}
