// Reading a recording one line at a time (`check`, `show`).
import Clocks
import Foundation
import JSON
import Metrics
import PushModel
import RecordLine
import SpecValidator

/// The first few of many things and how many there were in all: a hostile file may hold a
/// million unreadable lines or seq gaps, and the report names 20 and counts the rest.
public struct FirstExamples<Element> {
    public let kept: Int
    public private(set) var count = 0
    public private(set) var first: [Element] = []

    public init(kept: Int = 20) { self.kept = kept }

    public mutating func add(_ element: Element) {
        count += 1
        if first.count < kept { first.append(element) }
    }

    public var isEmpty: Bool { count == 0 }
}

/// A recording that cannot be opened: "PATH: why".
public struct UnreadableFile: Error, CustomStringConvertible {
    public var path: String
    public var reason: String
    public var description: String { "\(path): \(reason)" }
}

/// Reads a file line by line, one line in memory at a time, and never more than
/// `maxLineBytes` of one: a longer line (a file that is not a recording, or a 1 GB line with
/// no newline) is skipped to its end and reported by its length.
public final class LineReader {
    public enum Line {
        case text([UInt8])
        /// A line over the limit, skipped: how long it was.
        case tooLong(bytes: Int)
    }

    /// A record line holds a request body (at most `serve --max-body`, 1 MiB by default;
    /// the largest allowed is 64 MiB), escaped (at most 6 bytes a byte) or base64, and headers.
    public static let maxLineBytes = 400 << 20

    private let file: UnsafeMutablePointer<FILE>
    private let maxLineBytes: Int
    private var chunk = [UInt8](repeating: 0, count: 64 << 10)
    private var start = 0
    private var end = 0
    private var atEnd = false
    public private(set) var error: String?

    public init(path: String, maxLineBytes: Int = LineReader.maxLineBytes) throws(UnreadableFile) {
        self.maxLineBytes = maxLineBytes
        if path == "-" {
            guard let input = fdopen(dup(0), "r") else { throw UnreadableFile(path: path, reason: "cannot read standard input") }
            file = input
        } else {
            guard let opened = fopen(path, "r") else {
                throw UnreadableFile(path: path, reason: String(cString: strerror(errno)))
            }
            file = opened
        }
    }

    deinit { fclose(file) }

    /// Refills the chunk after `start`; false at the end of the file (or on a read error).
    private func refill() -> Bool {
        guard !atEnd else { return false }
        start = 0
        end = chunk.withUnsafeMutableBytes { fread($0.baseAddress!, 1, $0.count, file) }
        if end == 0 {
            atEnd = true
            if ferror(file) != 0 { error = "read error: \(String(cString: strerror(errno)))" }
            return false
        }
        return true
    }

    /// The next line without its newline (and a final line without one); nil at the end.
    public func next() -> Line? {
        var line: [UInt8] = []
        var length = 0
        var tooLong = false
        while true {
            if start == end, !refill() {
                guard length > 0 || !line.isEmpty else { return nil }
                break
            }
            let newline = chunk[start..<end].firstIndex(of: 0x0A)
            let stop = newline ?? end
            let piece = stop - start
            length += piece
            if length > maxLineBytes { tooLong = true; line = [] }
            if !tooLong { line.append(contentsOf: chunk[start..<stop]) }
            start = newline.map { $0 + 1 } ?? end
            if newline != nil { break }
        }
        return tooLong ? .tooLong(bytes: length) : .text(line)
    }
}
