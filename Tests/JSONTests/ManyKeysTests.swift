@testable import JSON
import Testing

/// A hostile object of tens of thousands of distinct keys must cost linear time: compared with
/// every earlier key, 95,000 keys held a gateway event loop for 24 s (issue 9, row 1). The bound
/// is structural (key comparisons counted by a test hook), not a timing.
@Suite("JSON objects with many keys")
struct ManyKeysTests {
    /// `{"k0":0,"k1":1,…}`; `repeatFirst` appends `"k0"` again at the end.
    static func manyKeys(_ count: Int, repeatFirst: Bool = false) -> [UInt8] {
        var text = "{"
        for i in 0..<count { text += (i == 0 ? "" : ",") + "\"k\(i)\":\(i)" }
        if repeatFirst { text += ",\"k0\":\"again\"" }
        return Array((text + "}").utf8)
    }

    static let keyCount = 20_000

    @Test func parsingComparesAFewKeysPerKey() throws {
        var comparisons = 0
        let value = try JSONParser.parse(Self.manyKeys(Self.keyCount), keyComparisons: &comparisons)
        #expect(value.objectValue?.count == Self.keyCount)
        // A scan: ~n²/2 pairs, ~4e7 comparisons here even with lengths first. Hashed: ~0.
        #expect(comparisons < Self.keyCount, "\(comparisons) key comparisons for \(Self.keyCount) keys")
    }

    @Test func theTapeComparesAFewKeysPerKey() throws {
        var comparisons = 0
        let tape = try #require(JSONParser.tape(Self.manyKeys(Self.keyCount), keyComparisons: &comparisons))
        #expect(tape.entries[0].count == UInt32(Self.keyCount))
        #expect(comparisons < Self.keyCount, "\(comparisons) key comparisons for \(Self.keyCount) keys")
    }

    /// The hashed path still finds a repeat, with the same outcome as the scan.
    @Test func aRepeatedKeyInALargeObjectIsStillFound() throws {
        let bytes = Self.manyKeys(1_000, repeatFirst: true)
        let lastWins = try JSONParser.parse(bytes)
        #expect(lastWins.objectValue?.count == 1_000)
        #expect(lastWins.objectValue?["k0"] == .string("again"))
        #expect(lastWins.objectValue?.keys.first == "k0", "the repeat replaces in place, keeping the order")
        #expect(throws: JSONError.self) { try JSONParser.parse(bytes, options: .init(duplicateKeys: .reject)) }
        #expect(JSONParser.tape(bytes) == nil, "a repeated key is not covered by the tape")
    }

    /// Around the switch from scan to hash, every object of distinct keys still parses whole,
    /// and a repeat of any earlier key is found wherever it falls.
    @Test(arguments: [ObjectKeyIndex.threshold - 1, ObjectKeyIndex.threshold, ObjectKeyIndex.threshold + 1, 40, 200])
    func repeatsAreFoundAcrossTheThreshold(_ count: Int) throws {
        #expect(JSONParser.tape(Self.manyKeys(count))?.entries[0].count == UInt32(count))
        for repeated in [0, count / 2, count - 1] {
            var text = String(decoding: Self.manyKeys(count), as: UTF8.self)
            text.removeLast()
            text += ",\"k\(repeated)\":null}"
            let bytes = Array(text.utf8)
            #expect(try JSONParser.parse(bytes).objectValue?.count == count)
            #expect(JSONParser.tape(bytes) == nil, "k\(repeated) repeated among \(count) keys")
        }
    }
}
