// The rules over the whole traffic and the merge by arrival, without files: several recordings
// (gateway replicas) judged as one.
import Encoding
import Foundation
import JSON
import PushModel
import RecordCheck
import RecordLine
import SpecValidator
import Testing

@Suite struct ReplicaRulesTests {
    static let second: UInt64 = 1_000_000_000
    static let start: UInt64 = 1_790_000_000 * second

    /// A provider token as the record line keeps it (`Redaction.authorization`: signature replaced).
    static func authorization(kid: String = "KEY1234567", team: String = "TEAM123456", iat: Int) -> String {
        let header = Base64URL.encode(Array(#"{"alg":"ES256","kid":"\#(kid)"}"#.utf8))
        let claims = Base64URL.encode(Array(#"{"iss":"\#(team)","iat":\#(iat)}"#.utf8))
        return Redaction.authorization("bearer \(header).\(claims).c2lnbmF0dXJl")
    }

    static func apns(_ token: String = "abcd", seq: Int, arrival: UInt64, status: Int = 200, reason: String? = nil,
                     authorization: String? = nil) -> RecordedExchange {
        var exchange = RecordedExchange(sequence: seq, route: .apns, path: "/3/device/\(token)",
                                        headers: authorization.map { [("authorization", $0)] } ?? [], body: [], status: status,
                                        reason: reason, answeredNanos: arrival + 2_000_000)
        exchange.arrivalNanos = arrival
        return exchange
    }

    static func fcm(_ token: String, seq: Int, arrival: UInt64, status: Int = 200, reason: String? = nil) -> RecordedExchange {
        var exchange = RecordedExchange(sequence: seq, route: .fcm, path: "/v1/projects/p/messages:send",
                                        body: Array(#"{"message":{"token":"\#(token)"}}"#.utf8), status: status, reason: reason,
                                        answeredNanos: arrival + 2_000_000)
        exchange.arrivalNanos = arrival
        return exchange
    }

    static func gone(_ pushes: [(RecordedExchange, String)]) -> GoneTokenPushes {
        var rule = GoneTokenPushes()
        for (push, replica) in pushes.sorted(by: { $0.0.arrivalNanos! < $1.0.arrivalNanos! }) {
            rule.observe(push, at: RecordPlace(replica: replica, sequence: push.sequence!), arrivalNanos: push.arrivalNanos)
        }
        return rule
    }

    static func updates(_ requests: [(RecordedExchange, String)]) -> ProviderTokenUpdatesAcrossReplicas {
        var rule = ProviderTokenUpdatesAcrossReplicas()
        for (request, replica) in requests.sorted(by: { $0.0.arrivalNanos! < $1.0.arrivalNanos! }) {
            rule.observe(request, at: RecordPlace(replica: replica, sequence: request.sequence!), arrivalNanos: request.arrivalNanos)
        }
        return rule
    }

    // MARK: The merge

    @Test func theMergeTakesTheEarliestHeadTiesToTheEarlierStreamAndKeepsEachStreamsOrder() {
        // Stream 1 holds a line answered late (arrived at 2, written after 5): it keeps its place.
        let streams: [[UInt64]] = [[1, 4, 6], [3, 5, 2, 7], [], [4]]
        var positions = streams.map { _ in 0 }
        let sources: [() -> (stream: Int, time: UInt64)?] = streams.indices.map { index in
            {
                guard positions[index] < streams[index].count else { return nil }
                defer { positions[index] += 1 }
                return (index, streams[index][positions[index]])
            }
        }
        var merge = ArrivalOrderMerge(sources, arrival: \.time)
        var merged: [String] = []
        while let (source, element) = merge.next() {
            #expect(source == element.stream)
            merged.append("\(source):\(element.time)")
        }
        #expect(merged == ["0:1", "1:3", "0:4", "3:4", "1:5", "1:2", "0:6", "1:7"])
    }

    // MARK: Pushes to gone tokens

    @Test func aPushArrivingAfterAnotherReplicaAnsweredTheTokenGoneFailsNamingBoth() {
        let rule = Self.gone([
            (Self.apns(seq: 1, arrival: Self.start, status: 410, reason: "Unregistered"), "gw-a"),
            (Self.apns(seq: 7, arrival: Self.start + Self.second), "gw-b"),
        ])
        #expect(rule.findings.count == 1)
        let finding = rule.findings.first[0]
        #expect(finding.push == RecordPlace(replica: "gw-b", sequence: 7))
        #expect(finding.gone == RecordPlace(replica: "gw-a", sequence: 1))
        #expect(finding.goneAnswer == "410 Unregistered")
        #expect(finding.afterNanos == Self.second - 2_000_000)
        #expect(finding.description.hasPrefix("push gw-b #7 to abcd arrived 998 ms after gw-a #1 was answered 410 Unregistered"),
                "\(finding.description)")
        #expect(rule.judged == 2)
    }

    @Test func expiredTokenAndFCMUnregisteredAreGoneTooAndWithinOneReplicaTheSameRuleHolds() {
        let rule = Self.gone([
            (Self.apns("ABCD", seq: 1, arrival: Self.start, status: 410, reason: "ExpiredToken"), "gw-a"),
            (Self.apns("abcd", seq: 2, arrival: Self.start + Self.second, status: 410, reason: "ExpiredToken"), "gw-a"),
            (Self.fcm("f1", seq: 3, arrival: Self.start, status: 404, reason: "UNREGISTERED"), "gw-a"),
            (Self.fcm("f1", seq: 9, arrival: Self.start + 2 * Self.second), "gw-b"),
        ])
        #expect(rule.findings.first.map(\.push) == [RecordPlace(replica: "gw-a", sequence: 2), RecordPlace(replica: "gw-b", sequence: 9)])
    }

    @Test func aPushBeforeTheGoneAnswerOrWhileItWasDecidedPasses() {
        let rule = Self.gone([
            (Self.apns(seq: 4, arrival: Self.start - Self.second), "gw-b"),
            (Self.apns(seq: 1, arrival: Self.start, status: 410, reason: "Unregistered"), "gw-a"),
            // On its way while gw-a decided (answered 2 ms after arrival): it could not have known.
            (Self.apns(seq: 5, arrival: Self.start + 1_000_000), "gw-b"),
            // Another token, and a bad token (not gone), pushed again.
            (Self.apns("beef", seq: 6, arrival: Self.start + Self.second), "gw-b"),
            (Self.apns("dead", seq: 2, arrival: Self.start, status: 400, reason: "BadDeviceToken"), "gw-a"),
            (Self.apns("dead", seq: 7, arrival: Self.start + Self.second), "gw-b"),
        ])
        #expect(rule.findings.isEmpty, "\(rule.findings.first.map(\.description))")
    }

    @Test func aTokenTheGoneAnsweringGatewayAcceptsAgainIsLiveAgain() {
        let rule = Self.gone([
            (Self.apns(seq: 1, arrival: Self.start, status: 410, reason: "Unregistered"), "gw-a"),
            (Self.apns(seq: 2, arrival: Self.start + Self.second), "gw-a"),
            (Self.apns(seq: 3, arrival: Self.start + 2 * Self.second), "gw-b"),
        ])
        #expect(rule.findings.isEmpty, "\(rule.findings.first.map(\.description))")
    }

    // MARK: Provider-token updates per team

    @Test func theRecordedTokenIsReadFromTheRedactedAuthorization() {
        let recorded = Self.authorization(iat: 1_790_000_000)
        #expect(recorded.hasSuffix(".<redacted>"))
        #expect(RecordedProviderToken(authorization: recorded)
                == RecordedProviderToken(keyID: "KEY1234567", teamID: "TEAM123456", issuedAt: "1790000000"))
        #expect(RecordedProviderToken(authorization: "bearer t") == nil)
        #expect(RecordedProviderToken(authorization: "Bearer abc.def.<redacted>") == nil)
        #expect(RecordedProviderToken(authorization: "ya29.a0…<redacted>") == nil)
    }

    @Test func twoReplicasEachMintingTheirOwnTokenWithinTwentyMinutesTripTheTeamsLimit() {
        let rule = Self.updates([
            (Self.apns(seq: 1, arrival: Self.start, authorization: Self.authorization(iat: 1_790_000_000)), "gw-a"),
            (Self.apns(seq: 2, arrival: Self.start + Self.second, authorization: Self.authorization(iat: 1_790_000_000)), "gw-a"),
            (Self.apns(seq: 1, arrival: Self.start + 300 * Self.second, authorization: Self.authorization(iat: 1_790_000_300)), "gw-b"),
            (Self.apns(seq: 2, arrival: Self.start + 301 * Self.second, authorization: Self.authorization(iat: 1_790_000_300)), "gw-b"),
        ])
        // Both of gw-b's requests: Apple refuses the token on each, it never becomes the team's.
        #expect(rule.findings.count == 2)
        #expect(rule.judged == 4)
        let finding = rule.findings.first[0]
        #expect(finding.place == RecordPlace(replica: "gw-b", sequence: 1))
        #expect(finding.previous == RecordPlace(replica: "gw-a", sequence: 1))
        #expect(finding.sinceSeconds == 300)
        #expect(finding.description.hasPrefix("gw-b #1: team TEAM123456's new provider token (kid KEY1234567, iat 1790000300) 300 s "
                                              + "after its previous new one (gw-a #1): Apple answers 429 TooManyProviderTokenUpdates"),
                "\(finding.description)")
    }

    @Test func oneTokenSharedByReplicasATokenTwentyMinutesLaterAndAnotherTeamPass() {
        let rule = Self.updates([
            (Self.apns(seq: 1, arrival: Self.start, authorization: Self.authorization(iat: 1_790_000_000)), "gw-a"),
            (Self.apns(seq: 1, arrival: Self.start + Self.second, authorization: Self.authorization(iat: 1_790_000_000)), "gw-b"),
            (Self.apns(seq: 2, arrival: Self.start + 2 * Self.second, authorization: Self.authorization(team: "OTHER12345", iat: 1_790_000_002)), "gw-b"),
            (Self.apns(seq: 2, arrival: Self.start + 1200 * Self.second, authorization: Self.authorization(iat: 1_790_001_200)), "gw-a"),
            // The old token, still in use on another connection: not an update.
            (Self.apns(seq: 3, arrival: Self.start + 1201 * Self.second, authorization: Self.authorization(iat: 1_790_000_000)), "gw-b"),
            // A forged token the gateway refused as a token: Apple counts no update for it.
            (Self.apns(seq: 4, arrival: Self.start + 1202 * Self.second, status: 403, reason: "InvalidProviderToken",
                       authorization: Self.authorization(iat: 1_790_001_202)), "gw-b"),
        ])
        #expect(rule.findings.isEmpty, "\(rule.findings.first.map(\.description))")
        #expect(rule.judged == 5)
    }

    /// Within one replica the gateway judged the rule itself: its 429 stands (no second
    /// finding), and a new token it accepted (its updates forgotten between two runs) is the
    /// team's new one, which another replica's token then follows too soon.
    @Test func whatOneGatewayJudgedItselfStandsAndOnlyAnotherReplicasTokenIsAFinding() {
        let rule = Self.updates([
            (Self.apns(seq: 1, arrival: Self.start, authorization: Self.authorization(iat: 1_790_000_000)), "gw-a"),
            (Self.apns(seq: 2, arrival: Self.start + 60 * Self.second, status: 429, reason: "TooManyProviderTokenUpdates",
                       authorization: Self.authorization(iat: 1_790_000_060)), "gw-a"),
            (Self.apns(seq: 3, arrival: Self.start + 120 * Self.second, authorization: Self.authorization(iat: 1_790_000_120)), "gw-a"),
            (Self.apns(seq: 1, arrival: Self.start + 180 * Self.second, authorization: Self.authorization(iat: 1_790_000_180)), "gw-b"),
        ])
        #expect(rule.findings.first.map(\.place) == [RecordPlace(replica: "gw-b", sequence: 1)])
        #expect(rule.findings.first.map(\.previous) == [RecordPlace(replica: "gw-a", sequence: 3)])
        #expect(rule.findings.first.map(\.sinceSeconds) == [60])
        #expect(rule.judged == 3)
    }

    /// The gateway's rule and check's are one state machine.
    @Test func providerTokenUpdatesAdmitsKnownTokensAndRefusesANewOneWithinTwentyMinutes() {
        var updates = ProviderTokenUpdates()
        #expect(updates.admit("a", team: "T", nowSeconds: 100) == .new)
        #expect(updates.admit("a", team: "T", nowSeconds: 200) == .known)
        #expect(updates.admit("b", team: "T", nowSeconds: 1299) == .tooSoon(sinceSeconds: 1199))
        #expect(updates.admit("b", team: "U", nowSeconds: 1299) == .new)
        #expect(updates.admit("b", team: "T", nowSeconds: 1300) == .new)
        #expect(updates.teamCount == 2)
        updates.introduce("c", team: "T", nowSeconds: 1400)
        #expect(updates.admit("c", team: "T", nowSeconds: 1401) == .known)
        #expect(updates.admit("d", team: "T", nowSeconds: 1401) == .tooSoon(sinceSeconds: 1))
        updates.removeAll()
        #expect(updates.admit("d", team: "T", nowSeconds: 1402) == .new)
    }
}
