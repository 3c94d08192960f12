import Testing
@testable import Fleet

@Suite struct SegmentResultsTests {
    static func log(index: Int, json: String, run: String = "storm-1") -> String {
        "drive: 2000 pushes/s\nsome: noise\n" + SegmentResults.beginMarker(runID: run, index: String(index)) + "\n" + json + "\n\n"
            + SegmentResults.endMarker(runID: run, index: String(index)) + "\n"
    }

    func refusal(_ log: String) -> String? {
        do { _ = try SegmentResults.extract(log: log, runID: "storm-1", pod: "pod/p"); return nil } catch { return error.description }
    }

    @Test func theResultBetweenTheMarkers() throws {
        let result = try SegmentResults.extract(log: Self.log(index: 4, json: "{\"segment\": \"4/5\",\n \"pushes\": 10}"), runID: "storm-1", pod: "pod/p")
        #expect(result.index == 4)
        #expect(result.json == "{\"segment\": \"4/5\",\n \"pushes\": 10}\n")
    }

    @Test func aPodWithoutAWholeResultIsRefusedByName() {
        #expect(refusal("drive: error: cannot connect\n")?.hasPrefix("pod/p: no result markers for run storm-1") == true)
        #expect(refusal(Self.log(index: 1, json: "{}", run: "other-run"))?.contains("no result markers") == true)
        #expect(refusal(String(Self.log(index: 1, json: "{\"a\": 1}").dropLast(40)))?.contains("no end marker") == true)
        #expect(refusal(Self.log(index: 1, json: "{\"a\": "))?.contains("is not JSON") == true)
        #expect(refusal(Self.log(index: 1, json: "[1]"))?.contains("not a JSON object") == true)
        #expect(refusal(Self.log(index: 1, json: "{}") + Self.log(index: 1, json: "{}"))?.contains("2 results") == true)
    }

    @Test func everySegmentExactlyOnce() throws {
        #expect(try SegmentResults.complete([("pod/b", 1, "B\n"), ("pod/a", 0, "A\n")], segments: 2) == ["A\n", "B\n"])
        #expect(throws: SegmentResults.Refusal(pod: "segment 1", reason: "no pod reported it (2 of 3 segments collected)")) {
            try SegmentResults.complete([("pod/a", 0, "A"), ("pod/c", 2, "C")], segments: 3)
        }
        #expect(throws: SegmentResults.Refusal(pod: "pod/b", reason: "segment 0 was already reported by pod/a")) {
            try SegmentResults.complete([("pod/a", 0, "A"), ("pod/b", 0, "B")], segments: 1)
        }
    }

    @Test func kubectlArgumentLists() {
        let calls = KubectlCalls(runID: "storm-1", namespace: "load")
        #expect(calls.segmentPods == ["get", "pods", "--namespace", "load", "--selector",
                                      "pushproof.dev/run=storm-1,app.kubernetes.io/component=segment", "--output", "name"])
        #expect(calls.gatewayPods[5] == "pushproof.dev/run=storm-1,app.kubernetes.io/component=gateway")
        #expect(calls.segmentCount == ["get", "job", "pushproof-storm-1-segment", "--namespace", "load", "--output", "jsonpath={.spec.completions}"])
        #expect(calls.logs(pod: "pod/pushproof-storm-1-segment-0-x7k2q") == ["logs", "--namespace", "load", "pod/pushproof-storm-1-segment-0-x7k2q", "--container", "segment"])
        #expect(calls.copyRecord(pod: "pod/pushproof-storm-1-gw-1", to: "out/gateway-1.jsonl")
                == ["cp", "--container", "gateway", "load/pushproof-storm-1-gw-1:/record/requests.jsonl", "out/gateway-1.jsonl"])
        #expect(calls.deleteRun == ["delete", "configmap,secret,service,statefulset,job", "--namespace", "load", "--selector", "pushproof.dev/run=storm-1"])
        #expect(calls.gatewayOrdinal(pod: "pod/pushproof-storm-1-gw-11") == 11)
        #expect(calls.gatewayOrdinal(pod: "pod/pushproof-storm-1-gateway-x") == nil)
    }
}
