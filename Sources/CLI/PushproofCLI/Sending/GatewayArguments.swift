// `--admin URL` and `--gateway URL`: the remote gateway as the command line gives it.
import RemoteGateway
import ScenarioRunner

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
    static let optionNames = ["gateway", "admin", "ca", "token-url", "apns-key", "key-id", "team-id", "service-account"]

    init(_ arguments: ParsedArguments) throws(UsageError) {
        self.init(external: try RunCommand.externalGateway(arguments))
    }

    /// Whether the gateway shares the sender's machine: the embedded one does; a serve on
    /// loopback does; of another name nothing is known (nil).
    var sharesMachine: Bool? {
        guard let external else { return true }
        return SenderOptions.onLoopback([external.access.apnsURL, external.access.fcmURL])
    }
}
