// Apple's TooManyProviderTokenUpdates rule as a pure state machine: the gateway answers by it
// live, per team across its connections, and `check` replays it across several gateways'
// recordings (a sender scaled out to replicas that each mint their own token trips it).

/// The provider tokens each APNs team has introduced and when (apns.md, "Token-based
/// authentication": refresh no more often than every 20 minutes). Counted per team across every
/// connection, as Apple counts it: a token the team has not used before is refused while the
/// team's previous new token is less than 20 minutes old, whether it comes as a connection's
/// first token or replaces one. Tokens the team already uses are fine (a rotation spreads over
/// many connections); a sender whose processes or connections each sign their own token is not.
public struct ProviderTokenUpdates: Sendable {
    /// Apple: refresh no more often than every 20 minutes.
    public static let minimumRefreshIntervalSeconds: Int64 = 1200
    /// Tokens remembered per team: a sender minting a token per request cannot grow memory
    /// without limit, and a team rotates through one or two at a time.
    public static let rememberedPerTeam = 8

    /// What `admit` decided about one token.
    public enum Admission: Equatable, Sendable {
        /// One of the team's tokens already: no update.
        case known
        /// A new token, admitted: the team's update.
        case new
        /// A new token while the team's previous new one is younger than 20 minutes: Apple
        /// answers 429 TooManyProviderTokenUpdates. `sinceSeconds`: that one's age.
        case tooSoon(sinceSeconds: Int64)
    }

    private struct History: Sendable {
        var recentTokens: [String] = []
        var lastNewTokenAtSeconds: Int64 = .min
    }

    private var teams: [String: History] = [:]

    public init() {}

    /// Teams that introduced a token so far.
    public var teamCount: Int { teams.count }

    /// Judges `token` (any text that tells two tokens apart) for `team` at `nowSeconds`; a
    /// refused token is not the team's, so it stays new until admitted.
    public mutating func admit(_ token: String, team: String, nowSeconds: Int64) -> Admission {
        let history = teams[team] ?? History()
        if history.recentTokens.contains(token) { return .known }
        if history.lastNewTokenAtSeconds != .min, nowSeconds - history.lastNewTokenAtSeconds < Self.minimumRefreshIntervalSeconds {
            return .tooSoon(sinceSeconds: nowSeconds - history.lastNewTokenAtSeconds)
        }
        introduce(token, team: team, nowSeconds: nowSeconds)
        return .new
    }

    /// Takes `token` as the team's new token at `nowSeconds`, whatever came before: what a
    /// gateway did that accepted it having forgotten the team's updates (`DELETE /provider-tokens`).
    public mutating func introduce(_ token: String, team: String, nowSeconds: Int64) {
        var history = teams[team] ?? History()
        if !history.recentTokens.contains(token) { history.recentTokens.append(token) }
        if history.recentTokens.count > Self.rememberedPerTeam { history.recentTokens.removeFirst() }
        history.lastNewTokenAtSeconds = nowSeconds
        teams[team] = history
    }

    /// Forgets every team: the next token of each is its first.
    public mutating func removeAll() { teams.removeAll() }
}
