import Hashing
import Testing
@testable import MockGateway

/// The journal's byte ring without the journal: both bounds, the order and bytes of what it
/// keeps across many wraps, and what it counts as dropped.
@Suite struct JournalRingTests {
    private static func slot(_ sequence: UInt64) -> JournalRing.Slot {
        JournalRing.Slot(sequence: sequence, offset: 0, length: 0, status: 200, route: .apns,
                         reason: JournalStrings.none, spec: JournalStrings.none, token: JournalToken.none)
    }

    /// A line whose bytes say which request it is, so a mix-up shows.
    private static func line(_ sequence: UInt64, length: Int) -> [UInt8] {
        (0..<length).map { UInt8(truncatingIfNeeded: Int(sequence) &* 31 &+ $0) }
    }

    private static func held(_ ring: borrowing JournalRing) -> [(sequence: UInt64, bytes: [UInt8])] {
        (0..<ring.count).map { index in
            let slot = ring.slot(index)
            return (slot.sequence, Array(ring.line(of: slot)))
        }
    }

    @Test func theByteBudgetDropsTheOldestAndCountsThem() {
        var ring = JournalRing(maxRequests: 100, maxBytes: 1000)
        for sequence in UInt64(1)...10 { ring.append(Self.line(sequence, length: 300), Self.slot(sequence)) }
        // 300-byte lines in 1000 bytes: three fit; the fourth starts again at 0 over the first.
        #expect(Self.held(ring).map(\.sequence) == [8, 9, 10])
        #expect(ring.dropped == 7)
        #expect(ring.bytesHeld == 900)
        #expect(Self.held(ring).allSatisfy { $0.bytes == Self.line($0.sequence, length: 300) })
    }

    @Test func theCountBoundDropsTheOldestWhenBytesRemain() {
        var ring = JournalRing(maxRequests: 3, maxBytes: 1 << 20)
        for sequence in UInt64(1)...5 { ring.append(Self.line(sequence, length: 50), Self.slot(sequence)) }
        #expect(Self.held(ring).map(\.sequence) == [3, 4, 5])
        #expect(ring.dropped == 2)
        #expect(ring.bytesHeld == 150)
    }

    @Test func aLineLargerThanTheBudgetIsNotKeptButCounted() {
        var ring = JournalRing(maxRequests: 10, maxBytes: 100)
        ring.append(Self.line(1, length: 60), Self.slot(1))
        let keptTooLong = ring.append(Self.line(2, length: 101), Self.slot(2))
        #expect(!keptTooLong)
        #expect(Self.held(ring).map(\.sequence) == [1], "what was held stays")
        #expect(ring.dropped == 1)
        let keptExactly = ring.append(Self.line(3, length: 100), Self.slot(3))
        #expect(keptExactly, "exactly the budget fits")
        #expect(Self.held(ring).map(\.sequence) == [3])
    }

    /// Lines of every length, many times round the ring: what is held is always the newest
    /// requests, in order, with their own bytes, within both bounds, and not much less than
    /// the byte budget allows (a wrap wastes at most the space before the end).
    @Test func manyWrapsKeepTheNewestInOrderWithTheirBytes() {
        let maxBytes = 4096, maxRequests = 40, longest = 300
        var ring = JournalRing(maxRequests: maxRequests, maxBytes: maxBytes)
        for sequence in UInt64(1)...1500 {
            let length = 2 + Int(SplitMix64.mix(sequence) % UInt64(longest - 1))  // the same lengths every run
            let kept = ring.append(Self.line(sequence, length: length), Self.slot(sequence))
            #expect(kept)
            let held = Self.held(ring)
            #expect(held.last?.sequence == sequence, "the newest is always kept")
            #expect(held.map(\.sequence) == Array((sequence - UInt64(held.count) + 1)...sequence))
            #expect(held.allSatisfy { $0.bytes == Self.line($0.sequence, length: $0.bytes.count) })
            #expect(ring.bytesHeld == held.reduce(0) { $0 + $1.bytes.count })
            #expect(ring.bytesHeld <= maxBytes && ring.count <= maxRequests)
            #expect(ring.dropped + UInt64(ring.count) == sequence)
            if ring.count < maxRequests, sequence > 100 {
                #expect(ring.bytesHeld > maxBytes - 2 * longest, "dropped more than the budget needed")
            }
        }
        ring.removeAll()
        #expect(ring.count == 0 && ring.bytesHeld == 0)
        ring.append(Self.line(1501, length: 10), Self.slot(1501))
        #expect(Self.held(ring).map(\.sequence) == [1501])
    }

    @Test func stringsAreListedOnceAndUnlistedPastTheLimit() {
        var strings = JournalStrings(limit: 2)
        #expect(strings.id(nil) == JournalStrings.none)
        let a = strings.id("BadDeviceToken"), b = strings.id("Unregistered")
        #expect(a != b && a != JournalStrings.none && b != JournalStrings.none)
        #expect(strings.id("BadDeviceToken") == a)
        #expect(!strings.overflowed)
        #expect(strings.id("TooManyRequests") == JournalStrings.unlisted)
        #expect(strings.overflowed)
        #expect(strings.existingID("Unregistered") == b)
        #expect(strings.existingID("TooManyRequests") == nil)
    }
}
