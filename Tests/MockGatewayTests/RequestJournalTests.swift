import Foundation
import HTTPCore
import JSON
import PushModel
import Synchronization
import Testing
@testable import MockGateway

/// The journal without sockets: one sequence with the record file, the ring bound, the
/// filters and a long poll's wake-up.
@Suite struct RequestJournalTests {
    private static func journalLines(_ journal: RequestJournal, _ query: JournalQuery = JournalQuery()) throws -> [JSONValue] {
        try JSONParser.parse(JournalAnswer(journal: journal, query: query, form: .lines).collect()).arrayValue ?? []
    }

    /// Waits (at most 5 s) for the journal's evaluation queue to answer a poll.
    private static func waitUntil(_ condition: () -> Bool) {
        let deadline = ContinuousClock.now + .seconds(5)
        while !condition() && ContinuousClock.now < deadline { usleep(1000) }
    }

    @Test func concurrentWritersGetTheSameSequenceInTheFileAndTheJournal() async throws {
        let path = RecorderTests.temporaryPath("journal.jsonl")
        defer { unlink(path) }
        let journal = RequestJournal(capacity: 100_000)
        let recorder = Recorder(file: try RecordFile(path: path, highWater: 4096, flushIntervalMillis: 5), journal: journal)
        let writers = 8, perWriter = 500
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<writers {
                group.addTask { for _ in 0..<perWriter { recorder.observe(RecorderTests.exchange()) } }
            }
        }
        recorder.file?.close()
        let fileLines = try RecorderTests.lines(of: path)
        let held = try Self.journalLines(journal)
        #expect(held.count == writers * perWriter)
        #expect(held == fileLines, "the journal holds the record file's lines, in its order, with its numbers")
        #expect(held.compactMap { $0["seq"]?.intValue } == Array(1...(writers * perWriter)))
    }

    @Test func withoutAFileTheJournalNumbersItsOwnLinesAndDropsTheOldest() throws {
        let journal = RequestJournal(capacity: 3)
        let recorder = Recorder(file: nil, journal: journal)
        for _ in 0..<5 { recorder.observe(RecorderTests.exchange()) }
        #expect(try Self.journalLines(journal).compactMap { $0["seq"]?.intValue } == [3, 4, 5])
        let counts = journal.counts
        #expect(counts.held == 3 && counts.dropped == 2 && counts.lastSequence == 5 && counts.waiting == 0)
        journal.clear()
        recorder.observe(RecorderTests.exchange())
        #expect(try Self.journalLines(journal).compactMap { $0["seq"]?.intValue } == [6])
        #expect(journal.counts.dropped == 2, "clearing is not dropping")
    }

    @Test func filtersReadTheKeptFieldsAndTheTokenInPathOrBody() throws {
        let journal = RequestJournal(capacity: 10)
        let recorder = Recorder(file: nil, journal: journal)
        recorder.observe(RecorderTests.exchange())  // APNs /3/device/abcd, 400 DuplicateHeaders
        var fcm = RecorderTests.exchange(body: #"{"message":{"token":"Tok-1"}}"#, route: .fcm)
        fcm.request.path = "/v1/projects/p/messages:send"
        fcm.response.status = 200
        fcm.reason = nil
        recorder.observe(fcm)
        func sequences(_ query: String) throws -> [Int] {
            try Self.journalLines(journal, JournalQuery(queryString: Substring(query), counting: false)).compactMap { $0["seq"]?.intValue }
        }
        #expect(try sequences("token=ABCD") == [1])
        #expect(try sequences("token=Tok-1") == [2])
        #expect(try sequences("token=tok-1") == [])
        #expect(try sequences("route=fcm") == [2])
        #expect(try sequences("status=400&reason=DuplicateHeaders") == [1])
        #expect(try sequences("since=1") == [2])
        #expect(try sequences("limit=1") == [1])
        #expect(throws: JournalQueryError.self) { try JournalQuery(queryString: "status=abc", counting: false) }
    }

    @Test func theByteBudgetDropsTheOldestAndCountsThem() throws {
        let lineBytes = Recorder.encode(RecorderTests.exchange()).suffix.count
        // Room for three lines and a half: the fourth drops the first.
        let journal = RequestJournal(capacity: 100, maxBytes: lineBytes * 7 / 2)
        let recorder = Recorder(file: nil, journal: journal)
        for _ in 0..<5 { recorder.observe(RecorderTests.exchange()) }
        #expect(try Self.journalLines(journal).compactMap { $0["seq"]?.intValue } == [3, 4, 5])
        let counts = journal.counts
        #expect(counts.held == 3 && counts.dropped == 2 && counts.bytes == 3 * lineBytes)
    }

    @Test func aLineLongerThanTheBudgetIsNotKeptButCountedAndNumbered() throws {
        let path = RecorderTests.temporaryPath("journal-long.jsonl")
        defer { unlink(path) }
        let journal = RequestJournal(capacity: 100, maxBytes: 4096)
        let recorder = Recorder(file: try RecordFile(path: path), journal: journal)
        recorder.observe(RecorderTests.exchange())
        recorder.observe(RecorderTests.exchange(body: String(repeating: "x", count: 5000)))
        recorder.observe(RecorderTests.exchange())
        recorder.file?.close()
        #expect(try Self.journalLines(journal).compactMap { $0["seq"]?.intValue } == [1, 3])
        #expect(journal.counts.dropped == 1)
        #expect(try RecorderTests.lines(of: path).count == 3, "the record file has every line")
    }

    /// Scans of one slot a hold of the lock, and the filters that read the line (token; reason
    /// and spec once the journal lists no more strings), give what one pass would.
    @Test func answersCopiedInBatchesAndFiltersReadingTheLineAgree() throws {
        let journal = RequestJournal(capacity: 100, maxBytes: 1 << 20, listedStrings: 1, slotsPerHold: 1)
        let recorder = Recorder(file: nil, journal: journal)
        for index in 0..<12 {
            var exchange = RecorderTests.exchange()
            exchange.request.path = "/3/device/" + (index % 3 == 0 ? "ABCD" : "beef")
            exchange.reason = index % 2 == 0 ? "BadDeviceToken" : "Unregistered"  // the second is unlisted
            recorder.observe(exchange)
        }
        func sequences(_ query: String) throws -> [Int] {
            try Self.journalLines(journal, JournalQuery(queryString: Substring(query), counting: false)).compactMap { $0["seq"]?.intValue }
        }
        func count(_ query: String) throws -> Int {
            journal.count(try JournalQuery(queryString: Substring(query), counting: true)).count
        }
        #expect(try sequences("") == Array(1...12))
        #expect(try sequences("limit=5") == Array(1...5))
        #expect(try sequences("since=4&limit=3") == [5, 6, 7])
        #expect(try sequences("token=abcd") == [1, 4, 7, 10])
        #expect(try sequences("token=abcd&limit=2") == [1, 4])
        #expect(try count("token=abcd") == 4)
        #expect(try sequences("reason=Unregistered") == [2, 4, 6, 8, 10, 12])
        #expect(try sequences("reason=BadDeviceToken&token=abcd") == [1, 7])
        #expect(try count("reason=Unregistered") == 6)
        #expect(try count("reason=Nothing") == 0)
    }

    @Test func aWaitingPollIsCompletedByTheRequestThatMeetsItsMinimum() throws {
        let journal = RequestJournal(capacity: 10)
        let recorder = Recorder(file: nil, journal: journal)
        let query = try JournalQuery(queryString: "route=apns&wait_ms=60000&min=2", counting: true)
        let waiter = JournalWaiter(query: query, journal: journal) { count, _, timedOut in
            HTTPResponse(status: 200, body: Array("\(count) \(timedOut)".utf8))
        }
        let woken = Atomic<Int>(0)
        #expect(waiter.responder.bind { _ in woken.add(1, ordering: .relaxed) } == nil)
        #expect(waiter.start())
        #expect(journal.counts.waiting == 1)
        recorder.observe(RecorderTests.exchange())
        var fcm = RecorderTests.exchange(route: .fcm)
        fcm.request.path = "/v1/projects/p/messages:send"
        recorder.observe(fcm)  // does not match: still waiting
        journal.evaluateWaiters()
        #expect(woken.load(ordering: .relaxed) == 0)
        recorder.observe(RecorderTests.exchange())
        Self.waitUntil { woken.load(ordering: .relaxed) == 1 }
        #expect(woken.load(ordering: .relaxed) == 1, "the evaluation queue answers the poll without a call from the test")
        #expect(waiter.responder.take().map { String(decoding: $0.body, as: UTF8.self) } == "2 false")
        #expect(journal.counts.waiting == 0)
    }

    @Test func aPollThatTimesOutAnswersWithWhatThereIs() throws {
        let journal = RequestJournal(capacity: 10)
        Recorder(file: nil, journal: journal).observe(RecorderTests.exchange())
        let query = try JournalQuery(queryString: "wait_ms=10&min=3", counting: false)
        let waiter = JournalWaiter(query: query, journal: journal) { count, through, timedOut in
            HTTPResponse(status: 200, body: Array("\(count) \(through) \(timedOut)".utf8))
        }
        _ = waiter.responder.bind { _ in }
        #expect(waiter.start())
        #expect(waiter.responder.expire().map { String(decoding: $0.body, as: UTF8.self) } == "1 1 true")
        #expect(journal.counts.waiting == 0)
    }

    /// Row 1 of issue 19: a poll that can never be met keeps a count, not the lines that
    /// matched; its answer reads the lines the journal still holds and counts the rest as dropped.
    @Test func aWaitingPollKeepsNoLinesAndItsAnswerCountsTheDropped() throws {
        let journal = RequestJournal(capacity: 4)
        let recorder = Recorder(file: nil, journal: journal)
        let query = try JournalQuery(queryString: "wait_ms=60000&min=4", counting: false)
        let waiter = JournalWaiter(query: query, journal: journal) { count, through, timedOut in
            var response = HTTPResponse(status: 200)
            response.streamedBody = JournalAnswer(journal: journal, query: query, through: through,
                                                  form: .waited(count: count, timedOut: timedOut))
            return response
        }
        _ = waiter.responder.bind { _ in }
        #expect(waiter.start())
        for _ in 0..<3 { recorder.observe(RecorderTests.exchange()) }
        journal.evaluateWaiters()
        for _ in 0..<3 { recorder.observe(RecorderTests.exchange()) }  // drops seq 1 and 2 from the ring of 4
        let answer = try #require(waiter.responder.expire())
        let value = try JSONParser.parse(try #require(answer.streamedBody).collect())
        #expect(value["requests"]?.arrayValue?.compactMap { $0["seq"]?.intValue } == [3, 4, 5, 6])
        #expect(value["count"]?.intValue == 6)
        #expect(value["dropped"]?.intValue == 2)
        #expect(value["timed_out"] == .bool(false))
    }

    /// Row 2: `token=` is decided from the slot's hash; only the candidates it picks are read.
    /// The same token in upper and lower case (APNs compares them so) is one hash.
    @Test func theTokenFilterPicksItsCandidatesByTheSlotsHash() throws {
        #expect(JournalToken.hash("ABCDEF01".utf8) == JournalToken.hash("abcdef01".utf8))
        #expect(JournalToken.hash("Tok-1".utf8) != JournalToken.hash("tok-1".utf8), "FCM tokens are case-sensitive")
        #expect(JournalToken.hash("".utf8) == JournalToken.none)
        #expect(try JournalQuery(queryString: "token=ABCD", counting: false).tokenHash == JournalToken.hash("abcd".utf8),
                "a parsed query carries its token's hash, so slots decide without reading lines")
        var fcm = RecorderTests.exchange(body: #"{"message":{"token":"from-the-body"}}"#, route: .fcm)
        fcm.request.path = "/v1/projects/p/messages:send"
        #expect(JournalToken.hash(of: fcm) == JournalToken.hash("from-the-body".utf8), "read from the body when the service did not")
        fcm.deviceToken = "from-the-service"
        #expect(JournalToken.hash(of: fcm) == JournalToken.hash("from-the-service".utf8))
        var apns = RecorderTests.exchange()
        apns.request.path = "/3/device/ABCD?x=1"
        #expect(JournalToken.hash(of: apns) == JournalToken.hash("abcd".utf8))
    }

    /// Row 3: an answer is read from the ring piece by piece, so one that is never read holds
    /// one piece; pieces meet the size asked for (give or take a line) and join to the whole.
    @Test func anAnswerIsReadFromTheRingInPieces() throws {
        let journal = RequestJournal(capacity: 1000)
        let recorder = Recorder(file: nil, journal: journal)
        for _ in 0..<200 { recorder.observe(RecorderTests.exchange()) }
        let lineBytes = Recorder.encode(RecorderTests.exchange()).suffix.count
        let answer = JournalAnswer(journal: journal, query: JournalQuery(), form: .lines)
        var whole: [UInt8] = []
        var pieces = 0
        while true {
            var piece: [UInt8] = []
            let finished = answer.next(into: &piece, preferredBytes: 4096)
            #expect(!piece.isEmpty || finished)
            #expect(piece.count <= 4096 + 2 * lineBytes, "a piece is about the size asked for")
            whole += piece
            pieces += 1
            if finished { break }
        }
        #expect(pieces > 200 * lineBytes / 4096 / 2)
        #expect(try JSONParser.parse(whole).arrayValue?.compactMap { $0["seq"]?.intValue } == Array(1...200))
        recorder.observe(RecorderTests.exchange())
        #expect(try Self.journalLines(journal).count == 201, "a new answer covers the new line")
    }

    /// Many polls on the token every line names: each line is read once for all of them, in
    /// holds of a bounded number of bytes, and every poll counts every line.
    @Test func manyTokenPollsOnOneBusyTokenCountEveryLine() throws {
        let journal = RequestJournal(capacity: 1000, maxBytes: 1 << 20, listedStrings: JournalStrings.defaultLimit, slotsPerHold: 7)
        let recorder = Recorder(file: nil, journal: journal)
        let query = try JournalQuery(queryString: "token=ABCD&wait_ms=60000&min=300", counting: true)
        let answered = Atomic<Int>(0)
        let waiters = (0..<50).map { _ in
            JournalWaiter(query: query, journal: journal) { count, _, _ in HTTPResponse(status: 200, body: Array("\(count)".utf8)) }
        }
        for waiter in waiters {
            _ = waiter.responder.bind { _ in answered.add(1, ordering: .relaxed) }
            #expect(waiter.start())
        }
        for index in 0..<300 {
            var exchange = RecorderTests.exchange()
            exchange.request.path = "/3/device/" + (index % 2 == 0 ? "abcd" : "ABCD")
            recorder.observe(exchange)
        }
        // The evaluation queue may be in the middle of a pass: whichever pass finishes last
        // counts what the other did not, and none counts a line twice.
        journal.evaluateWaiters()
        Self.waitUntil { answered.load(ordering: .relaxed) == 50 }
        #expect(answered.load(ordering: .relaxed) == 50)
        #expect(waiters.allSatisfy { $0.responder.take().map { String(decoding: $0.body, as: UTF8.self) } == "300" })
    }

    /// At most `maxWaiters` polls wait; the next is refused and can register once one ends.
    @Test func waitingPollsAreCapped() throws {
        let journal = RequestJournal(capacity: 10)
        let query = try JournalQuery(queryString: "wait_ms=60000&min=1", counting: true)
        let waiters = (0..<RequestJournal.maxWaiters).map { _ in
            JournalWaiter(query: query, journal: journal) { _, _, _ in HTTPResponse(status: 200) }
        }
        for waiter in waiters { #expect(waiter.start()) }
        let oneMore = JournalWaiter(query: query, journal: journal) { _, _, _ in HTTPResponse(status: 200) }
        #expect(!oneMore.start())
        waiters[0].responder.cancel()
        #expect(oneMore.start())
        #expect(journal.counts.waiting == RequestJournal.maxWaiters)
    }
}
