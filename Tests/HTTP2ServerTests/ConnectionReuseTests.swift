// A push sender keeps one connection for as long as it can and trusts GOAWAY's last stream
// id to tell which requests to send again. Both must hold under what real clients do.
import Foundation
import Glibc
import HTTP2Server
import Testing

/// Reads HTTP/2 frames off a raw connection one at a time.
final class FrameReader {
    let client: RawClient
    private var buffered: [UInt8] = []

    init(_ client: RawClient) { self.client = client }

    /// The next complete frame, or nil when the peer closed or stayed silent for 5 s.
    func next() -> (type: UInt8, flags: UInt8, streamID: UInt32, payload: [UInt8])? {
        var chunk = [UInt8](repeating: 0, count: 16384)
        while true {
            if buffered.count >= 9 {
                let length = Int(buffered[0]) << 16 | Int(buffered[1]) << 8 | Int(buffered[2])
                if buffered.count >= 9 + length, let frame = parseFrames(Array(buffered[0..<(9 + length)])).first {
                    buffered.removeFirst(9 + length)
                    return frame
                }
            }
            let count = chunk.withUnsafeMutableBytes { recv(client.fd, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return nil }
            buffered += chunk[0..<count]
        }
    }
}

@Suite struct ConnectionReuseTests {
    /// What libcurl 7.88 does to a push gateway: each request gets its complete answer, then
    /// the client resets the (already closed) stream. nghttp2's rapid-reset guard, left at its
    /// defaults, answered the 1001st such reset with GOAWAY(INTERNAL_ERROR); 3000 are far past
    /// its burst and past what its refill (33 a second) could make up in any plausible run time.
    @Test func resetsOfFinishedStreamsDoNotEndTheConnection() throws {
        try withServer(handler: EchoHandler(), configuration: ServerConfiguration(threads: 1)) { server, port in
            let client = try RawClient(port: port)
            let reader = FrameReader(client)
            client.send(clientPreface + emptySettingsFrame + [0, 0, 0, 4, 1, 0, 0, 0, 0])  // + SETTINGS ACK
            let requests = 3000
            var answered = 0
            var goAway: [UInt8]?
            // Each reset goes out in one write with the next request (no Nagle wait between
            // them); the last one with a PING whose ACK shows the connection is still up.
            var pendingReset: [UInt8] = []
            requests: for index in 0...requests {
                let streamID = UInt32(2 * index + 1)
                let id = withUnsafeBytes(of: streamID.bigEndian) { Array($0) }
                if index == requests {
                    client.send(pendingReset + [0, 0, 8, 6, 0, 0, 0, 0, 0] + Array("pingpong".utf8))
                    while let frame = reader.next() {
                        if frame.type == 0x7 { goAway = frame.payload }
                        if frame.type == 0x7 || (frame.type == 0x6 && frame.flags & 0x1 != 0) { break }
                    }
                    break
                }
                // HEADERS, END_STREAM | END_HEADERS: GET http "/", :authority "x", x-empty
                // (the echo handler then answers with one HEADERS frame, as APNs does).
                let block: [UInt8] = [0x82, 0x86, 0x84, 0x01, 0x01, UInt8(ascii: "x"), 0x00, 0x07] + Array("x-empty".utf8) + [0x00]
                client.send(pendingReset + [0, 0, UInt8(block.count), 1, 5] + id + block)
                while let frame = reader.next() {
                    if frame.type == 0x7 {
                        goAway = frame.payload
                        break requests
                    }
                    if frame.streamID == streamID, frame.type == 0x1 || frame.type == 0x0, frame.flags & 0x1 != 0 {
                        answered += 1
                        break
                    }
                }
                pendingReset = [0, 0, 4, 3, 0] + id + [0, 0, 0, 5]  // RST_STREAM(STREAM_CLOSED)
            }
            #expect(goAway == nil, "GOAWAY after \(answered) answered streams: \(goAway.map { Array($0.prefix(8)) } ?? [])")
            #expect(answered == requests)
            #expect(server.requestsServed == requests)
        }
    }

    /// GOAWAY names the last stream processed; the client sends every later one again on a
    /// new connection (RFC 9113 §6.8). Requests that arrive after the GOAWAY was decided but
    /// before it was written must therefore not be handled, or a push is delivered twice.
    @Test func streamsAfterOurGoAwayAreRefusedNotHandled() throws {
        let arrivals = ArrivalCounter()
        try withServer(handler: EchoHandler(arrivals: arrivals), configuration: ServerConfiguration(threads: 1)) { server, port in
            let client = try RawClient(port: port)
            let reader = FrameReader(client)
            // Three requests in one write; the first one's answer carries a GOAWAY.
            var bytes = clientPreface + emptySettingsFrame + [0, 0, 0, 4, 1, 0, 0, 0, 0]
            for streamID: UInt8 in [1, 3, 5] {
                var block: [UInt8] = [0x82, 0x86, 0x84, 0x01, 0x01, UInt8(ascii: "x")]
                if streamID == 1 { block += [0x00, 0x08] + Array("x-action".utf8) + [0x06] + Array("goaway".utf8) }
                bytes += [0, 0, UInt8(block.count), 1, 5, 0, 0, 0, streamID] + block
            }
            client.send(bytes)
            // After its GOAWAY and the last stream's answer the server closes the connection.
            var frames: [(type: UInt8, flags: UInt8, streamID: UInt32, payload: [UInt8])] = []
            while let frame = reader.next() { frames.append(frame) }
            let goAway = try #require(frames.first { $0.type == 0x7 })
            #expect(Array(goAway.payload[0...3]) == [0, 0, 0, 1], "last stream id 1")
            #expect(frames.filter { $0.type == 0x1 }.map { $0.streamID } == [1], "only stream 1 is answered")
            let refused = frames.filter { $0.type == 0x3 && $0.payload == [0, 0, 0, 7] }.map { $0.streamID }
            #expect(refused == [3, 5])
            #expect(arrivals.count.load(ordering: .relaxed) == 1, "the handler saw only stream 1")
        }
    }
}
