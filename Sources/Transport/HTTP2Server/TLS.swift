// OpenSSL for TLS listeners: one SSL_CTX per listener per event loop (so no context is
// shared between threads) and one SSL per connection, both owned by the loop's thread.
import COpenSSL
import Foundation

/// The wire protocol ALPN settled on (RFC 7301), or none.
enum NegotiatedProtocol {
    case http2
    case http1
    case none
}

/// ALPN server selection (RFC 7301 §3.2): h2 when the client offers it, else http/1.1; a
/// client that offers only protocols this server does not speak gets the fatal
/// `no_application_protocol` alert the RFC asks for ("SHALL"). A client that offers no ALPN
/// at all is never asked (this callback does not run): the handshake goes on and the
/// connection sniffs the h2 preface, since some APNs clients speak h2 over TLS without ALPN.
/// OpenSSL's SSL_select_next_proto
/// walks the lists: the first of the server's protocols (`argument`, the context's
/// ``TLSContext/serverProtocols``) that the client offers, in the server's order of preference.
private func selectApplicationProtocol(
    _ ssl: OpaquePointer?, _ out: UnsafeMutablePointer<UnsafePointer<UInt8>?>?,
    _ outLength: UnsafeMutablePointer<UInt8>?, _ offered: UnsafePointer<UInt8>?,
    _ offeredLength: UInt32, _ argument: UnsafeMutableRawPointer?
) -> Int32 {
    guard let out, let outLength, let offered, let argument else { return SSL_TLSEXT_ERR_NOACK }
    let server = argument.assumingMemoryBound(to: UInt8.self)
    var selected: UnsafeMutablePointer<UInt8>?
    let result = SSL_select_next_proto(&selected, outLength, server, UInt32(TLSContext.serverProtocolList.count),
                                       offered, offeredLength)
    // NO_OVERLAP points `selected` at the client's first protocol: that is not an answer here.
    guard result == OPENSSL_NPN_NEGOTIATED, let selected else { return SSL_TLSEXT_ERR_ALERT_FATAL }
    out.pointee = UnsafePointer(selected)
    return SSL_TLSEXT_ERR_OK
}

/// PEM text loaded once per listener at start-up (cold path: Foundation is fine here).
struct TLSMaterial: Sendable {
    var certificateChain: [UInt8]
    var privateKey: [UInt8]
    var requestsClientCertificate: Bool

    init(_ configuration: TLSConfiguration) throws(HTTPServerError) {
        requestsClientCertificate = configuration.requestsClientCertificate
        switch configuration.source {
        case let .pem(certificateChain, privateKey):
            self.certificateChain = Array(certificateChain.utf8)
            self.privateKey = Array(privateKey.utf8)
        case let .files(certificatePath, keyPath):
            guard let certificate = FileManager.default.contents(atPath: certificatePath) else {
                throw HTTPServerError("cannot read TLS certificate file \(certificatePath)")
            }
            guard let key = FileManager.default.contents(atPath: keyPath) else {
                throw HTTPServerError("cannot read TLS private key file \(keyPath)")
            }
            self.certificateChain = [UInt8](certificate)
            self.privateKey = [UInt8](key)
        }
    }
}

private func openSSLErrorText() -> String {
    let code = ERR_get_error()
    ERR_clear_error()
    guard code != 0 else { return "unknown OpenSSL error" }
    var buffer = [CChar](repeating: 0, count: 256)
    ERR_error_string_n(code, &buffer, buffer.count)
    return stringFromNullTerminated(buffer)
}

/// Owns one SSL_CTX configured for a server: TLS 1.2 minimum, ALPN h2/http1.1.
final class TLSContext {
    let context: OpaquePointer
    /// The ALPN protocols this server speaks, in order of preference, in the wire format (length
    /// byte, name): `h2`, `http/1.1`.
    static let serverProtocolList: [UInt8] = [2] + Array("h2".utf8) + [8] + Array("http/1.1".utf8)
    /// `serverProtocolList`, in memory the context owns for its lifetime: the selection callback
    /// may answer with a pointer into it, which OpenSSL reads after the callback returns.
    private let serverProtocols: UnsafeMutableBufferPointer<UInt8>

    init(material: TLSMaterial) throws(HTTPServerError) {
        guard let context = SSL_CTX_new(TLS_server_method()) else {
            throw HTTPServerError("SSL_CTX_new: \(openSSLErrorText())")
        }
        self.context = context
        serverProtocols = .allocate(capacity: Self.serverProtocolList.count)
        _ = serverProtocols.initialize(from: Self.serverProtocolList)
        _ = cshim_SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION)
        _ = cshim_SSL_CTX_set_mode(context, Int(SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER))
        SSL_CTX_set_alpn_select_cb(context, selectApplicationProtocol, UnsafeMutableRawPointer(serverProtocols.baseAddress))
        if material.requestsClientCertificate {
            // Accept whatever the client presents; the application decides.
            SSL_CTX_set_verify(context, SSL_VERIFY_PEER, { _, _ in 1 })
            // Required for session resumption once peer verification is on.
            let sessionContext: [UInt8] = Array("pushproof".utf8)
            _ = SSL_CTX_set_session_id_context(context, sessionContext, UInt32(sessionContext.count))
        }
        try loadCertificateChain(material.certificateChain)
        try loadPrivateKey(material.privateKey)
        guard SSL_CTX_check_private_key(context) == 1 else {
            throw HTTPServerError("TLS private key does not match the certificate: \(openSSLErrorText())")
        }
    }

    deinit {
        SSL_CTX_free(context)
        serverProtocols.deallocate()
    }

    private func loadCertificateChain(_ pem: [UInt8]) throws(HTTPServerError) {
        let result: HTTPServerError? = pem.withUnsafeBytes { bytes in
            guard let bio = BIO_new_mem_buf(bytes.baseAddress, Int32(bytes.count)) else {
                return HTTPServerError("BIO_new_mem_buf failed")
            }
            defer { BIO_free(bio) }
            guard let leaf = PEM_read_bio_X509(bio, nil, nil, nil) else {
                return HTTPServerError("TLS certificate is not valid PEM: \(openSSLErrorText())")
            }
            defer { X509_free(leaf) }
            guard SSL_CTX_use_certificate(context, leaf) == 1 else {
                return HTTPServerError("SSL_CTX_use_certificate: \(openSSLErrorText())")
            }
            // Intermediates: the context takes ownership of each on success.
            while let intermediate = PEM_read_bio_X509(bio, nil, nil, nil) {
                if SSL_CTX_ctrl(context, SSL_CTRL_EXTRA_CHAIN_CERT, 0, UnsafeMutableRawPointer(intermediate)) != 1 {
                    X509_free(intermediate)
                    return HTTPServerError("cannot add intermediate certificate: \(openSSLErrorText())")
                }
            }
            ERR_clear_error()  // the loop ends on a "no start line" error, which is expected
            return nil
        }
        if let result { throw result }
    }

    private func loadPrivateKey(_ pem: [UInt8]) throws(HTTPServerError) {
        let result: HTTPServerError? = pem.withUnsafeBytes { bytes in
            guard let bio = BIO_new_mem_buf(bytes.baseAddress, Int32(bytes.count)) else {
                return HTTPServerError("BIO_new_mem_buf failed")
            }
            defer { BIO_free(bio) }
            guard let key = PEM_read_bio_PrivateKey(bio, nil, nil, nil) else {
                return HTTPServerError("TLS private key is not valid PEM: \(openSSLErrorText())")
            }
            defer { EVP_PKEY_free(key) }
            guard SSL_CTX_use_PrivateKey(context, key) == 1 else {
                return HTTPServerError("SSL_CTX_use_PrivateKey: \(openSSLErrorText())")
            }
            return nil
        }
        if let result { throw result }
    }
}

/// Outcome of one non-blocking OpenSSL call.
enum TLSResult {
    case done(Int)
    case wantRead
    case wantWrite
    /// The peer closed (close_notify or EOF).
    case closed
    case failed
}

/// Owns one SSL object on a non-blocking socket.
final class TLSStream {
    let ssl: OpaquePointer
    private(set) var handshakeComplete = false

    init?(context: TLSContext, fd: Int32) {
        guard let ssl = SSL_new(context.context) else { return nil }
        self.ssl = ssl
        SSL_set_fd(ssl, fd)
        SSL_set_accept_state(ssl)
    }

    deinit { SSL_free(ssl) }

    private func classify(_ rc: Int32) -> TLSResult {
        switch SSL_get_error(ssl, rc) {
        case SSL_ERROR_WANT_READ: return .wantRead
        case SSL_ERROR_WANT_WRITE: return .wantWrite
        case SSL_ERROR_ZERO_RETURN: return .closed
        default:
            ERR_clear_error()
            return .failed
        }
    }

    func handshake() -> TLSResult {
        ERR_clear_error()
        let rc = SSL_do_handshake(ssl)
        if rc == 1 {
            handshakeComplete = true
            return .done(0)
        }
        return classify(rc)
    }

    var negotiatedProtocol: NegotiatedProtocol {
        var data: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &data, &length)
        guard let data, length > 0 else { return .none }
        if length == 2, data[0] == UInt8(ascii: "h"), data[1] == UInt8(ascii: "2") { return .http2 }
        return .http1
    }

    @inline(__always)
    func read(into buffer: UnsafeMutableRawBufferPointer) -> TLSResult {
        ERR_clear_error()
        let rc = SSL_read(ssl, buffer.baseAddress, Int32(clamping: buffer.count))
        if rc > 0 { return .done(Int(rc)) }
        return classify(rc)
    }

    @inline(__always)
    func write(_ bytes: UnsafeRawBufferPointer) -> TLSResult {
        ERR_clear_error()
        let rc = SSL_write(ssl, bytes.baseAddress, Int32(clamping: bytes.count))
        if rc > 0 { return .done(Int(rc)) }
        return classify(rc)
    }

    /// The client's certificate in DER, if it sent one.
    func peerCertificateDER() -> [UInt8]? {
        guard let certificate = SSL_get1_peer_certificate(ssl) else { return nil }
        defer { X509_free(certificate) }
        let length = i2d_X509(certificate, nil)
        guard length > 0 else { return nil }
        var der = [UInt8](repeating: 0, count: Int(length))
        let written: Int32 = der.withUnsafeMutableBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return i2d_X509(certificate, &cursor)
        }
        return written == length ? der : nil
    }

    /// Decrypted or buffered bytes OpenSSL holds that epoll cannot see.
    var hasPendingData: Bool { SSL_has_pending(ssl) == 1 }

    /// Best effort close_notify before the socket is shut down.
    func sendCloseNotify() {
        ERR_clear_error()
        if handshakeComplete { _ = SSL_shutdown(ssl) }
        ERR_clear_error()
    }
}
