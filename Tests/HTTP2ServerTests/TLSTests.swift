import Foundation
import HTTP2Server
import HTTPCore
import Testing

/// A throwaway P-256 certificate for localhost / 127.0.0.1, made with the openssl CLI.
struct TestCertificate {
    let directory: String
    var certificatePath: String { directory + "/cert.pem" }
    var keyPath: String { directory + "/key.pem" }

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("http2server-tls-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let result = try runTool("/usr/bin/openssl", [
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=localhost",
            "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-days", "2",
            "-keyout", directory + "/key.pem", "-out", directory + "/cert.pem",
        ])
        guard result.status == 0 else { throw TestCertificateError.openssl(result.error) }
    }

    func remove() { try? FileManager.default.removeItem(atPath: directory) }

    var fileConfiguration: TLSConfiguration {
        TLSConfiguration(certificateChainPath: certificatePath, privateKeyPath: keyPath)
    }

    func pemConfiguration() throws -> TLSConfiguration {
        TLSConfiguration(certificateChainPEM: try String(contentsOfFile: certificatePath, encoding: .utf8),
                         privateKeyPEM: try String(contentsOfFile: keyPath, encoding: .utf8))
    }
}

enum TestCertificateError: Error { case openssl(String) }

@Suite struct TLSTests {
    @Test func alpnH2WithVerifiedCertificate() throws {
        let certificate = try TestCertificate()
        defer { certificate.remove() }
        try withServer(tls: certificate.fileConfiguration) { _, port in
            let result = try curl(["--http2", "--cacert", certificate.certificatePath, "-w", "%{http_version}",
                                   "https://127.0.0.1:\(port)/secure", "--data-binary", "tls body"])
            #expect(result.status == 0, "\(result.error)")
            #expect(result.output.contains("version=h2\ntls=true\n"))
            #expect(result.output.contains("body=tls body\n"))
            #expect(result.output.hasSuffix("2"))
        }
    }

    @Test func alpnHTTP1KeepAliveFromPEMStrings() throws {
        let certificate = try TestCertificate()
        defer { certificate.remove() }
        try withServer(tls: try certificate.pemConfiguration()) { server, port in
            let result = try curl(["--http1.1", "--cacert", certificate.certificatePath,
                                   "https://localhost:\(port)/one", "https://localhost:\(port)/two"])
            #expect(result.status == 0, "\(result.error)")
            #expect(result.output.contains("path=/one\nversion=http/1.1\ntls=true\nstream=1\n"))
            #expect(result.output.contains("path=/two\nversion=http/1.1\ntls=true\nstream=2\n"))
            #expect(server.acceptedConnections == 1)
        }
    }

    @Test func emptyBodyOverTLSHasNoDataFrame() throws {
        let certificate = try TestCertificate()
        defer { certificate.remove() }
        try withServer(tls: certificate.fileConfiguration) { _, port in
            let result = try runTool("/usr/bin/nghttp", ["-v", "-H", "x-empty: 1", "https://127.0.0.1:\(port)/"])
            #expect(result.status == 0, "\(result.error)")
            #expect(result.output.contains("recv HEADERS frame"))
            #expect(!result.output.contains("recv DATA frame"))
        }
    }

    @Test func manyStreamsOverTLS() throws {
        let certificate = try TestCertificate()
        defer { certificate.remove() }
        try withServer(tls: certificate.fileConfiguration) { server, port in
            let result = try runTool("/usr/bin/h2load", ["-n", "2000", "-c", "4", "-m", "50", "-H", "x-empty: 1",
                                                         "https://127.0.0.1:\(port)/"])
            #expect(result.output.contains("2000 succeeded, 0 failed, 0 errored"), "\(result.output)")
            #expect(result.output.contains("Application protocol: h2"))
            #expect(server.requestsServed == 2000)
        }
    }

    @Test func h2OverTLSWithoutALPNIsDetectedByPreface() throws {
        let certificate = try TestCertificate()
        defer { certificate.remove() }
        try withServer(tls: certificate.fileConfiguration) { _, port in
            // HEADERS: GET, https, "/", :authority "x" (literal, not indexed); then our GOAWAY.
            let request = clientPreface + emptySettingsFrame
                + [0, 0, 6, 1, 5, 0, 0, 0, 1, 0x82, 0x87, 0x84, 0x01, 0x01, UInt8(ascii: "x")]
                + [0, 0, 8, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
            let result = try runTool("/usr/bin/openssl", ["s_client", "-connect", "127.0.0.1:\(port)", "-quiet"],
                                     input: request)
            let frames = parseFrames(result.outputBytes)
            let headers = try #require(frames.first { $0.type == 0x1 && $0.streamID == 1 })
            #expect(headers.payload.first == 0x88)  // HPACK static index 8: ":status: 200"
            let data = try #require(frames.first { $0.type == 0x0 && $0.streamID == 1 })
            #expect(String(decoding: data.payload, as: UTF8.self).contains("version=h2\ntls=true\n"))
        }
    }

    /// RFC 7301 §3.2: a client offering only protocols the server does not speak gets the
    /// fatal no_application_protocol alert; one offering h2 among them gets h2.
    @Test func alpnWithNoOverlapIsRefusedWithNoApplicationProtocol() throws {
        let certificate = try TestCertificate()
        defer { certificate.remove() }
        try withServer(tls: certificate.fileConfiguration) { _, port in
            let refused = try runTool("/usr/bin/openssl", ["s_client", "-connect", "127.0.0.1:\(port)", "-alpn", "spdy/3,ftp"],
                                      input: [])
            #expect(refused.status != 0)
            #expect((refused.output + refused.error).contains("no application protocol"), "\(refused.error)")
            let chosen = try runTool("/usr/bin/openssl", ["s_client", "-connect", "127.0.0.1:\(port)", "-alpn", "spdy/3,h2"], input: [])
            #expect(chosen.output.contains("ALPN protocol: h2"), "\(chosen.output)")
        }
    }

    @Test func plaintextClientOnTheTLSPortIsDroppedAndOthersServed() throws {
        let certificate = try TestCertificate()
        defer { certificate.remove() }
        try withServer(tls: certificate.fileConfiguration) { server, port in
            let client = try RawClient(port: port)
            client.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            let (bytes, closed) = client.readToEnd()
            #expect(closed)
            #expect(!String(decoding: bytes, as: UTF8.self).contains("HTTP/1.1"))
            do {
                // A ClientHello record header promising more than is sent, then gone.
                let partial = try RawClient(port: port)
                partial.send([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03])
            }
            let fresh = try curl(["--http2", "--cacert", certificate.certificatePath, "https://127.0.0.1:\(port)/fine"])
            #expect(fresh.output.contains("path=/fine"))
            #expect(server.requestsServed == 1)
        }
    }

    @Test func clientCertificateIsHandedToTheApplication() throws {
        let server = try TestCertificate()
        let client = try TestCertificate()
        defer {
            server.remove()
            client.remove()
        }
        let der = try runTool("/usr/bin/openssl", ["x509", "-in", client.certificatePath, "-outform", "DER"]).outputBytes
        #expect(der.count > 100)
        let tls = TLSConfiguration(certificateChainPath: server.certificatePath, privateKeyPath: server.keyPath,
                                   requestsClientCertificate: true)
        try withServer(tls: tls) { _, port in
            let withCertificate = try curl(["--http2", "--cacert", server.certificatePath, "--cert", client.certificatePath,
                                            "--key", client.keyPath, "https://127.0.0.1:\(port)/cert"])
            #expect(withCertificate.output.contains("clientcert=\(der.map { String($0, radix: 16) }.joined(separator: ":"))\n"))
            // No certificate still completes the handshake: the application decides.
            let without = try curl(["--http2", "--cacert", server.certificatePath, "https://127.0.0.1:\(port)/none"])
            #expect(without.output.contains("path=/none"))
            #expect(!without.output.contains("clientcert="))
        }
    }

    @Test(arguments: ["--http2", "--http1.1"])
    func largeResponsesArriveIntactOverTLS(flag: String) throws {
        let certificate = try TestCertificate()
        defer { certificate.remove() }
        try withServer(tls: certificate.fileConfiguration) { _, port in
            let size = 3_000_000
            let result = try runTool("/usr/bin/curl", ["-sS", "--max-time", "10", flag, "--cacert", certificate.certificatePath,
                                                       "-H", "x-response-bytes: \(size)",
                                                       "https://127.0.0.1:\(port)/big", "https://127.0.0.1:\(port)/big"])
            #expect(result.status == 0, "\(result.error)")
            let expected = patternBytes(size)
            #expect(result.outputBytes == expected + expected)
        }
    }

    @Test func gatewayAndAdminListenersWithDifferentHandlers() throws {
        let certificate = try TestCertificate()
        defer { certificate.remove() }
        let server = HTTPServer(listeners: [
            ListenerConfiguration(host: "127.0.0.1", port: 0, tls: certificate.fileConfiguration, handler: EchoHandler()),
            ListenerConfiguration(host: "127.0.0.1", port: 0, handler: FixedHandler(text: "admin")),
        ], configuration: ServerConfiguration(threads: 2))
        let bound = try server.start()
        defer { server.shutdown() }
        #expect(bound.count == 2)
        #expect(bound[0].isTLS && !bound[1].isTLS)
        #expect(bound[0].port != bound[1].port)
        #expect(server.boundListeners == bound)
        let gateway = try curl(["--http2", "--cacert", certificate.certificatePath, "https://127.0.0.1:\(bound[0].port)/g"])
        #expect(gateway.output.contains("path=/g"))
        let admin = try curl(["--http1.1", "http://127.0.0.1:\(bound[1].port)/admin"])
        #expect(admin.output == "admin")
    }
}

struct FixedHandler: HTTPHandler {
    var text: String
    func handle(_ request: HTTPRequest, on connection: ConnectionContext) -> HTTPResponse {
        HTTPResponse(status: 200, body: Array(text.utf8))
    }
}
