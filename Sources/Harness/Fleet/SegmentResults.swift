import JSON

/// Segment results out of completed pods: a segment pod prints its `--result` file between two
/// marker lines (`kubectl logs` keeps a completed pod's output until the pod is deleted; its
/// emptyDir does not survive it), and these read them back.
public enum SegmentResults {
    public static func beginMarker(runID: String, index: String) -> String { "----- BEGIN PUSHPROOF RESULT \(runID) \(index) -----" }
    public static func endMarker(runID: String, index: String) -> String { "----- END PUSHPROOF RESULT \(runID) \(index) -----" }

    public struct Refusal: Error, Equatable, CustomStringConvertible {
        public var pod: String
        public var reason: String
        public var description: String { "\(pod): \(reason)" }
    }

    /// The one result a pod's log holds for `runID`: its segment index and JSON text.
    public static func extract(log: String, runID: String, pod: String) throws(Refusal) -> (index: Int, json: String) {
        let lines = log.split(separator: "\n", omittingEmptySubsequences: false).map { $0.hasSuffix("\r") ? $0.dropLast() : $0 }
        let beginPrefix = "----- BEGIN PUSHPROOF RESULT \(runID) "
        let begins = lines.indices.filter { lines[$0].hasPrefix(beginPrefix) && lines[$0].hasSuffix(" -----") }
        guard let begin = begins.first else {
            throw Refusal(pod: pod, reason: "no result markers for run \(runID) in its log (drive failed before writing one, or the log was rotated)")
        }
        guard begins.count == 1 else { throw Refusal(pod: pod, reason: "\(begins.count) results for run \(runID) in one log") }
        let indexText = lines[begin].dropFirst(beginPrefix.count).dropLast(" -----".count)
        guard let index = Int(indexText), index >= 0 else { throw Refusal(pod: pod, reason: "the result marker's index '\(indexText)' is not a number") }
        let end = endMarker(runID: runID, index: String(index))
        guard let close = lines[(begin + 1)...].firstIndex(where: { $0 == end }) else {
            throw Refusal(pod: pod, reason: "segment \(index)'s result has no end marker (the log is cut short)")
        }
        let json = lines[(begin + 1)..<close].joined(separator: "\n").trimmingWhitespace()
        do {
            guard case .object = try JSONParser.parse(json) else { throw Refusal(pod: pod, reason: "segment \(index)'s result is not a JSON object") }
        } catch let error as JSONError {
            throw Refusal(pod: pod, reason: "segment \(index)'s result is not JSON: \(error)")
        } catch {
            throw error as! Refusal
        }
        return (index, json + "\n")
    }

    /// Every segment exactly once, in index order: the run is void with one missing or doubled.
    public static func complete(_ results: [(pod: String, index: Int, json: String)], segments: Int) throws(Refusal) -> [String] {
        var byIndex: [Int: (pod: String, json: String)] = [:]
        for result in results {
            if let earlier = byIndex[result.index] {
                throw Refusal(pod: result.pod, reason: "segment \(result.index) was already reported by \(earlier.pod)")
            }
            guard result.index < segments else { throw Refusal(pod: result.pod, reason: "segment \(result.index) is outside 0..<\(segments)") }
            byIndex[result.index] = (result.pod, result.json)
        }
        if let missing = (0..<segments).first(where: { byIndex[$0] == nil }) {
            throw Refusal(pod: "segment \(missing)", reason: "no pod reported it (\(byIndex.count) of \(segments) segments collected)")
        }
        return (0..<segments).map { byIndex[$0]!.json }
    }
}

extension String {
    fileprivate func trimmingWhitespace() -> String {
        var scalars = Substring(self)
        while let first = scalars.first, first.isWhitespace { scalars.removeFirst() }
        while let last = scalars.last, last.isWhitespace { scalars.removeLast() }
        return String(scalars)
    }
}
