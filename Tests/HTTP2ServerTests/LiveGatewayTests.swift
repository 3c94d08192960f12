// The real `pushproof serve` on loopback, driven by curl, for the serve-hardening changes that
// cross the gateway and the transport. Here rather than in MockGatewayTests because this is
// the serve-side test module with PushproofTestSupport (ServeProcess, curl) among its
// dependencies.
import Foundation
import HTTPCore
import Testing

/// JSON text as Foundation objects (this module does not depend on the JSON module), so two
/// documents compare regardless of key order and spacing.
private func parsed(_ text: some StringProtocol) -> NSObject? {
    (try? JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed])) as? NSObject
}

@Suite(.serialized) struct LiveGatewayTests {
    /// A token registered to another Firebase project, from the configuration file and from
    /// the control API: Google's 403 SENDER_ID_MISMATCH, recorded and counted like any answer.
    @Test func senderIDMismatchOverTheWire() throws {
        let directory = try TemporaryDirectory("other-sender")
        let fromConfig = "cfg:APA91b-project_b"
        let fromAdmin = "adm:APA91b-project_c"
        let config = try directory.write("gateway.json", #"{"tokens": {"other_sender": ["\#(fromConfig)"]}}"#)
        let record = directory.file("record.jsonl")
        let serve = try ServeProcess(["--h2c", "--config", config, "--record", record, "--quiet"], directory: directory.path)
        let url = "\(serve.baseURL)/v1/projects/demo-project/messages:send"
        func send(_ token: String) throws -> (status: Int, body: NSObject?) {
            let result = try curl(["--http2-prior-knowledge", "-w", "\n%{http_code}", "-H", "authorization: Bearer ya29.any",
                                   "-H", "content-type: application/json",
                                   "-d", #"{"message":{"token":"\#(token)","data":{"k":"v"}}}"#, url])
            #expect(result.status == 0, "\(result.error)")
            let parts = result.output.split(separator: "\n", omittingEmptySubsequences: false)
            let body = parts.dropLast().joined(separator: "\n")
            return (Int(parts.last ?? "") ?? 0, parsed(body))
        }
        let expected = parsed(#"""
            {"error": {"code": 403, "message": "SenderId mismatch", "status": "PERMISSION_DENIED",
                       "details": [{"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError",
                                    "errorCode": "SENDER_ID_MISMATCH"}]}}
            """#)

        let configured = try send(fromConfig)
        #expect(configured.status == 403)
        #expect(configured.body == expected)

        #expect(try send(fromAdmin).status == 200, "a token is valid until marked")
        let put = try curl(["-X", "PUT", "-d", #"{"state":"other_sender"}"#, "\(serve.adminURL)/tokens/\(fromAdmin)"])
        #expect((parsed(put.output) as? NSDictionary)?["state"] as? String == "other_sender")
        let marked = try send(fromAdmin)
        #expect(marked.status == 403)
        #expect(marked.body == expected)

        let metrics = try curl(["\(serve.adminURL)/metrics"]).output
        #expect(metrics.contains(#"pushproof_requests_total{route="fcm",status="403",reason="SENDER_ID_MISMATCH"} 2"#))
        #expect(metrics.contains(#"pushproof_requests_total{route="fcm",status="200",reason=""} 1"#))
        let counts = parsed(try curl(["\(serve.adminURL)/tokens"]).output) as? NSDictionary
        #expect(counts?["other_sender"] as? Int == 2)

        let (status, stderr) = serve.stop()
        #expect(status == 0, "\(stderr)")
        let lines = try String(contentsOfFile: record, encoding: .utf8).split(separator: "\n").compactMap { parsed($0) as? NSDictionary }
        #expect(lines.count == 3)
        let mismatches = lines.filter { ($0["response"] as? NSDictionary)?["reason"] as? String == "SENDER_ID_MISMATCH" }
        #expect(mismatches.count == 2)
        #expect(mismatches.allSatisfy { $0["route"] as? String == "fcm" && ($0["response"] as? NSDictionary)?["status"] as? Int == 403 })
    }

    /// The rapid-reset defence in the real server: an attacker's connection gets
    /// GOAWAY(ENHANCE_YOUR_CALM) and is closed, and the gateway keeps answering others.
    @Test func rapidResetAttackerIsCutOffOthersAreServed() throws {
        let directory = try TemporaryDirectory("rapid-reset")
        let serve = try ServeProcess(["--h2c", "--quiet"], directory: directory.path)
        let attacker = try RawClient(port: serve.port)
        let frames = FrameReader(attacker)
        var bytes = prefaceAndSettings
        for index in 0..<5_000 {
            let streamID = UInt32(2 * index + 1)
            bytes += requestFrame(streamID: streamID, endStream: false)
            bytes += resetFrame(streamID: streamID, errorCode: HTTP2ErrorCode.cancel)
        }
        attacker.send(bytes)
        // Every frame until the server closes the connection.
        var goAwayErrorCodes: [[UInt8]] = []
        while let frame = frames.next() {
            if frame.type == 0x7 { goAwayErrorCodes.append(Array(frame.payload.dropFirst(4).prefix(4))) }
        }
        #expect(goAwayErrorCodes == [[0, 0, 0, 0xb]], "one GOAWAY(ENHANCE_YOUR_CALM)")
        _ = shutdown(attacker.fd, Int32(SHUT_WR))  // ends the server's lingering close at once

        let push = try curl(["--http2-prior-knowledge", "-w", "%{http_code}", "-o", "/dev/null", "-H", "apns-push-type: alert",
                             "-H", "apns-topic: com.example.app", "-H", "authorization: bearer any", "-d", #"{"aps":{"alert":"hi"}}"#,
                             "\(serve.baseURL)/3/device/\(String(repeating: "ab", count: 32))"])
        #expect(push.output == "200")
        let (status, stderr) = serve.stop()
        #expect(status == 0, "\(stderr)")
    }
}
