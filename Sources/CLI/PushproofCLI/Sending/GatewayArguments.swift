// `--gateway`, `--admin`, `--h2c`, `--ca` and the credential files: the gateway as the command
// line gives it, one parser for send, drive, plan and run.
import Foundation
import RemoteGateway
import ScenarioRunner

/// The gateway options' one reading.
enum GatewayOptions {
    /// The options `run`'s `--gateway` takes besides it (all but --token-url needed), also those of a scenario load run.
    static let withGateway = ["admin", "ca", "token-url", "apns-key", "key-id", "team-id", "service-account"]

    /// The one h2c rule: a gateway URL's scheme says how it is reached, http:// in cleartext
    /// HTTP/2 with prior knowledge (a `pushproof serve --h2c`), https:// over TLS. `--h2c`
    /// (`h2c`: send, drive, plan) makes http:// the default and refuses an https:// URL; `--ca`
    /// is refused when every URL is http:// (there is no certificate to trust). True when every
    /// URL is http://.
    static func cleartext(_ urls: [(option: String, url: String)], h2c: Bool, ca: String?) throws(UsageError) -> Bool {
        for (name, url) in urls {
            guard url.hasPrefix("http://") || url.hasPrefix("https://") else {
                throw UsageError(message: "--\(name): '\(url)' is not an http:// or https:// URL (http:// for a pushproof serve --h2c)")
            }
            if h2c, url.hasPrefix("https://") {
                throw UsageError(message: "--h2c sends cleartext HTTP/2, but --\(name) is https:// ('\(url)'); use an http:// URL")
            }
        }
        let cleartext = urls.allSatisfy { $0.url.hasPrefix("http://") }
        if cleartext, ca != nil, let first = urls.first {
            throw UsageError(message: "--ca: the http:// gateway '\(first.url)' speaks cleartext HTTP/2 (h2c); there is no certificate to trust")
        }
        return cleartext
    }

    /// `--gateway URL --admin URL --ca FILE` with credentials as `pushproof send` takes them.
    /// `--admin` repeated, or a name that resolves to several addresses, gives the replicas.
    static func external(_ arguments: ParsedArguments) throws(UsageError) -> (replicas: GatewayReplicas, access: GatewayAccess)? {
        guard let gateway = arguments.value("gateway") else {
            if let stray = withGateway.first(where: { arguments.value($0) != nil }) {
                throw UsageError(message: "--\(stray) goes with --gateway (the embedded gateway makes its own credentials)")
            }
            return nil
        }
        let h2c = try cleartext([("gateway", gateway)], h2c: false, ca: arguments.value("ca"))
        var base = gateway
        while base.hasSuffix("/") { base.removeLast() }
        var values: [String: String] = [:]
        for name in withGateway where name != "token-url" && !(h2c && name == "ca") {
            guard let value = arguments.value(name) else { throw UsageError(message: "--gateway needs --\(name)") }
            values[name] = value
        }
        let replicas = try replicas(arguments)!
        // The files as absolute paths: an adapter runs in the scenario's folder (or
        // --sender-dir), where a path relative to ours names nothing.
        func absolute(_ path: String?) -> String {
            guard let path, !path.isEmpty else { return "" }
            return URL(fileURLWithPath: path).standardizedFileURL.path
        }
        var access = GatewayAccess(apnsURL: base, fcmURL: base, tokenURL: arguments.value("token-url") ?? base + "/token",
                                   caFile: absolute(values["ca"]), apnsKeyFile: absolute(values["apns-key"]), apnsKeyID: values["key-id"]!,
                                   apnsTeamID: values["team-id"]!, serviceAccountFile: absolute(values["service-account"]))
        access.h2c = h2c
        return (replicas, access)
    }

    /// Every `--admin` (nil without one), each name resolved to all its addresses: one replica
    /// an address, each once.
    static func replicas(_ arguments: ParsedArguments) throws(UsageError) -> GatewayReplicas? {
        var admins: [AdminClient] = []
        for url in arguments.all("admin") {
            let resolved: [AdminClient]
            do {
                resolved = try GatewayReplicas.resolving(try AdminClient(url: url))
            } catch let error as UsageError {
                throw error
            } catch {
                throw UsageError(message: "--admin: \(error)")
            }
            for admin in resolved {
                if admins.contains(where: { $0.baseURL == admin.baseURL }) {
                    throw UsageError(message: "--admin \(admin.baseURL) is given twice (or two names resolve to it)")
                }
                admins.append(admin)
            }
        }
        return admins.isEmpty ? nil : GatewayReplicas(admins)
    }
}

extension AdminClient {
    /// Accepts `http://HOST:PORT` (an IP literal or localhost), with or without a trailing slash.
    init(url: String) throws(UsageError) {
        var rest = url
        guard rest.hasPrefix("http://") else {
            throw UsageError(message: "--admin: '\(url)' is not an http:// URL (the control API speaks cleartext)")
        }
        rest.removeFirst("http://".count)
        while rest.hasSuffix("/") { rest.removeLast() }
        let hostPort = try HostPort(parsing: rest, option: "admin")
        self.init(host: hostPort.host == "localhost" ? "127.0.0.1" : hostPort.host, port: hostPort.port, baseURL: "http://" + rest)
    }
}

extension ScenarioLoadGateway {
    /// The options `run`'s `--gateway` takes, also those of a scenario load run.
    static let optionNames = ["gateway"] + GatewayOptions.withGateway

    init(_ arguments: ParsedArguments) throws(UsageError) {
        self.init(external: try GatewayOptions.external(arguments))
    }

    /// Whether the gateway shares the sender's machine: the embedded one does; a serve on
    /// loopback does; of another name nothing is known (nil).
    var sharesMachine: Bool? {
        guard let external else { return true }
        return SenderOptions.onLoopback([external.access.apnsURL, external.access.fcmURL])
    }
}
