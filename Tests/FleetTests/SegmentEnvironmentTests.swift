import Testing
@testable import Fleet

@Suite struct SegmentEnvironmentTests {
    static let gateways = "pushproof-storm-1-gw-0.pushproof-storm-1-gw.load.svc,pushproof-storm-1-gw-1.pushproof-storm-1-gw.load.svc"
    /// What the Indexed Job and the rendered manifest give pod 2 of 3.
    static let pod: [String: String] = [
        "JOB_COMPLETION_INDEX": "2", "HOSTNAME": "pushproof-storm-1-segment-2", "PUSHPROOF_RUN": "storm-1",
        "PUSHPROOF_JOB": "pushproof-storm-1-segment", "PUSHPROOF_SEGMENTS": "3", "PUSHPROOF_START_AT": "1796313600000",
        "PUSHPROOF_GATEWAYS": gateways,
    ]

    func refusal(_ environment: [String: String]) -> String? {
        do { _ = try SegmentEnvironment.driveArguments(environment: environment); return nil } catch { return error.message }
    }

    @Test func theJobsEnvironmentBecomesSegmentStartAndGateway() throws {
        #expect(try SegmentEnvironment.driveArguments(environment: Self.pod) == [
            "--segment", "2/3", "--start-at", "1796313600000", "--gateway", "http://pushproof-storm-1-gw-0.pushproof-storm-1-gw.load.svc:8443",
            "--token-url", "http://pushproof-storm-1-gw-0.pushproof-storm-1-gw.load.svc:8443/token"])
        var second = Self.pod
        second["JOB_COMPLETION_INDEX"] = "1"
        second["HOSTNAME"] = "pushproof-storm-1-segment-1"
        #expect(try SegmentEnvironment.driveArguments(environment: second).suffix(3) == [
            "http://pushproof-storm-1-gw-1.pushproof-storm-1-gw.load.svc:8443",
            "--token-url", "http://pushproof-storm-1-gw-1.pushproof-storm-1-gw.load.svc:8443/token"], "its access tokens from its own replica")
    }

    @Test func weightsAndTheAdminPortPassThrough() throws {
        var environment = Self.pod
        environment["PUSHPROOF_SEGMENT_WEIGHTS"] = "1/2,1/4,1/4"
        environment["PUSHPROOF_ADMIN_PORT"] = "8444"
        #expect(try SegmentEnvironment.driveArguments(environment: environment) == [
            "--segment", "2/3", "--segment-weights", "1/2,1/4,1/4", "--start-at", "1796313600000",
            "--gateway", "http://pushproof-storm-1-gw-0.pushproof-storm-1-gw.load.svc:8443",
            "--token-url", "http://pushproof-storm-1-gw-0.pushproof-storm-1-gw.load.svc:8443/token",
            "--admin", "http://pushproof-storm-1-gw-0.pushproof-storm-1-gw.load.svc:8444"])
    }

    @Test func theHostnameStandsInForAMissingIndex() throws {
        var environment = Self.pod
        environment["JOB_COMPLETION_INDEX"] = nil
        #expect(try SegmentEnvironment.driveArguments(environment: environment).prefix(2) == ["--segment", "2/3"])
    }

    @Test func inconsistentEnvironmentsAreRefused() {
        var disagreeing = Self.pod
        disagreeing["HOSTNAME"] = "pushproof-storm-1-segment-0"
        #expect(refusal(disagreeing)?.contains("disagree") == true)
        var foreign = Self.pod
        foreign["HOSTNAME"] = "some-other-pod"
        #expect(refusal(foreign)?.contains("not pushproof-storm-1-segment-<index>") == true)
        var outside = Self.pod
        outside["JOB_COMPLETION_INDEX"] = "3"
        outside["HOSTNAME"] = "pushproof-storm-1-segment-3"
        #expect(refusal(outside)?.contains("outside 0..<3") == true)
        var noStart = Self.pod
        noStart["PUSHPROOF_START_AT"] = nil
        #expect(refusal(noStart)?.contains("PUSHPROOF_START_AT is not set") == true)
        var nothing = Self.pod
        nothing["JOB_COMPLETION_INDEX"] = nil
        nothing["HOSTNAME"] = nil
        #expect(refusal(nothing)?.contains("neither JOB_COMPLETION_INDEX") == true)
        var notANumber = Self.pod
        notANumber["JOB_COMPLETION_INDEX"] = "two"
        #expect(refusal(notANumber)?.contains("not a number") == true)
    }
}
