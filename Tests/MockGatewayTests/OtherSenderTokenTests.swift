// A token registered to another sender (another Firebase project, another app): FCM's
// SENDER_ID_MISMATCH and APNs' DeviceTokenNotForTopic, set from the configuration file and
// the control API, answered, recorded and counted like every other answer.
import Foundation
import HTTPCore
import JSON
import PushModel
import Testing
@testable import MockGateway

@Suite struct OtherSenderTokenTests {
    /// Google's answer, as FCM sends it (fcm.md, Responses: 403 PERMISSION_DENIED), exactly:
    /// one FcmError detail and nothing else (no BadRequest: the message itself is fine).
    @Test func fcmAnswersSenderIDMismatch() throws {
        var configuration = GatewayConfiguration()
        configuration.tokens = TokenConfiguration(otherSender: ["other_project_token"])
        let h = try Harness(configuration)
        let response = h.fcmMessage(#"{"token":"other_project_token","data":{"k":"v"}}"#)
        #expect(response.status == 403)
        #expect(header(response, "content-type") == "application/json; charset=UTF-8")
        let expected = try JSONParser.parse(#"""
            {"error": {"code": 403, "message": "SenderId mismatch", "status": "PERMISSION_DENIED",
                       "details": [{"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError",
                                    "errorCode": "SENDER_ID_MISMATCH"}]}}
            """#)
        #expect(json(response) == expected)
        #expect(h.observer.last?.reason == "SENDER_ID_MISMATCH")
        #expect(h.observer.last?.route == .fcm)
        // A dry run checks the token as a send does.
        let dryRun = h.fcm(#"{"validate_only":true,"message":{"token":"other_project_token"}}"#)
        #expect(dryRun.status == 403)
        #expect(GoogleErrorBody(dryRun).fcmErrorCode == "SENDER_ID_MISMATCH")
        // Other tokens are unaffected.
        #expect(h.fcmMessage(#"{"token":"\#(fcmToken)"}"#).status == 200)
    }

    /// The gateway's FcmError code table and the wire agree (PushModel's FCMErrorCode).
    @Test func errorMatchesTheCodeTable() {
        let error = FCMService.senderIDMismatchError()
        #expect(error.code == FCMErrorCode.senderIdMismatch.status)
        #expect(error.status == FCMErrorCode.senderIdMismatch.canonicalStatus)
        #expect(error.reason == "SENDER_ID_MISMATCH")
    }

    /// APNs has no sender id; a token of another app is DeviceTokenNotForTopic (apns.md, 400).
    @Test func apnsAnswersDeviceTokenNotForTopic() throws {
        let otherAppToken = String(repeating: "cd", count: 32)
        var configuration = GatewayConfiguration()
        configuration.tokens = TokenConfiguration(otherSender: [otherAppToken.uppercased()])
        let h = try Harness(configuration)
        let response = h.push(token: otherAppToken)
        #expect(response.status == 400)
        #expect(reason(response) == "DeviceTokenNotForTopic")
        #expect(json(response)?["timestamp"] == nil)
        #expect(h.push(token: deviceToken).status == 200)
    }

    @Test func configurationFileTakesOtherSenderTokens() throws {
        let configuration = try GatewayConfiguration.parse(json: Array("""
            {"tokens": {"other_sender": ["fcm_of_project_b"], "bad": ["bad1"]}}
            """.utf8))
        #expect(configuration.tokens.otherSender == ["fcm_of_project_b"])
        let registry = DeviceTokenRegistry(configuration: configuration.tokens, nowMillis: 0)
        #expect(registry.state(of: "fcm_of_project_b") == .otherSender)
        #expect(registry.counts().otherSender == 1)
        #expect(registry.counts().bad == 1)
        #expect {
            _ = try GatewayConfiguration.parse(json: Array(#"{"tokens":{"other_sender":[1]}}"#.utf8))
        } throws: { ($0 as? GatewayConfigurationError)?.keyPath.hasPrefix("tokens.other_sender") == true }
    }

    /// Set through the control API, answered, written to the record file and counted in
    /// /metrics like any other answer; POST /reset puts the configured state back.
    @Test func controlAPIRecordAndMetrics() throws {
        let path = NSTemporaryDirectory() + "pushproof-\(UUID().uuidString)-other-sender.jsonl"
        defer { unlink(path) }
        let recorder = Recorder(file: try RecordFile(path: path))
        let metrics = GatewayMetrics()
        let gateway = try MockGateway(configuration: GatewayConfiguration(), observers: [recorder, metrics])
        let admin = AdminAPI(gateway: gateway, metrics: metrics, recorder: recorder) {
            .init(openConnections: 0, acceptedConnections: 0, requestsServed: 0)
        }
        let adminConnection = ConnectionContext(id: 100, version: .http1_1, isTLS: false, peer: "127.0.0.1:1")
        func control(_ method: String, _ path: String, _ body: String = "") -> (Int, JSONValue?) {
            let response = admin.handle(HTTPRequest(method: method, path: path, body: Array(body.utf8), version: .http1_1),
                                        on: adminConnection)
            return (response.status, try? JSONParser.parse(response.body))
        }
        let token = "dGVzdA:APA91b-other_project"

        let (putStatus, putBody) = control("PUT", "/tokens/\(token)", #"{"state":"other_sender"}"#)
        #expect(putStatus == 200)
        #expect(putBody?["state"] == "other_sender")
        #expect(putBody?["known"] == true)
        #expect(control("GET", "/tokens").1?["other_sender"] == 1)
        let (badStatus, badBody) = control("PUT", "/tokens/\(token)", #"{"state":"mismatch"}"#)
        #expect(badStatus == 400)
        #expect(badBody?["error"]?.stringValue?.contains("other_sender") == true)

        let connection = ConnectionContext(id: 1, version: .http2, isTLS: true, peer: "127.0.0.1:2")
        gateway.connectionOpened(connection)
        let request = HTTPRequest(method: "POST", path: "/v1/projects/demo/messages:send",
                                  headers: [HTTPHeader("authorization", "Bearer ya29.x"), HTTPHeader("content-type", "application/json")],
                                  body: Array(#"{"message":{"token":"\#(token)"}}"#.utf8), connectionID: 1, streamID: 1)
        #expect(gateway.handle(request, on: connection).status == 403)
        recorder.file?.flush()
        let line = try #require(try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").last)
        let recorded = try JSONParser.parse(String(line))
        #expect(recorded["route"] == "fcm")
        #expect(recorded["response"]?["status"] == 403)
        #expect(recorded["response"]?["reason"] == "SENDER_ID_MISMATCH")

        let metricsResponse = admin.handle(HTTPRequest(method: "GET", path: "/metrics", version: .http1_1), on: adminConnection)
        let text = String(decoding: metricsResponse.body, as: UTF8.self)
        #expect(text.contains(#"pushproof_requests_total{route="fcm",status="403",reason="SENDER_ID_MISMATCH"} 1"#))

        // POST /tokens takes the configuration's shape, other_sender included.
        let (bulkStatus, bulkBody) = control("POST", "/tokens", #"{"other_sender":["a","b"]}"#)
        #expect(bulkStatus == 200)
        #expect(bulkBody?["other_sender"] == 3)
        #expect(control("POST", "/reset").0 == 200)
        #expect(control("GET", "/tokens/\(token)").1?["state"] == "valid")
    }
}
