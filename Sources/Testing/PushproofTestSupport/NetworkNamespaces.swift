// Many machines on one, for the scale-out tests: network namespaces this process creates,
// joined by a bridge in a namespace of its own, each node's address only inside its namespace
// (nothing is added to the machine's own network), all removed afterwards.
import Foundation
import Glibc

public struct NetworkNamespaceError: Error, CustomStringConvertible {
    public var description: String
}

/// A switch namespace holding a bridge, and a namespace a node, each joined to the bridge by a
/// veth pair created inside the namespaces. Node i is `10.201.<subnet>.<11 + i>/24`. Names
/// given in `hosts` resolve inside every node (`/etc/netns/<node>/hosts`, which `ip netns
/// exec` mounts over /etc/hosts) to the listed nodes' addresses, as a headless Service's name
/// resolves to its pods. `remove()` (or release) deletes the namespaces, their veths and files.
public final class NetworkNamespaces: @unchecked Sendable {
    // @unchecked: created and removed by the one test that owns it; `removed` only read there.
    public let names: [String]
    public let addresses: [String]
    private let switchName: String
    private var removed = false
    static let ip = "/usr/sbin/ip"

    /// Why namespaces cannot be made here (not root, no iproute2), or nil.
    public static var unavailableReason: String? {
        if geteuid() != 0 { return "network namespaces need root" }
        if !FileManager.default.isExecutableFile(atPath: ip) { return "\(ip) (iproute2) is missing" }
        return nil
    }

    public init(nodes: Int, subnet: Int = 77, hosts: [String: [Int]] = [:]) throws {
        let prefix = "pp\(getpid() % 100_000)"
        switchName = prefix + "-sw"
        names = (0..<nodes).map { "\(prefix)-n\($0)" }
        addresses = (0..<nodes).map { "10.201.\(subnet).\(11 + $0)" }
        do {
            try make(hosts: hosts)
        } catch {
            remove()
            throw error
        }
    }

    private func make(hosts: [String: [Int]]) throws {
        for name in [switchName] + names { _ = try? Self.run(["netns", "del", name]) }
        try Self.run(["netns", "add", switchName])
        try Self.run(["-n", switchName, "link", "add", "br0", "type", "bridge"])
        try Self.run(["-n", switchName, "link", "set", "br0", "up"])
        var hostsFile = "127.0.0.1 localhost\n"
        for (name, members) in hosts.sorted(by: { $0.key < $1.key }) {
            for member in members { hostsFile += "\(addresses[member]) \(name)\n" }
        }
        for (index, name) in names.enumerated() {
            try Self.run(["netns", "add", name])
            // Made in the node's namespace, its peer moved straight into the switch's.
            try Self.run(["-n", name, "link", "add", "eth0", "type", "veth", "peer", "name", "port\(index)", "netns", switchName])
            try Self.run(["-n", switchName, "link", "set", "port\(index)", "master", "br0", "up"])
            try Self.run(["-n", name, "addr", "add", addresses[index] + "/24", "dev", "eth0"])
            try Self.run(["-n", name, "link", "set", "eth0", "up"])
            try Self.run(["-n", name, "link", "set", "lo", "up"])
            let folder = "/etc/netns/" + name
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            try hostsFile.write(toFile: folder + "/hosts", atomically: true, encoding: .utf8)
        }
    }

    /// The command prefix that runs a program in node `index`'s namespace.
    public func exec(_ index: Int) -> [String] { [Self.ip, "netns", "exec", names[index]] }

    /// Deletes every namespace (their veths go with them) and the hosts files.
    public func remove() {
        guard !removed else { return }
        removed = true
        for name in names + [switchName] {
            _ = try? Self.run(["netns", "del", name])
            try? FileManager.default.removeItem(atPath: "/etc/netns/" + name)
        }
    }

    /// The namespaces this process made that still exist (none after `remove()`).
    public var remaining: [String] {
        let listed = (try? Self.run(["netns", "list"])) ?? ""
        let present = Set(listed.split(separator: "\n").compactMap { $0.split(separator: " ").first.map(String.init) })
        return (names + [switchName]).filter(present.contains)
    }

    deinit { remove() }

    @discardableResult
    static func run(_ arguments: [String]) throws -> String {
        let result = try runTool(ip, arguments, timeoutSeconds: 30)
        guard result.status == 0 else {
            throw NetworkNamespaceError(description: "ip \(arguments.joined(separator: " ")): \(result.error)")
        }
        return result.output
    }
}
