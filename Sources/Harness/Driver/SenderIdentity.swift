import JSON

/// Which sender a load run measured, and where the gateway ran: figures of a sender sharing
/// its CPUs with the gateway (the embedded one, or a `pushproof serve` on loopback) are not
/// those of a sender with the machine to itself (load-testing.md, "Throughput and comparisons").
public struct SenderIdentity: Sendable, Equatable {
    /// "pushproof reference", or what an adapter's `hello` answered.
    public var name: String
    public var version: String
    /// true: the gateway ran on the sender's machine; false: elsewhere; nil: not known.
    public var gatewaySharesMachine: Bool?

    public init(name: String, version: String, gatewaySharesMachine: Bool?) {
        self.name = name
        self.version = version
        self.gatewaySharesMachine = gatewaySharesMachine
    }

    /// "pushproof reference 0.1.0; the gateway shared its machine".
    public var text: String {
        let place = switch gatewaySharesMachine {
        case true?: "the gateway shared its machine"
        case false?: "the gateway ran on another machine"
        case nil: "whether the gateway shared its machine is not known"
        }
        return "\(name) \(version); \(place)"
    }

    public var json: JSONValue {
        ["name": .string(name), "version": .string(version),
         "gateway_shares_machine": gatewaySharesMachine.map(JSONValue.bool) ?? .null]
    }

    init(json fields: JSONFields) throws(JSONFieldError) {
        self.init(name: try fields.requiredString("name", allowEmpty: true), version: try fields.requiredString("version", allowEmpty: true),
                  gatewaySharesMachine: try fields.bool("gateway_shares_machine"))
    }
}
