import Foundation

/// Why `fcm.token_url` (a service account's `token_uri`, see `pushproof credentials --gateway`)
/// does not reach this gateway, or nil when it does (or is Google's own, or unset). Clients POST
/// their assertion there, so a port or host that differs from where the gateway listens means
/// every FCM sender fails to get a token.
func tokenURLMismatch(_ tokenURL: String?, listening: HostPort) -> String? {
    guard let tokenURL, let url = URLComponents(string: tokenURL), let host = url.host else { return nil }
    if host.hasSuffix("googleapis.com") { return nil }
    let port = url.port ?? (url.scheme == "http" ? 80 : 443)
    let loopback: Set<String> = ["127.0.0.1", "localhost", "::1", "[::1]"]
    let wildcard = ["0.0.0.0", "::", "[::]", ""].contains(listening.host)
    let sameHost = wildcard || host == listening.host || (loopback.contains(host) && loopback.contains(listening.host))
    if sameHost && port == listening.port { return nil }
    return "fcm.token_url \(tokenURL) is not where this gateway listens (\(listening.description)): FCM clients would "
        + "fetch access tokens elsewhere; make 'pushproof credentials --gateway' match --listen"
}
