import RecordLine
import Testing
@testable import RemoteGateway

/// `run --gateway`'s and a load run's reading of `GET /requests`: each line from its own bytes,
/// so a version-2 line's `json` is the body exactly as the gateway received it.
@Suite struct JournalAnswerLinesTests {
    static let payload = #"{"message":{"token":"t-1","token":"t-2","data":{"n":"1"}},"x":1.50}"#
    static func line(_ seq: Int, version: Int = 2) -> String {
        let body = version == 2 ? #""json":"# + payload : #""body":"{}""#
        return #"{"v":\#(version),"seq":\#(seq),"route":"fcm","method":"POST","path":"/v1/projects/p/messages:send","headers":[],"#
            + body + #","response":{"status":200,"reason":null,"headers":[],"json":{"name":"projects/p/messages/1"}}}"#
    }

    @Test func theArrayFormReadsEachLinesExactBody() throws {
        let answer = try JournalAnswerLines(Array(("[" + Self.line(1) + ", " + Self.line(2, version: 1) + "]").utf8))
        #expect(answer.isArray && answer.lineCount == 2 && answer.timedOut == nil)
        #expect(answer.exchanges.map(\.sequence) == [1, 2])
        #expect(answer.exchanges[0].body == Array(Self.payload.utf8))
        #expect(answer.exchanges[0].token == "t-2", "the last of a repeated key, as the gateway read it")
        #expect(answer.exchanges[1].body == Array("{}".utf8))
    }

    @Test func theLongPollFormReadsItsRequestsAndTimedOut() throws {
        let text = #"{"requests":["# + Self.line(3) + #",{"v":9}],"count":2,"dropped":0,"timed_out":false}"#
        let answer = try JournalAnswerLines(Array(text.utf8))
        #expect(!answer.isArray && answer.timedOut == false)
        #expect(answer.lineCount == 2, "a line this build cannot read still counts as one the answer held")
        #expect(answer.exchanges.map(\.sequence) == [3])
        #expect(answer.exchanges.first?.body == Array(Self.payload.utf8))
        let empty = try JournalAnswerLines(Array(#"{"requests":[],"count":0,"timed_out":true}"#.utf8))
        #expect(empty.lineCount == 0 && empty.timedOut == true)
    }

    @Test func anAnswerThatIsNotJSONIsAnError() {
        #expect(throws: (any Error).self) { try JournalAnswerLines(Array("[{".utf8)) }
    }
}
