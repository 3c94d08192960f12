import Foundation
import HTTPCore
import JSON
import PushModel
import Testing
@testable import MockGateway

/// Bodies over a route's limit are answered from their size alone: a hostile many-key body
/// (950 KB) held an event loop for seconds while it was parsed and judged (issue 9, row 1).
@Suite("Hostile bodies")
struct HostileBodyTests {
    static let specsDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Specs").path

    /// 6 KB that is not even JSON: Apple's size check answers, and the judge does not parse it.
    @Test func anAPNsBodyOverTheVoIPLimitIs413WithoutAParse() throws {
        let notJSON = String(repeating: "{\"", count: 3_000)
        for judge in [nil, try SpecJudge(directory: Self.specsDirectory)] {
            let h = try Harness(judge: judge)
            let response = h.push(payload: notJSON)
            #expect(response.status == 413)
            #expect(reason(response) == "PayloadTooLarge")
            if judge != nil {
                let violations = h.observer.last?.verdict?.judgement?.violations ?? []
                #expect(violations.count == 1)
                #expect(violations.first?.rule == "body-size", "judged from the size, not parsed: \(violations)")
            }
        }
    }

    @Test func anFCMBodyOverTheRequestLimitIsRefusedBeforeParsing() throws {
        let h = try Harness()
        let limit = try #require(GatewayRoute.fcm.maxBodyBytes)
        let response = h.fcm(String(repeating: "{", count: limit + 1))
        #expect(response.status == 400)
        let body = json(response)
        #expect(body?["error"]?["status"] == "INVALID_ARGUMENT")
        #expect(body?["error"]?["message"] == .string("Request payload size exceeds the limit: \(limit) bytes."))
        // At the limit it is parsed (and is not JSON).
        let atLimit = json(h.fcm(String(repeating: "{", count: limit)))
        #expect(atLimit?["error"]?["message"]?.stringValue?.hasPrefix("Invalid JSON payload received.") == true)
    }

    @Test func aTokenFormOverItsLimitIsRefusedBeforeParsing() throws {
        let h = try Harness()
        let limit = try #require(GatewayRoute.oauth.maxBodyBytes)
        let form = "grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&assertion=" + String(repeating: "a", count: limit)
        let response = h.send(path: "/token", headers: [HTTPHeader("content-type", "application/x-www-form-urlencoded")],
                              body: Array(form.utf8))
        #expect(response.status == 400)
        #expect(json(response)?["error"] == "invalid_request")
        #expect(json(response)?["error_description"] == .string("Request payload size exceeds the limit: \(limit) bytes."))
    }
}
