/// A response body the transport pulls in pieces as the connection drains, instead of one
/// array built before the answer is sent: a large answer (the control API's `GET /requests`,
/// up to the journal's 16 MiB) to a client that reads slowly, or not at all, then costs one
/// piece of memory instead of the whole answer (nginx's output chain, nghttp2's data
/// provider: both read the body on demand).
///
/// The transport calls `next` on its loop thread only, in order, until it returns true; it
/// drops the body unfinished if the client goes away. HTTP/2 sends the pieces as DATA frames
/// as the peer's flow-control window allows; HTTP/1.1 as chunks (`transfer-encoding:
/// chunked`), or, to an HTTP/1.0 client, delimited by closing the connection.
public protocol StreamedBody: AnyObject, Sendable {
    /// Appends the next piece of the body to `out`: about `preferredBytes` (a piece may be
    /// larger, e.g. one whole record line, or smaller). Returns true once the body is
    /// complete: nothing more will be appended. Must append at least one byte unless it
    /// returns true, so every call makes progress.
    func next(into out: inout [UInt8], preferredBytes: Int) -> Bool
}

extension StreamedBody {
    /// The whole body at once: for a transport or a test that needs it in one array.
    public func collect() -> [UInt8] {
        var out: [UInt8] = []
        while !next(into: &out, preferredBytes: 1 << 16) {}
        return out
    }
}
