import Foundation
import Glibc
import HTTPCore
import JSON
import Synchronization
import Testing
@testable import MockGateway

/// Issue 9, row 8: the disk fills mid-run, then space comes back. The record keeps whole lines
/// only, and the lines that did not make it are counted.
@Suite(.serialized) struct RecordFileFullDiskTests {
    static let filler = String(repeating: "x", count: 80)

    static func appendLines(_ file: RecordFile, _ count: Int, flushEvery: Int = 7) {
        for i in 1...count {
            file.appendLine(prefix: Array(#"{"seq":"#.utf8), suffix: Array(#","fill":"\#(filler)"}"#.utf8) + [0x0A])
            if i % flushEvery == 0 { file.flush() }
        }
        file.flush()
    }

    /// Every line parses and `seq` only grows; returns the seqs.
    static func wholeLines(_ path: String) throws -> [Int] {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(text.isEmpty || text.hasSuffix("\n"), "the file ends on a whole line")
        let seqs = try text.split(separator: "\n").map { line in
            try #require(try JSONParser.parse(String(line))["seq"]?.doubleValue.map(Int.init), "not a whole line: \(line.prefix(60))")
        }
        #expect(seqs == seqs.sorted() && Set(seqs).count == seqs.count)
        return seqs
    }

    @Test func aWriteFailingPartWayLeavesWholeLinesAndCountsTheRest() throws {
        let directory = try TemporaryDirectoryForRecords()
        let path = directory.path + "/record.jsonl"
        // 3000 bytes of room, then ENOSPC until space comes back.
        let room = Mutex(3_000)
        let file = try RecordFile(path: path, flushIntervalMillis: 20) { fd, bytes, count in
            let allowed = room.withLock { room -> Int in
                let n = min(room, count)
                room -= n
                return n
            }
            if allowed == 0 { errno = ENOSPC; return -1 }
            return Glibc.write(fd, bytes, allowed)
        }
        Self.appendLines(file, 100)
        #expect(file.failedWrites > 0)
        let lostWhileFull = file.lostLines
        #expect(lostWhileFull > 0)
        room.withLock { $0 = .max }  // space comes back
        Self.appendLines(file, 20)
        file.close()
        let seqs = try Self.wholeLines(path)
        #expect(file.lostLines == lostWhileFull, "nothing lost once there is room")
        #expect(seqs.count + file.lostLines == 120)
        #expect(UInt64(seqs.count) == file.writtenLines)
        #expect(seqs.last == 120)
    }

    /// The same on a real full file system: a 64 KiB tmpfs, grown back afterwards. Needs root
    /// (mount); skipped otherwise.
    @Test(.enabled(if: getuid() == 0)) func aFullTmpfsLeavesWholeLines() throws {
        let directory = try TemporaryDirectoryForRecords()
        let mountPoint = directory.path + "/disk"
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        guard mount("tmpfs", mountPoint, "tmpfs", 0, "size=64k") == 0 else {
            Issue.record("mount tmpfs failed: \(String(cString: strerror(errno)))")
            return
        }
        defer { umount(mountPoint) }
        let path = mountPoint + "/record.jsonl"
        let file = try RecordFile(path: path, flushIntervalMillis: 20)
        Self.appendLines(file, 1_500)  // ~160 KB into 64 KiB
        #expect(file.failedWrites > 0)
        #expect(file.lostLines > 0)
        let lostWhileFull = file.lostLines
        guard mount("tmpfs", mountPoint, "tmpfs", UInt(MS_REMOUNT), "size=4m") == 0 else {
            Issue.record("remount failed: \(String(cString: strerror(errno)))")
            file.close()
            return
        }
        Self.appendLines(file, 100)
        file.close()
        let seqs = try Self.wholeLines(path)
        #expect(file.lostLines == lostWhileFull)
        #expect(seqs.count + file.lostLines == 1_600)
        #expect(seqs.last == 1_600)
    }
}

/// A fresh directory under the system's temporary folder, removed at deinit.
final class TemporaryDirectoryForRecords {
    let path: String
    init() throws {
        path = NSTemporaryDirectory() + "pushproof-record-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }
    deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// `PUT /tokens/<t>` checks `since_ms` with the configuration loader's code: a bad value is a
/// 400 that says why, not "now".
@Suite struct AdminTokenSinceTests {
    @Test(arguments: [#""yesterday""#, "1e308", "1.5", "-1"])
    func aBadSinceIsRefused(_ since: String) throws {
        let gateway = try MockGateway(configuration: GatewayConfiguration(), observers: [])
        let admin = AdminAPI(gateway: gateway, metrics: GatewayMetrics(), recorder: nil) {
            .init(openConnections: 0, acceptedConnections: 0, requestsServed: 0)
        }
        let connection = ConnectionContext(id: 100, version: .http1_1, isTLS: false, peer: "127.0.0.1:1")
        func put(_ body: String) -> (Int, JSONValue?) {
            let response = admin.handle(HTTPRequest(method: "PUT", path: "/tokens/abcd", body: Array(body.utf8), version: .http1_1),
                                        on: connection)
            return (response.status, try? JSONParser.parse(response.body))
        }
        let (status, body) = put(#"{"state":"gone","since_ms":"# + since + "}")
        #expect(status == 400)
        #expect(body?["error"]?.stringValue?.contains("since_ms") == true, "\(String(describing: body))")
        let (good, goodBody) = put(#"{"state":"gone","since_ms":1700000000000}"#)
        #expect(good == 200)
        #expect(goodBody?["since_ms"] == 1700000000000)
    }
}
