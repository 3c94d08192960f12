// Replicas of one `pushproof serve` configuration behind one run: `--admin` given once per
// replica, or once with a name that resolves to several addresses (a Kubernetes headless
// Service's). What a run sets (token states, faults, answer rules, a reset) it sets on every
// replica, what it counts it adds up, and what arrived it reads from every journal.
import Descriptors

public struct GatewayReplicas: Sendable {
    /// The replicas' control APIs, in the order given (resolved names in the resolver's order).
    public let admins: [AdminClient]

    /// `admins` must not be empty.
    public init(_ admins: [AdminClient]) {
        precondition(!admins.isEmpty, "replicas need a control API")
        self.admins = admins
    }

    /// One replica, or each address `admin`'s host resolves to when it is a name (an IP
    /// literal is one replica): a headless Service's name gives every pod behind it.
    public static func resolving(_ admin: AdminClient) throws(AdminError) -> [AdminClient] {
        guard !isLiteral(admin.host) else { return [admin] }
        let addresses: [String]
        do {
            addresses = try HostAddresses.resolve(admin.host)
        } catch {
            throw AdminError(message: "the control API \(admin.baseURL): \(error)")
        }
        return addresses.map { address in
            AdminClient(host: address, port: admin.port, baseURL: "http://" + (address.contains(":") ? "[\(address)]" : address) + ":\(admin.port)")
        }
    }

    private static func isLiteral(_ host: String) -> Bool {
        host.contains(":") || (!host.isEmpty && host.allSatisfy { $0.isNumber || $0 == "." })
    }

    public var count: Int { admins.count }

    /// `http://127.0.0.1:9090`, or `2 replicas (http://10.0.0.1:9090, http://10.0.0.2:9090)`.
    public var description: String {
        count == 1 ? admins[0].baseURL : "\(count) replicas (" + admins.map(\.baseURL).joined(separator: ", ") + ")"
    }

    /// `PUT /tokens/<token>` on every replica: whichever one the push reaches answers it so.
    public func setTokenState(_ token: String, state: String) throws(AdminError) {
        for admin in admins { try admin.setTokenState(token, state: state) }
    }

    /// `DELETE /provider-tokens` on every replica.
    public func forgetProviderTokenUpdates() throws(AdminError) {
        for admin in admins { try admin.forgetProviderTokenUpdates() }
    }

    /// The replicas' spec violations added up; nil when none judges (no --specs).
    public func specViolationCount() throws(AdminError) -> Int? {
        var total: Int?
        for admin in admins {
            if let count = try admin.specViolationCount() { total = (total ?? 0) + count }
        }
        return total
    }
}
