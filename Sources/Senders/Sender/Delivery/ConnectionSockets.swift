// The sockets libcurl opens for the delivery thread, so the loop can cork them while it
// hands libcurl a batch of requests.
import CCurl
import Foundation

/// Every socket libcurl opened for the loop's transfers (told through CURLOPT_SOCKOPTFUNCTION
/// and CURLOPT_CLOSESOCKETFUNCTION). Loop thread only.
final class ConnectionSockets {
    private(set) var descriptors: [Int32] = []

    /// The value the easy handles pass back to the callbacks.
    var callbackContext: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    fileprivate func opened(_ fd: Int32) { descriptors.append(fd) }
    fileprivate func closed(_ fd: Int32) { descriptors.removeAll { $0 == fd } }

    /// TCP_CORK on every connection: libcurl writes each request as it is added (one
    /// sendto per stream, each a full trip through loopback TCP); corked, the writes of one
    /// `curl_multi_perform` leave as a few full segments when `uncork` runs.
    func cork() { setCork(1) }
    func uncork() { setCork(0) }

    private func setCork(_ on: Int32) {
        var value = on
        for fd in descriptors {
            _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_CORK, &value, socklen_t(MemoryLayout<Int32>.size))
        }
    }
}

let curlSocketOpened: cshim_sockopt_callback = { context, fd, purpose in
    if purpose == CURLSOCKTYPE_IPCXN, let context {
        Unmanaged<ConnectionSockets>.fromOpaque(context).takeUnretainedValue().opened(fd)
    }
    return CURL_SOCKOPT_OK
}

let curlSocketClosing: cshim_closesocket_callback = { context, fd in
    if let context { Unmanaged<ConnectionSockets>.fromOpaque(context).takeUnretainedValue().closed(fd) }
    return close(fd)
}
