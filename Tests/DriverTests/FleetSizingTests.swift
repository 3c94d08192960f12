import Driver
import JSON
import Testing

@Suite struct FleetSizingTests {
    static func sizing(pushes: Int, withinMilliseconds: UInt64, sender: Double, gateway: Double, headroom: Double = 0.7,
                       firstRingMilliseconds: UInt64? = nil) throws -> FleetSizing {
        try FleetSizing(.init(pushes: pushes, withinNanoseconds: withinMilliseconds * 1_000_000, senderRate: sender, gatewayRate: gateway,
                              headroom: headroom, firstRingNanoseconds: firstRingMilliseconds.map { $0 * 1_000_000 }))
    }

    /// 200,000 members rung on 2 devices each (399,998 pushes) within 2 s: 199,999 pushes/s.
    @Test func aTwoHundredThousandMemberCall() throws {
        let sizing = try Self.sizing(pushes: 399_998, withinMilliseconds: 2000, sender: 18_400, gateway: 76_900)
        #expect(sizing.input.neededRate == 199_999)
        // 199,999 / 12,880 = 15.53; 199,999 / 53,830 = 3.72.
        #expect(sizing.segments == 16 && sizing.gateways == 4)
        #expect(sizing.segmentsDeliver == 294_400 && sizing.gatewaysAbsorb == 307_600)
        #expect(abs(sizing.segmentMargin - 1.472) < 0.001 && abs(sizing.gatewayMargin - 1.538) < 0.001)
        #expect(sizing.pushesPerSegment == 25_000)
        #expect(sizing.unreachable == nil)
        #expect(sizing.reasons == [
            "N = ceil(399,998 pushes / 2 s / (18,400 pushes/s a segment x 0.7 headroom)) = 16: 16 segments deliver 294,400 pushes/s against 199,999 needed: 1.47x margin",
            "M = ceil(399,998 pushes / 2 s / (76,900 pushes/s a gateway core x 0.7 headroom)) = 4: 4 gateways absorb 307,600 pushes/s against 199,999 needed: 1.54x margin",
        ])
        let json = sizing.json
        #expect(json["segments"]?.intValue == 16 && json["gateways"]?.intValue == 4)
        #expect(json["reaches_target"]?.boolValue == true && json["unreachable"] == nil)
    }

    @Test(arguments: [
        // pushes, within ms, sender, gateway, headroom, N, M
        (1_000, 1_000, 20_000.0, 80_000.0, 0.7, 1, 1),        // one segment and one gateway are enough
        (14_000, 1_000, 10_000.0, 7_000.0, 0.7, 2, 3),        // 14,000 / 7,000 is exactly 2: not 3
        (100_000, 500, 20_000.0, 90_000.0, 1.0, 10, 3),       // no headroom: 200,000 / 20,000 and / 90,000
        (59_998, 1_000, 11_000.0, 70_000.0, 0.5, 11, 2),      // 59,998 / 5,500 = 10.9
    ])
    func countsRoundUp(pushes: Int, within: UInt64, sender: Double, gateway: Double, headroom: Double, segments: Int, gateways: Int) throws {
        let sizing = try Self.sizing(pushes: pushes, withinMilliseconds: within, sender: sender, gateway: gateway, headroom: headroom)
        #expect(sizing.segments == segments && sizing.gateways == gateways)
        #expect(sizing.unreachable == nil)
        // At least what is needed, on the headroom's share of each rate.
        #expect(Double(sizing.segments) * sender * headroom >= sizing.input.neededRate * (1 - 1e-12))
        #expect(Double(sizing.segments - 1) * sender * headroom < sizing.input.neededRate)
    }

    @Test func theTargetAlreadyMetByOneSaysSo() throws {
        let sizing = try Self.sizing(pushes: 1_000, withinMilliseconds: 1_000, sender: 20_000, gateway: 80_000)
        #expect(sizing.segments == 1 && sizing.gateways == 1)
        #expect(sizing.segmentMargin == 20 && sizing.gatewayMargin == 80)
        #expect(sizing.reasons[0].hasSuffix("= 1: 1 segment delivers 20,000 pushes/s against 1,000 needed: 20x margin"))
    }

    @Test func aPushSlowerThanTheTargetIsUnreachable() throws {
        // 10 pushes in 1 ms at 500 pushes/s a segment: 20 segments, each with half a push.
        let sizing = try Self.sizing(pushes: 10, withinMilliseconds: 1, sender: 500, gateway: 80_000, headroom: 1)
        #expect(sizing.segments == 10, "never more segments than pushes")
        #expect(sizing.unreachable == "20 segments would each have less than one push: a single push at 500 pushes/s takes longer than 1 ms")
        #expect(sizing.json["reaches_target"]?.boolValue == false)
    }

    @Test func theFirstRingIsAFloorNoFleetBeats() throws {
        let sizing = try Self.sizing(pushes: 100_000, withinMilliseconds: 5, sender: 20_000, gateway: 80_000, firstRingMilliseconds: 5)
        #expect(sizing.unreachable == "the first phone of a call rang 5 ms after it at the soonest on this machine: no fleet rings everyone within 5 ms")
        let inTime = try Self.sizing(pushes: 1_000, withinMilliseconds: 100, sender: 20_000, gateway: 80_000, firstRingMilliseconds: 4)
        #expect(inTime.unreachable == nil)
    }

    @Test func beyondTheFleetLimitsIsUnreachable() throws {
        let segments = try Self.sizing(pushes: 10_000_000, withinMilliseconds: 1_000, sender: 1_000, gateway: 10_000_000, headroom: 1)
        #expect(segments.segments == 10_000)
        #expect(segments.unreachable == "10000 segments are more than the 1000 a fleet can have")
        let gateways = try Self.sizing(pushes: 10_000_000, withinMilliseconds: 1_000, sender: 1_000_000, gateway: 10_000, headroom: 1)
        #expect(gateways.gateways == 1_000)
        #expect(gateways.unreachable == "1000 gateways are more than the 100 a fleet can have")
    }

    @Test(arguments: [
        (0, 1_000 as UInt64, 1_000.0, 1_000.0, 0.7, "target-members"),
        (10, 0, 1_000, 1_000, 0.7, "within"),
        (10, 1_000, 0, 1_000, 0.7, "sender-rate"),
        (10, 1_000, -5, 1_000, 0.7, "sender-rate"),
        (10, 1_000, .nan, 1_000, 0.7, "sender-rate"),
        (10, 1_000, 1_000, 0, 0.7, "gateway-rate"),
        (10, 1_000, 1_000, .infinity, 0.7, "gateway-rate"),
        (10, 1_000, 1_000, 1_000, 0, "headroom"),
        (10, 1_000, 1_000, 1_000, 1.5, "headroom"),
    ])
    func inputsThatSizeNothingAreRefused(pushes: Int, within: UInt64, sender: Double, gateway: Double, headroom: Double, option: String) {
        #expect {
            try FleetSizing(.init(pushes: pushes, withinNanoseconds: within * 1_000_000, senderRate: sender, gatewayRate: gateway, headroom: headroom))
        } throws: { error in
            (error as? FleetSizing.InputError)?.option == option
        }
    }
}
