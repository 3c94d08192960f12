extension CurlLoop {
    /// The last header set built per transport. A fan-out sends thousands of pushes with the
    /// same headers and provider token: they share one `HeaderSet`, so neither the lines
    /// nor the easy handles' libcurl lists are rebuilt per push.
    struct HeaderSetCache {
        var source: [(name: String, value: String)] = []
        var credential = ""
        var set = CurlTransfer.HeaderSet(id: 0, lines: [])

        /// Whether `headers` are the ones the cached set was built (and checked) from.
        func sourceMatches(_ headers: [(name: String, value: String)]) -> Bool {
            guard set.id != 0, headers.count == source.count else { return false }
            for index in headers.indices {
                guard headers[index].name == source[index].name, headers[index].value == source[index].value else { return false }
            }
            return true
        }

        func matches(_ headers: [(name: String, value: String)], credential: String) -> Bool {
            sourceMatches(headers) && credential == self.credential
        }
    }
}
