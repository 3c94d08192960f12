// Device tokens derived from device ids, so a scenario need not spell out tokens and every
// run of it addresses the same ones.
import Hashing

public enum ScenarioTokens {
    /// iOS: 64 hex digits (apns.md: a device token is 32 bytes, sent as hex). Android: the
    /// shape FCM registration tokens have (`<instance id>:APA91b<base64url>`), 152 characters.
    public static func token(forDevice id: String, platform: ScenarioPlatform) -> String {
        // Written in place at their exact length: joined from pieces, a 64-digit token took a
        // string of twice its capacity (17.6 MB of a 100,000-person call's heap, heaptrack).
        switch platform {
        case .ios:
            let hexDigits: StaticString = "0123456789abcdef"
            return String(unsafeUninitializedCapacity: 64) { text in
                for part in 0..<4 {
                    let value = fnv1a(id, seed: UInt64(part))
                    for digit in 0..<16 {
                        let nibble = Int(truncatingIfNeeded: value >> UInt64(60 - 4 * digit)) & 0xF
                        text[part * 16 + digit] = hexDigits.utf8Start[nibble]
                    }
                }
                return 64
            }
        case .android:
            let alphabet: StaticString = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
            let marker: StaticString = ":APA91b"
            var state = fnv1a(id, seed: 0x0fc3)
            return String(unsafeUninitializedCapacity: 152) { text in
                var length = 0
                func characters(_ count: Int) {
                    for _ in 0..<count {
                        state = splitmix(state)
                        text[length] = alphabet.utf8Start[Int(state >> 58)]
                        length += 1
                    }
                }
                characters(22)
                for offset in 0..<marker.utf8CodeUnitCount {
                    text[length] = marker.utf8Start[offset]
                    length += 1
                }
                characters(152 - 29)
                return length
            }
        }
    }

    /// FNV-1a over the id's bytes, the seed mixed into the basis, then SplitMix64's mixer to
    /// spread FNV's weak low bits over the word.
    static func fnv1a(_ text: String, seed: UInt64) -> UInt64 {
        SplitMix64.mix(FNV1a.hash64(text.utf8, basis: FNV1a.offsetBasis ^ (seed &* SplitMix64.gamma)))
    }

    static func splitmix(_ value: UInt64) -> UInt64 { SplitMix64.mix(value) }
}

/// A seeded generator (SplitMix64), so `generate` gives the same population on every run.
public struct ScenarioRandom: Sendable {
    private var generator: SplitMix64

    public init(seed: UInt64) { generator = SplitMix64(seed: seed) }

    public mutating func next() -> UInt64 { generator.next() }

    /// A draw in [0, 1).
    public mutating func unit() -> Double { generator.unit() }

    /// True with probability `share`.
    public mutating func chance(_ share: Double) -> Bool { unit() < share }

    /// A value in 0..<bound (0 when bound is 0), one draw.
    public mutating func next(below bound: Int) -> Int { generator.next(below: bound) }
}
