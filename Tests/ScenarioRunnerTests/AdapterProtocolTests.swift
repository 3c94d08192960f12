// The adapter protocol's rules, without a process: request lines, reply matching, and the
// reference adapter's answers (docs/adapter-protocol.md).
import Foundation
import Glibc
import JSON
import Scenario
@testable import ScenarioRunner
import Testing

private let access = GatewayAccess(apnsURL: "https://127.0.0.1:1", fcmURL: "https://127.0.0.1:1", tokenURL: "https://127.0.0.1:1/token",
                                   caFile: "/tmp/ca.pem", apnsKeyFile: "/tmp/key.p8", apnsKeyID: "KEY1", apnsTeamID: "TEAM1",
                                   serviceAccountFile: "/tmp/sa.json")

private func line(_ text: String) -> [UInt8] { Array(text.utf8) }

private func object(_ bytes: [UInt8]) throws -> JSONObject {
    #expect(bytes.last == UInt8(ascii: "\n"), "a request is one line")
    #expect(!bytes.dropLast().contains(UInt8(ascii: "\n")), "with no newline inside")
    return try #require(try JSONParser.parse(Array(bytes.dropLast())).objectValue)
}

struct AdapterConversationTests {
    @Test func helloCarriesTheVersionTheGatewayAndTheCredentialsByTheirProtocolNames() throws {
        var conversation = AdapterConversation()
        let hello = try object(conversation.hello(access))
        #expect(hello["id"]?.intValue == 1)
        #expect(hello["type"]?.stringValue == "hello")
        #expect(hello["protocol"]?.intValue == 1)
        let gateway = try #require(hello["gateway"]?.objectValue)
        #expect(gateway.keys.sorted() == ["apns_url", "ca_file", "fcm_url", "h2c", "token_url"])
        #expect(gateway["h2c"]?.boolValue == false)
        let credentials = try #require(hello["credentials"]?.objectValue)
        #expect(credentials.keys.sorted() == ["apns_cert_file", "apns_cert_key_file", "apns_key_file", "apns_key_id",
                                              "apns_team_id", "service_account_file"])
        #expect(credentials["apns_cert_file"]?.isNull == true, "the embedded gateway offers provider tokens only")
        #expect(credentials["apns_key_id"]?.stringValue == "KEY1")
    }

    /// A segment of a run split over machines says which, so a sender in front of one shared
    /// backend knows what it is part of; an unsplit run's hello has no `segment`.
    @Test func helloCarriesTheSegmentOfASplitRun() throws {
        var conversation = AdapterConversation()
        let hello = try object(conversation.hello(access, segment: (index: 1, count: 3)))
        #expect(hello["segment"]?["index"]?.intValue == 1)
        #expect(hello["segment"]?["count"]?.intValue == 3)
        var whole = AdapterConversation()
        #expect(try object(whole.hello(access))["segment"] == nil)
    }

    @Test func theGatewayAccessAnAdapterReadsIsTheOneHelloWrote() throws {
        var withCertificate = access
        withCertificate.apnsCertFile = "/tmp/cert.pem"
        withCertificate.apnsCertKeyFile = "/tmp/cert-key.pem"
        var conversation = AdapterConversation()
        let hello = try object(conversation.hello(withCertificate))
        let read = try GatewayAccess(helloGateway: try #require(hello["gateway"]?.objectValue),
                                     credentials: try #require(hello["credentials"]?.objectValue))
        #expect([read.apnsURL, read.fcmURL, read.tokenURL, read.caFile] == [access.apnsURL, access.fcmURL, access.tokenURL, access.caFile])
        #expect([read.apnsKeyFile, read.apnsKeyID, read.apnsTeamID, read.serviceAccountFile]
                == [access.apnsKeyFile, access.apnsKeyID, access.apnsTeamID, access.serviceAccountFile])
        #expect(read.apnsCertFile == "/tmp/cert.pem" && read.apnsCertKeyFile == "/tmp/cert-key.pem" && !read.h2c)
    }

    @Test func anAdapterRefusesAHelloWhoseURLsDisagreeWithH2c() throws {
        var cleartext = access
        cleartext.h2c = true
        let members = cleartext.helloMembers
        let gateway = try #require(members.gateway.objectValue), credentials = try #require(members.credentials.objectValue)
        #expect(throws: AdapterProtocolError("h2c is true but apns_url is 'https://127.0.0.1:1': cleartext HTTP/2 takes an http:// URL")) {
            try GatewayAccess(helloGateway: gateway, credentials: credentials)
        }
        var missing = credentials
        missing["apns_key_id"] = nil
        #expect(throws: AdapterProtocolError("hello needs \"apns_key_id\" (a string)")) {
            try GatewayAccess(helloGateway: try #require(access.helloMembers.gateway.objectValue), credentials: missing)
        }
    }

    @Test func aHelloReplyReadsBackAsTheHelloItWrote() throws {
        let hello = AdapterHello(name: "our-backend", version: "2.1", products: ["poolse", "yama"], capabilities: ["devices"])
        let reply = try #require(AdapterConversation.helloReply(id: 1, hello).objectValue)
        #expect(try AdapterConversation.hello(from: reply) == hello)
    }

    @Test func requestsAreNumberedInOrderAndEachReplyMustCarryItsID() throws {
        var conversation = AdapterConversation()
        _ = conversation.hello(access)
        _ = try conversation.reply(line(#"{"id":1,"ok":true}"#))
        let event = try object(conversation.event(index: 4, type: "call.placed", ["type": "call.placed", "call": "k1"]))
        #expect(event["id"]?.intValue == 2)
        #expect(event["type"]?.stringValue == "event")
        #expect(event["index"]?.intValue == 4)
        #expect(event["event"]?["call"]?.stringValue == "k1")
        #expect(conversation.pending?.label == "event 4 (call.placed)")
        #expect(throws: AdapterProtocolError("the reply to event 4 (call.placed) carries id 1, expected 2 (replies come in order)")) {
            try conversation.reply(line(#"{"id":1,"ok":true}"#))
        }
        #expect(conversation.pending == nil, "a wrong reply still answers the request: the conversation is over")
    }

    @Test func okFalseIsARefusalCarryingTheAdaptersError() {
        var conversation = AdapterConversation()
        _ = conversation.setup(["format": 1])
        #expect(throws: AdapterProtocolError("the adapter refused setup: no such room")) {
            try conversation.reply(line(#"{"id":1,"ok":false,"error":"no such room"}"#))
        }
    }

    @Test func aLineThatIsNotAJSONObjectOrLacksIdOrOkIsAnError() {
        for (reply, expected) in [
            ("hello there", "is not JSON"),
            ("[1]", "is not a JSON object"),
            (#"{"ok":true}"#, #"has no integer "id""#),
            (#"{"id":1}"#, #"has no boolean "ok""#),
            (#"{"id":1,"ok":"yes"}"#, #"has no boolean "ok""#),
        ] {
            var conversation = AdapterConversation()
            _ = conversation.devices()
            do {
                _ = try conversation.reply(line(reply))
                Issue.record("\(reply) was accepted")
            } catch {
                #expect(error.description.contains("the reply to devices"), "\(error)")
                #expect(error.description.contains(expected), "\(reply): \(error)")
            }
        }
    }

    @Test func unknownFieldsInAReplyAreIgnored() throws {
        var conversation = AdapterConversation()
        _ = conversation.hello(access)
        let reply = try conversation.reply(line(
            #"{"id":1,"ok":true,"sender":{"name":"rails","version":"7.1","build":"abc"},"products":["poolse"],"future":{"x":1}}"#))
        let hello = try AdapterConversation.hello(from: reply)
        #expect(hello == AdapterHello(name: "rails", version: "7.1", products: ["poolse"], capabilities: []))
        #expect(hello.displayName == "rails 7.1")
    }

    @Test func aLineNoRequestAskedForIsAnError() {
        var conversation = AdapterConversation()
        #expect(throws: AdapterProtocolError.self) { try conversation.reply(line(#"{"id":1,"ok":true}"#)) }
    }

    @Test func theHelloReplyIsChecked() {
        let cases: [(String, String)] = [
            (#"{"id":1,"ok":true,"protocol":2,"sender":{"name":"a"},"products":["poolse"]}"#, "speaks protocol 2"),
            (#"{"id":1,"ok":true,"products":["poolse"]}"#, #"needs "sender""#),
            (#"{"id":1,"ok":true,"sender":{"name":"a"}}"#, #"needs "products""#),
            (#"{"id":1,"ok":true,"sender":{"name":"a"},"products":["poolse"],"capabilities":"devices"}"#, "capabilities"),
        ]
        for (reply, expected) in cases {
            do {
                let object = try #require(try JSONParser.parse(reply).objectValue)
                _ = try AdapterConversation.hello(from: object)
                Issue.record("\(reply) was accepted")
            } catch {
                #expect("\(error)".contains(expected), "\(reply): \(error)")
            }
        }
    }

    @Test func theDevicesReplyListsIdsAndTokens() throws {
        let reply = try #require(try JSONParser.parse(#"{"id":3,"ok":true,"devices":[{"id":"b-voip","token":"ab12"}]}"#).objectValue)
        #expect(try AdapterConversation.devices(from: reply) == [ListedDevice(id: "b-voip", token: "ab12")])
        let bad = try #require(try JSONParser.parse(#"{"id":3,"ok":true,"devices":[{"id":"b-voip"}]}"#).objectValue)
        #expect(throws: AdapterProtocolError.self) { try AdapterConversation.devices(from: bad) }
    }

    @Test func linesAreSplitAtNewlinesWhateverTheReadsBoundaries() {
        var buffer = LineBuffer()
        buffer.append(line("{\"id\":1"))
        #expect(buffer.nextLine() == nil)
        buffer.append(line(",\"ok\":true}\r\n{\"id\":2}\n{\"id"))
        #expect(buffer.nextLine() == line(#"{"id":1,"ok":true}"#))
        #expect(buffer.nextLine() == line(#"{"id":2}"#))
        #expect(buffer.nextLine() == nil)
        #expect(buffer.count == 4)
    }

    /// Lines taken while more keep coming: the consumed front is dropped, the rest intact.
    @Test func aLongStreamOfLinesReadsBackWhole() throws {
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        defer { close(ends[0]) }
        let lines = (0..<300).map { index in String(repeating: Character(UnicodeScalar(UInt8(65 + index % 26))), count: 999) }
        let text = Array(lines.map { $0 + "\n" }.joined().utf8)
        let writeEnd = ends[1]
        Thread {
            var offset = 0
            while offset < text.count {
                let n = text.withUnsafeBytes { write(writeEnd, $0.baseAddress! + offset, min(4096, $0.count - offset)) }
                guard n > 0 else { break }
                offset += n
            }
            close(writeEnd)
        }.start()
        var buffer = LineBuffer()
        var read: [String] = []
        while true {
            while let line = buffer.nextLine() { read.append(String(decoding: line, as: UTF8.self)) }
            guard case .done(let count) = try buffer.fill(from: ends[0]), count > 0 else { break }
        }
        #expect(read == lines)
    }
}

/// The reference adapter's answers to requests out of order or malformed: each an
/// `"ok": false` with a reason, never a crash or silence.
struct ReferenceAdapterTests {
    private func answer(_ adapter: ReferenceAdapter, _ text: String) async throws -> (JSONObject, Bool) {
        let (reply, exit) = await adapter.answer(line(text))
        return (try object(reply), exit)
    }

    @Test func helloOfAnotherProtocolIsRefused() async throws {
        let adapter = ReferenceAdapter(version: "test")
        let (reply, _) = try await answer(adapter, #"{"id":1,"type":"hello","protocol":2,"gateway":{},"credentials":{}}"#)
        #expect(reply["ok"]?.boolValue == false)
        #expect(reply["error"]?.stringValue == "protocol 2 is not supported; this adapter speaks 1")
    }

    @Test func helloIsAnsweredWithNameProductsAndTheDevicesCapability() async throws {
        var conversation = AdapterConversation()
        let adapter = ReferenceAdapter(version: "9.9")
        let (reply, exit) = await adapter.answer(Array(conversation.hello(access).dropLast()))
        let hello = try AdapterConversation.hello(from: try conversation.reply(Array(reply.dropLast())))
        #expect(!exit)
        #expect(hello == AdapterHello(name: "pushproof reference", version: "9.9", products: ["poolse", "yama", "concierge"],
                                      capabilities: ["devices"]))
    }

    /// h2c: the gateway's URLs must be http:// (and https:// without it); no certificate is needed.
    @Test(arguments: [
        (true, "http://127.0.0.1:9", nil),
        (true, "https://127.0.0.1:9", "h2c is true but apns_url is 'https://127.0.0.1:9'"),
        (false, "http://127.0.0.1:9", #"an http:// gateway needs "h2c": true"#),
    ] as [(Bool, String, String?)])
    func helloWithH2CTakesHTTPURLsAndNoCertificate(h2c: Bool, url: String, refusal: String?) async throws {
        let adapter = ReferenceAdapter(version: "test")
        let gateway = #""apns_url":"\#(url)","fcm_url":"\#(url)","token_url":"\#(url)/token","h2c":\#(h2c)"#
            + (h2c ? "" : #","ca_file":"cert.pem""#)
        let credentials = #""apns_key_file":"k.p8","apns_key_id":"ABC123DEFG","apns_team_id":"TEAM123456","service_account_file":"sa.json""#
        let (reply, _) = try await answer(adapter, #"{"id":1,"type":"hello","protocol":1,"gateway":{\#(gateway)},"credentials":{\#(credentials)}}"#)
        #expect(reply["ok"]?.boolValue == (refusal == nil), "\(reply)")
        if let refusal { #expect(reply["error"]?.stringValue?.contains(refusal) == true, "\(reply)") }
    }

    @Test func requestsOutOfOrderOrMalformedAreRefused() async throws {
        let adapter = ReferenceAdapter(version: "test")
        for (request, expected) in [
            ("not json", "not JSON"),
            (#"{"type":"hello"}"#, #"needs an integer "id""#),
            (#"{"id":1,"type":"event","index":0,"event":{}}"#, "event before setup"),
            (#"{"id":2,"type":"setup","scenario":{}}"#, "setup before hello"),
            (#"{"id":3,"type":"dance"}"#, #"unknown request type "dance""#),
        ] {
            let (reply, exit) = try await answer(adapter, request)
            #expect(reply["ok"]?.boolValue == false, "\(request)")
            #expect(reply["error"]?.stringValue?.contains(expected) == true, "\(request): \(reply["error"] ?? .null)")
            #expect(!exit)
        }
        let (reply, exit) = try await answer(adapter, #"{"id":4,"type":"shutdown"}"#)
        #expect(reply["ok"]?.boolValue == true)
        #expect(reply["id"]?.intValue == 4)
        #expect(exit)
    }
}
