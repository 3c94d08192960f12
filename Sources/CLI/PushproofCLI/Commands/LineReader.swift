// Reading a recording one line at a time (`check`, `show`).
import Clocks
import Driver
import Foundation
import JSON
import Metrics
import PushModel
import RecordLine
import Scenario
import SpecValidator

/// Reads a file line by line with getline(3): one line in memory at a time.
final class LineReader {
    private let file: UnsafeMutablePointer<FILE>
    private var buffer: UnsafeMutablePointer<CChar>?
    private var capacity = 0
    private(set) var error: String?

    init(path: String) throws {
        if path == "-" {
            guard let input = fdopen(dup(0), "r") else { throw FileError(path: path, reason: "cannot read standard input") }
            file = input
        } else {
            guard let opened = fopen(path, "r") else {
                throw FileError(path: path, reason: String(cString: strerror(errno)))
            }
            file = opened
        }
    }

    deinit {
        free(buffer)
        fclose(file)
    }

    /// The next line without its newline; nil at the end (or on a read error, see `error`).
    func next() -> [UInt8]? {
        let count = getline(&buffer, &capacity, file)
        guard count >= 0, let buffer else {
            if ferror(file) != 0 { error = "read error: \(String(cString: strerror(errno)))" }
            return nil
        }
        var length = count
        if length > 0, buffer[length - 1] == 0x0A { length -= 1 }
        return buffer.withMemoryRebound(to: UInt8.self, capacity: length) { Array(UnsafeBufferPointer(start: $0, count: length)) }
    }
}
