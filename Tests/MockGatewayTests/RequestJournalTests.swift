import Foundation
import HTTPCore
import JSON
import Synchronization
import Testing
@testable import MockGateway

/// The journal without sockets: one sequence with the record file, the ring bound, the
/// filters and a long poll's wake-up.
@Suite struct RequestJournalTests {
    private static func journalLines(_ journal: RequestJournal, _ query: JournalQuery = JournalQuery()) throws -> [JSONValue] {
        var out: [UInt8] = []
        RequestJournal.jsonArray(journal.matches(query, keep: query.limit).kept, into: &out)
        return try JSONParser.parse(out).arrayValue ?? []
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

    /// Answers larger than one hold of the lock's copying, and the filters that read the line
    /// (token; reason and spec once the journal lists no more strings), give what one pass would.
    @Test func answersCopiedInBatchesAndFiltersReadingTheLineAgree() throws {
        let journal = RequestJournal(capacity: 100, maxBytes: 1 << 20, listedStrings: 1, copyBatchBytes: 1)
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
            journal.matches(try JournalQuery(queryString: Substring(query), counting: true), keep: 0).count
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
        let waiter = JournalWaiter(query: query, keepsLines: false, journal: journal) { _, count, timedOut in
            HTTPResponse(status: 200, body: Array("\(count) \(timedOut)".utf8))
        }
        let woken = Atomic<Int>(0)
        #expect(waiter.responder.bind { _ in woken.add(1, ordering: .relaxed) } == nil)
        waiter.start()
        #expect(journal.counts.waiting == 1)
        recorder.observe(RecorderTests.exchange())
        var fcm = RecorderTests.exchange(route: .fcm)
        fcm.request.path = "/v1/projects/p/messages:send"
        recorder.observe(fcm)  // does not match: still waiting
        #expect(woken.load(ordering: .relaxed) == 0)
        recorder.observe(RecorderTests.exchange())
        #expect(woken.load(ordering: .relaxed) == 1)
        #expect(waiter.responder.take().map { String(decoding: $0.body, as: UTF8.self) } == "2 false")
        #expect(journal.counts.waiting == 0)
    }

    @Test func aPollThatTimesOutAnswersWithWhatThereIs() throws {
        let journal = RequestJournal(capacity: 10)
        Recorder(file: nil, journal: journal).observe(RecorderTests.exchange())
        let query = try JournalQuery(queryString: "wait_ms=10&min=3", counting: false)
        let waiter = JournalWaiter(query: query, keepsLines: true, journal: journal) { kept, count, timedOut in
            HTTPResponse(status: 200, body: Array("\(kept.count) \(count) \(timedOut)".utf8))
        }
        _ = waiter.responder.bind { _ in }
        waiter.start()
        #expect(waiter.responder.expire().map { String(decoding: $0.body, as: UTF8.self) } == "1 1 true")
        #expect(journal.counts.waiting == 0)
    }
}
