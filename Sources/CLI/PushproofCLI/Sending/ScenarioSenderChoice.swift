import Driver
import Foundation
import ScenarioRunner

/// The sender a scenario is played through (`run`, `drive --scenario`, `plan --scenario`),
/// parsed in one place so the three commands take the same options.
///
/// SEAM (issue 12 §1, branch `adapter`): `--sender-cmd CMD`, `--sender-dir DIR` and
/// `--sender-timeout SECONDS` are parsed here once `AdapterSender` exists, `make()` returns one,
/// and `identity(of:)` reads the name and version its `hello` answered. Nothing else in
/// drive or plan changes.
struct ScenarioSenderChoice {
    /// How reports name the reference sender; its version is this binary's.
    static let referenceName = "pushproof reference"

    static let specs: [OptionSpec] = [
        .value("sender", "NAME", "The sender under test (with --scenario): the reference one, in this process.", default: "reference"),
    ]

    init(_ arguments: ParsedArguments) throws(UsageError) {
        let sender = arguments.value("sender") ?? "reference"
        guard sender == "reference" else {
            throw UsageError(message: "--sender: only the reference sender can be run so far, not '\(sender)'")
        }
    }

    /// A fresh sender for one scenario.
    func make() -> any ScenarioSender { ReferenceSender() }

    /// Which sender ran, for reports; `gatewaySharesMachine` says where the gateway was.
    func identity(of sender: any ScenarioSender, gatewaySharesMachine: Bool?) -> SenderIdentity {
        SenderIdentity(name: Self.referenceName, version: PushproofCommand.version, gatewaySharesMachine: gatewaySharesMachine)
    }
}

extension SenderOptions {
    /// true when every gateway origin is on loopback (the gateway shares the sender's
    /// machine); nil otherwise, since another name may still be this machine.
    var gatewayIsLocal: Bool? {
        let hosts = [apnsURL, fcmURL].map { URL(string: $0)?.host ?? "" }
        return hosts.allSatisfy { ["127.0.0.1", "localhost", "::1", "[::1]"].contains($0) || $0.hasPrefix("127.") } ? true : nil
    }
}
