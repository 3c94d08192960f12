import Testing
@testable import Driver

@Suite struct ExecutionSegmentTests {
    static func segments(_ count: Int, weights: String? = nil) throws -> [ExecutionSegment] {
        try (0..<count).map { try ExecutionSegment(parsing: "\($0)/\(count)", weights: weights) }
    }

    @Test func tenOverThirdsIsFourThreeThree() throws {
        let thirds = try Self.segments(3)
        #expect(thirds.map { $0.count(of: 10) } == [4, 3, 3])
        #expect(thirds.map { $0.share(of: 10) } == [0..<4, 4..<7, 7..<10])
        #expect(thirds.map(\.description) == ["0:1/3", "1/3:2/3", "2/3:1"])
    }

    @Test func equalSegmentsStripeRoundRobin() throws {
        for count in 1...7 {
            for segment in try Self.segments(count) {
                for item in 0..<50 { #expect(segment.owns(index: item) == (item % count == segment.index)) }
            }
        }
    }

    @Test func weightsHalfQuarterQuarter() throws {
        let parts = try Self.segments(3, weights: "1/2,1/4,1/4")
        #expect(parts.map(\.commonDenominator) == [4, 4, 4])
        // k6's stripe for 1/2,1/4,1/4: positions 0 and 2 to the half, 1 and 3 to the quarters.
        #expect((0..<8).map { item in parts.firstIndex { $0.owns(index: item) }! } == [0, 1, 0, 2, 0, 1, 0, 2])
        #expect(parts.map { $0.count(of: 10) } == [5, 3, 2])
        #expect(parts.map { $0.share(of: 10) } == [0..<5, 5..<8, 8..<10])
        #expect(parts.map(\.description) == ["0:1/2", "1/2:3/4", "3/4:1"])
    }

    /// For N = 1…7 equal segments, and three weighted splits, over totals 0…100: the counts sum
    /// to the total, each is within 1 of its exact share and never shrinks as the total grows,
    /// the shares tile 0..<total, and every index is owned by exactly one segment.
    @Test(arguments: ["1", "2", "3", "4", "5", "6", "7", "1/2,1/4,1/4", "3/5,1/3,1/15", "1/6,1/2,1/3"])
    func partsCoverTheWholeExactlyOnce(split: String) throws {
        let parts = split.contains("/")
            ? try Self.segments(split.split(separator: ",").count, weights: split)
            : try Self.segments(Int(split)!)
        var previous = [Int](repeating: 0, count: parts.count)
        for total in 0...100 {
            let counts = parts.map { $0.count(of: total) }
            #expect(counts.reduce(0, +) == total, "total \(total)")
            for (segment, count) in zip(parts, counts) {
                let exact = Double(total) * Double(segment.weights[segment.index].numerator) / Double(segment.weights[segment.index].denominator)
                #expect(abs(Double(count) - exact) < 1, "segment \(segment), total \(total): \(count) vs \(exact)")
                #expect(count >= previous[segment.index])
                previous[segment.index] = count
            }
            let ranges = parts.map { $0.share(of: total) }
            #expect(ranges.first?.lowerBound == 0 && ranges.last?.upperBound == total)
            for (left, right) in zip(ranges, ranges.dropFirst()) { #expect(left.upperBound == right.lowerBound) }
            for item in 0..<total {
                #expect(parts.filter { $0.owns(index: item) }.count == 1, "index \(item)")
            }
            #expect(zip(parts, counts).allSatisfy { segment, count in (0..<total).filter(segment.owns).count == count })
        }
    }

    @Test func devicesArePartitionedStablyAndDisjointly() throws {
        let ids = (0..<10).map { "device-\($0)" }
        let thirds = try Self.segments(3)
        let parts = thirds.map { $0.devices(of: ids) }
        #expect(parts.map(\.count) == [4, 3, 3])
        // docs/scale-out.md's worked example.
        #expect(parts == [["device-1", "device-6", "device-7", "device-9"], ["device-2", "device-3", "device-8"],
                          ["device-0", "device-4", "device-5"]])
        #expect(Set(parts.joined()) == Set(ids))
        #expect(parts.joined().count == ids.count)
        // The input's order does not matter, and each part keeps the order it was given.
        let shuffled = thirds.map { $0.devices(of: ids.reversed()) }
        #expect(shuffled.map { Set($0) } == parts.map { Set($0) })
        for part in parts { #expect(part == ids.filter(part.contains)) }
        // The partition is the hashes' order, not the ids' own (which would give segment 0 device-0…3).
        #expect(parts[0] != Array(ids[0..<4]))
        #expect(ExecutionSegment.whole.devices(of: ids) == ids)
    }

    /// Tokens as drive's workspace makes them (APNs: a kind byte, zeros, the index in hex;
    /// FCM: the index in the middle): every kind spreads evenly, so a ring (PushKit and Android
    /// tokens) or a message (alert and Android) is split as evenly as the group.
    @Test func tokensThatDifferOnlyInTheirIndexSpreadEvenlyKindByKind() throws {
        let members = 3000
        func apns(_ kind: String, _ index: Int) -> String {
            let digits = String(index, radix: 16)
            return "20" + kind + String(repeating: "0", count: 60 - digits.count) + digits
        }
        let kinds = [(0..<members).map { apns("0b", $0) }, (0..<members).map { apns("0a", $0) },
                     (0..<members).map { "fcm-20-\($0)-xxxxxxxx" }]
        let ids = kinds.flatMap { $0 }
        for segment in try Self.segments(3) {
            let owned = Set(segment.devices(of: ids))
            #expect(owned.count == members)
            for kind in kinds {
                let share = kind.filter(owned.contains).count
                #expect(abs(share - members / 3) < members / 15, "segment \(segment): \(share) of \(members)")
            }
        }
    }

    @Test(arguments: [
        ("3/3", nil, ExecutionSegmentError.indexOutOfRange(index: 3, count: 3)),
        ("-1/2", nil, .indexOutOfRange(index: -1, count: 2)),
        ("1/0", nil, .noSegments),
        ("a/b", nil, .malformedSegment("a/b")),
        ("1", nil, .malformedSegment("1")),
        ("0/3", "1/2,1/4", .weightCount(found: 2, segments: 3)),
        ("0/3", "1/2,1/4,1/8", .weightsDoNotSumToOne("7/8")),
        ("0/2", "1/2,1/2,0", .weightCount(found: 3, segments: 2)),
        ("0/3", "1,0,0", .zeroWeight("0")),
        ("0/2", "1/2,x", .malformedWeight("x")),
        ("0/2", "1/2,1/0", .malformedWeight("1/0")),
        ("0/2", "3/4,1/2", .weightsDoNotSumToOne("5/4")),
    ] as [(String, String?, ExecutionSegmentError)])
    func refusals(segment: String, weights: String?, expected: ExecutionSegmentError) {
        #expect(throws: expected) { try ExecutionSegment(parsing: segment, weights: weights) }
        #expect(!expected.description.isEmpty)
    }

    @Test func errorsSayWhatToGive() {
        #expect(ExecutionSegmentError.indexOutOfRange(index: 3, count: 3).description == "--segment 3/3: the index must be from 0 to 2")
        #expect(ExecutionSegmentError.weightsDoNotSumToOne("7/8").description.contains("7/8, not exactly 1"))
    }
}
