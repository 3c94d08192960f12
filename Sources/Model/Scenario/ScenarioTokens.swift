// Device tokens derived from device ids, so a scenario need not spell out tokens and every
// run of it addresses the same ones.

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

    /// FNV-1a over the id's bytes, the seed mixed in first.
    static func fnv1a(_ text: String, seed: UInt64) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325 ^ (seed &* 0x9e37_79b9_7f4a_7c15)
        for byte in text.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return splitmix(hash)
    }

    /// SplitMix64's output step: spreads FNV's weak low bits over the word.
    static func splitmix(_ value: UInt64) -> UInt64 {
        var z = value &+ 0x9e37_79b9_7f4a_7c15
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }

    static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}

/// A seeded generator (SplitMix64), so `generate` gives the same population on every run.
public struct ScenarioRandom: Sendable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state = state &+ 0x9e37_79b9_7f4a_7c15
        return ScenarioTokens.splitmix(state &- 0x9e37_79b9_7f4a_7c15)
    }

    /// A draw in [0, 1).
    public mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }

    /// True with probability `share`.
    public mutating func chance(_ share: Double) -> Bool { unit() < share }
}
