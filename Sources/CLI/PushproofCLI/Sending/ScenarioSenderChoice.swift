import Driver
import Foundation
import ScenarioRunner

/// The sender a scenario is played through (`run`, `drive --scenario`, `plan --scenario`): the
/// reference one in this process, or any sender behind an adapter (`--sender-cmd`,
/// docs/adapter-protocol.md). Parsed in one place so the three commands take the same
/// options and say the same things about them.
struct ScenarioSenderChoice {
    /// How reports name the reference sender, in process or behind `pushproof adapter`; its
    /// version is this binary's.
    static let referenceName = ReferenceAdapter.name

    static let specs: [OptionSpec] = [
        .value("sender", "NAME", "The sender under test, in this process.", default: "reference"),
        .value("sender-cmd", "CMD", "The sender under test behind an adapter: CMD runs through /bin/sh -c and speaks "
               + "the adapter protocol on stdin and stdout (docs/adapter-protocol.md)."),
        .value("sender-dir", "DIR", "The adapter's working directory.", default: "the scenario's folder"),
        .value("sender-timeout", "SECONDS", "The longest wait for any reply from the adapter.", default: "10"),
    ]

    /// `--sender-cmd`: the adapter to start per scenario (nil: the reference sender in-process).
    let adapter: (command: String, directory: String?, timeout: Duration)?

    var isAdapter: Bool { adapter != nil }

    init(_ arguments: ParsedArguments) throws(UsageError) {
        let sender = arguments.value("sender") ?? "reference"
        guard sender == "reference" else {
            throw UsageError(message: "--sender: the in-process sender is 'reference', not '\(sender)'; "
                             + "put another behind an adapter with --sender-cmd")
        }
        if let command = arguments.value("sender-cmd") {
            if arguments.value("sender") != nil { throw UsageError(message: "--sender and --sender-cmd: give one sender") }
            guard !command.trimmingCharacters(in: .whitespaces).isEmpty else { throw UsageError(message: "--sender-cmd: empty command") }
            let seconds = try arguments.double("sender-timeout", default: 10, range: 0.01...3600)
            adapter = (command, arguments.value("sender-dir"), .milliseconds(Int64(seconds * 1000)))
        } else {
            for name in ["sender-dir", "sender-timeout"] where arguments.value(name) != nil {
                throw UsageError(message: "--\(name) goes with --sender-cmd")
            }
            adapter = nil
        }
    }

    /// A fresh sender for one scenario: the reference one, or an adapter started in the
    /// scenario's folder (or `--sender-dir`).
    func make(scenarioFile: String) -> any ScenarioSender {
        guard let adapter else { return ReferenceSender() }
        let folder = (scenarioFile as NSString).deletingLastPathComponent
        return AdapterSender(AdapterLaunch(command: adapter.command, directory: adapter.directory ?? (folder.isEmpty ? "." : folder),
                                           timeout: adapter.timeout))
    }

    /// Which sender ran, for reports: an adapter's `hello` (so ask after `setUp`), or the
    /// reference sender of this binary. `gatewaySharesMachine` says where the gateway was.
    func identity(of sender: any ScenarioSender, gatewaySharesMachine: Bool?) -> SenderIdentity {
        if let adapter = sender as? AdapterSender {
            let hello = adapter.hello
            return SenderIdentity(name: hello?.name ?? "adapter '\(self.adapter?.command ?? "")'", version: hello?.version ?? "",
                                  gatewaySharesMachine: gatewaySharesMachine)
        }
        return Self.reference(gatewaySharesMachine: gatewaySharesMachine)
    }

    /// The reference sender of this binary, as reports name it.
    static func reference(gatewaySharesMachine: Bool?) -> SenderIdentity {
        SenderIdentity(name: referenceName, version: PushproofCommand.version, gatewaySharesMachine: gatewaySharesMachine)
    }

    /// Before the run: what the heading line calls the sender (an adapter names itself only in `hello`).
    var description: String {
        adapter.map { "the adapter '\($0.command)'" } ?? "\(Self.referenceName) \(PushproofCommand.version)"
    }
}

extension SenderOptions {
    /// true when every gateway origin is on loopback (the gateway shares the sender's
    /// machine); nil otherwise, since another name may still be this machine.
    var gatewayIsLocal: Bool? { Self.onLoopback([apnsURL, fcmURL] + gatewayReplicas) }

    /// true when every URL's host is on loopback; nil otherwise (another name may still be this machine).
    static func onLoopback(_ urls: [String]) -> Bool? {
        let hosts = urls.map { URL(string: $0)?.host ?? "" }
        return hosts.allSatisfy { ["127.0.0.1", "localhost", "::1", "[::1]"].contains($0) || $0.hasPrefix("127.") } ? true : nil
    }
}
