// Device tokens derived from device ids, so a scenario need not spell out tokens and every
// run of it addresses the same ones.
import Hashing

public enum ScenarioTokens {
    /// iOS: 64 hex digits (apns.md: a device token is 32 bytes, sent as hex). Android: the
    /// shape FCM registration tokens have (`<instance id>:APA91b<base64url>`), 152 characters.
    public static func token(forDevice id: String, platform: ScenarioPlatform) -> String {
        switch platform {
        case .ios:
            return (0..<4).map { hex(fnv1a(id, seed: UInt64($0))) }.joined()
        case .android:
            let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
            var state = fnv1a(id, seed: 0x0fc3)
            func characters(_ count: Int) -> String {
                String((0..<count).map { _ in
                    state = splitmix(state)
                    return alphabet[Int(state >> 58)]
                })
            }
            return characters(22) + ":APA91b" + characters(152 - 29)
        }
    }

    /// FNV-1a over the id's bytes, the seed mixed into the basis, then SplitMix64's mixer to
    /// spread FNV's weak low bits over the word.
    static func fnv1a(_ text: String, seed: UInt64) -> UInt64 {
        SplitMix64.mix(FNV1a.hash64(text.utf8, basis: FNV1a.offsetBasis ^ (seed &* SplitMix64.gamma)))
    }

    static func splitmix(_ value: UInt64) -> UInt64 { SplitMix64.mix(value) }

    static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
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
