// A host name's addresses, all of them: a Kubernetes headless Service's name resolves to every
// pod behind it, where a connection (libcurl's) would take only the first.
import Glibc

public enum HostAddresses {
    public struct ResolutionError: Error, Sendable, CustomStringConvertible {
        public let description: String
    }

    /// Every address `host` resolves to (getaddrinfo), numeric (`10.0.0.7`, `fd00::7`), each
    /// once, in the resolver's order. An IP literal resolves to itself.
    public static func resolve(_ host: String) throws(ResolutionError) -> [String] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var results: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, nil, &hints, &results)
        guard status == 0 else {
            throw ResolutionError(description: "cannot resolve \(host): \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(results) }
        var addresses: [String] = []
        var next = results
        while let info = next {
            var name = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            if getnameinfo(info.pointee.ai_addr, info.pointee.ai_addrlen, &name, socklen_t(name.count), nil, 0, NI_NUMERICHOST) == 0 {
                let address = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                if !addresses.contains(address) { addresses.append(address) }
            }
            next = info.pointee.ai_next
        }
        return addresses
    }
}
