import JSON
import Reports

/// `plan --target-members`: how many segments (driver + sender processes, one a pod) and gateway
/// replicas ring a whole group within a target, from rates measured on one machine. Pure
/// arithmetic: each count is the needed rate (a call's pushes over the target time) divided by
/// what one unit does, planned on only `headroom` of its measured rate, rounded up.
///
///     N = ceil(pushes / within / (sender rate × headroom))
///     M = ceil(pushes / within / (gateway core rate × headroom))
///
/// The margin is what the fleet does at the full measured rates against the needed rate.
public struct FleetSizing: Sendable, Equatable {
    /// What the sizing is computed from.
    public struct Input: Sendable, Equatable {
        /// Pushes one call makes: every other member's devices.
        public var pushes: Int
        public var withinNanoseconds: UInt64
        /// Pushes per second one segment (one sender process) delivers.
        public var senderRate: Double
        /// Pushes per second one gateway replica of one core absorbs (specs and record on).
        public var gatewayRate: Double
        /// The share of each measured rate the plan counts on (0 < headroom <= 1).
        public var headroom: Double
        /// The earliest any measured call had its first phone rung: a fleet of any size
        /// cannot ring everyone sooner. Nil when not measured (rates given).
        public var firstRingNanoseconds: UInt64?
        /// The most segments and gateways a fleet can have (`k8s render`'s limits).
        public var segmentLimit: Int
        public var gatewayLimit: Int

        public init(pushes: Int, withinNanoseconds: UInt64, senderRate: Double, gatewayRate: Double, headroom: Double = 0.7,
                    firstRingNanoseconds: UInt64? = nil, segmentLimit: Int = 1000, gatewayLimit: Int = 100) {
            self.pushes = pushes
            self.withinNanoseconds = withinNanoseconds
            self.senderRate = senderRate
            self.gatewayRate = gatewayRate
            self.headroom = headroom
            self.firstRingNanoseconds = firstRingNanoseconds
            self.segmentLimit = segmentLimit
            self.gatewayLimit = gatewayLimit
        }

        /// Pushes per second the whole fleet must deliver.
        public var neededRate: Double { Double(pushes) / (Double(withinNanoseconds) / 1e9) }
    }

    /// An input no fleet can be sized from; `option` names what to fix.
    public struct InputError: Error, Equatable, CustomStringConvertible {
        public var option: String
        public var message: String
        public var description: String { "--\(option) \(message)" }
    }

    public var input: Input
    /// Segments and gateways; both at least 1, also when the fleet cannot reach the target.
    public var segments: Int
    public var gateways: Int
    /// Why no fleet rings everyone in time (`segments`/`gateways` are then what the rates alone
    /// would ask for); nil when the fleet reaches the target.
    public var unreachable: String?

    public init(_ input: Input) throws(InputError) {
        guard input.pushes > 0 else { throw InputError(option: "target-members", message: "makes no push (a ring goes to every other member: give 2 or more)") }
        guard input.withinNanoseconds > 0 else { throw InputError(option: "within", message: "must be above 0") }
        guard input.senderRate.isFinite, input.senderRate > 0 else {
            throw InputError(option: "sender-rate", message: "must be a number of pushes per second above 0, not \(Format.number(input.senderRate))")
        }
        guard input.gatewayRate.isFinite, input.gatewayRate > 0 else {
            throw InputError(option: "gateway-rate", message: "must be a number of pushes per second above 0, not \(Format.number(input.gatewayRate))")
        }
        guard input.headroom > 0, input.headroom <= 1 else {
            throw InputError(option: "headroom", message: "is the share of a measured rate to plan on: above 0, at most 1, not \(Format.number(input.headroom))")
        }
        guard input.segmentLimit > 0, input.gatewayLimit > 0 else { throw InputError(option: "segments", message: "limit must be above 0") }
        self.input = input
        let needed = input.neededRate
        // The 1e-9 keeps an exact quotient (4.0000000001 from rounding) from asking for one more.
        func count(_ rate: Double) -> Int {
            let exact = needed / (rate * input.headroom)
            return max(1, Int((exact - 1e-9).rounded(.up)))
        }
        let wantedSegments = count(input.senderRate), wantedGateways = count(input.gatewayRate)
        segments = min(wantedSegments, input.pushes)
        gateways = wantedGateways
        if let floor = input.firstRingNanoseconds, floor >= input.withinNanoseconds {
            unreachable = "the first phone of a call rang \(Format.milliseconds(floor)) ms after it at the soonest on this machine: "
                + "no fleet rings everyone within \(Format.milliseconds(input.withinNanoseconds)) ms"
        } else if wantedSegments > input.pushes {
            unreachable = "\(wantedSegments) segments would each have less than one push: a single push at "
                + "\(Format.significant(input.senderRate * input.headroom)) pushes/s takes longer than \(Format.milliseconds(input.withinNanoseconds)) ms"
        } else if wantedSegments > input.segmentLimit {
            unreachable = "\(wantedSegments) segments are more than the \(input.segmentLimit) a fleet can have"
        } else if wantedGateways > input.gatewayLimit {
            unreachable = "\(wantedGateways) gateways are more than the \(input.gatewayLimit) a fleet can have"
        } else {
            unreachable = nil
        }
    }

    /// Pushes per second the fleet's segments deliver, and its gateways absorb, at the full measured rates.
    public var segmentsDeliver: Double { Double(segments) * input.senderRate }
    public var gatewaysAbsorb: Double { Double(gateways) * input.gatewayRate }
    /// What the fleet does over what is needed (at least 1/headroom when reached).
    public var segmentMargin: Double { segmentsDeliver / input.neededRate }
    public var gatewayMargin: Double { gatewaysAbsorb / input.neededRate }
    /// Each segment's share of a call's pushes (the larger part, when they do not divide evenly).
    public var pushesPerSegment: Int { (input.pushes + segments - 1) / segments }

    /// The arithmetic of each number, one line each.
    public var reasons: [String] {
        let seconds = Format.number(Double(input.withinNanoseconds) / 1e9)
        let needed = Format.grouped(Int(input.neededRate.rounded(.up)))
        let headroom = Format.number(input.headroom)
        func line(_ letter: String, _ count: Int, _ rate: Double, _ unit: String, _ does: Double, _ verb: String, _ margin: Double) -> String {
            "\(letter) = ceil(\(Format.grouped(input.pushes)) pushes / \(seconds) s / (\(Format.grouped(Int(rate.rounded()))) pushes/s \(unit) "
                + "x \(headroom) headroom)) = \(count): \(count) \(unit == "a segment" ? "segment" : "gateway")\(count == 1 ? "" : "s") "
                + "\(verb)\(count == 1 ? "s" : "") "
                + "\(Format.grouped(Int(does.rounded()))) pushes/s against \(needed) needed: \(Format.significant(margin))x margin"
        }
        return [
            line("N", segments, input.senderRate, "a segment", segmentsDeliver, "deliver", segmentMargin),
            line("M", gateways, input.gatewayRate, "a gateway core", gatewaysAbsorb, "absorb", gatewayMargin),
        ]
    }

    /// `plan --json`'s `fleet` object: the input, the counts, the margins and the reasons.
    public var json: JSONValue {
        var object: JSONObject = [
            "pushes_per_call": .number(Double(input.pushes)), "within_ms": .number(Double(input.withinNanoseconds) / 1e6),
            "needed_pushes_per_second": .number(input.neededRate), "headroom": .number(input.headroom),
            "sender_pushes_per_second": .number(input.senderRate), "gateway_pushes_per_second_per_core": .number(input.gatewayRate),
            "segments": .number(Double(segments)), "gateways": .number(Double(gateways)),
            "segments_deliver_pushes_per_second": .number(segmentsDeliver), "gateways_absorb_pushes_per_second": .number(gatewaysAbsorb),
            "segment_margin": .number(segmentMargin), "gateway_margin": .number(gatewayMargin),
            "pushes_per_segment": .number(Double(pushesPerSegment)),
            "reaches_target": .bool(unreachable == nil), "reasons": .array(reasons.map { .string($0) }),
        ]
        if let floor = input.firstRingNanoseconds { object["first_ring_ms"] = .number(Double(floor) / 1e6) }
        if let unreachable { object["unreachable"] = .string(unreachable) }
        return .object(object)
    }
}
