import Driver
import Foundation
import JSON

/// `pushproof merge RESULT…`: the segments of one `drive` run (each `--segment I/N --result FILE`)
/// as one run, judged and reported as `drive` judges and reports it (docs/scale-out.md).
struct MergeCommand: Subcommand {
    /// `drive`'s report options that mean something after the run.
    private static let reportSpecs = LoadReportOptions.specs.filter { !["metrics-out", "abort-on-fail"].contains($0.name) }

    static let spec = CommandSpec(
        name: "merge",
        abstract: "Merge the segments of a drive run split over machines (--segment, --result) into one report; thresholds, baselines.",
        positionals: ["RESULT…"],
        options: [
            .value("max-start-skew", "MS", "Refuse a segment that started more than this after --start-at.", default: "100"),
        ] + reportSpecs,
        discussion: """
        Refused (exit 2, naming the files): results of different runs (workload, options, segment
        count or weights, --start-at), a segment missing or given twice, a segment that started
        late, a histogram of another shape. The histograms are added exactly, so the merged
        percentiles are those of all the pushes; a fan-out's time to ring all is its latest
        segment's. Thresholds and the baseline judge the merged run only. The report is drive's,
        then one line a segment.
        Exit status: 0 passed; 3 a threshold or baseline bound failed; 1 the merged run failed;
        2 a result could not be read or was refused; 64 usage.

        EXAMPLE:
          pushproof merge seg-0.json seg-1.json seg-2.json --threshold 'p99_ms<250' --junit load.xml
        """)

    let paths: [String]
    let maxStartSkew: Duration
    let reporting: LoadReportOptions

    init(_ arguments: ParsedArguments) throws {
        paths = arguments.positionals
        maxStartSkew = .milliseconds(try arguments.int("max-start-skew", default: 100, range: 0...3_600_000))
        reporting = try LoadReportOptions(arguments)
    }

    func run() async -> Int32 {
        let inputs: LoadReportOptions.Inputs
        switch reporting.readInputs(command: "merge") {
        case .success(let read): inputs = read
        case .failure(let status): return status.code
        }
        var parts: [SegmentMerge.Part] = []
        for path in paths {
            do {
                let text = try readText(path)
                parts.append(SegmentMerge.Part(path: path, result: try SegmentResult(jsonText: text)))
            } catch {
                printError("pushproof merge: \(path): \(error)")
                return ExitCode.ioError
            }
        }
        let merge: SegmentMerge
        do {
            merge = try SegmentMerge(parts, maxStartSkew: maxStartSkew)
        } catch {
            printError("pushproof merge: \(error)")
            return ExitCode.ioError
        }
        var judged = inputs
        if merge.isScenario { judged.thresholds = inputs.thresholds.withScenarioDefaults() }
        let status = reporting.finish(merge.summary, inputs: judged, findings: merge.findings, extraJSON: [
            "segments": .array(merge.parts.map { part in
                ["file": .string(part.path), "index": .number(Double(part.result.segment.index)),
                 "range": .string(part.result.segment.description), "completed": .number(Double(part.result.summary.counts.completed)),
                 "throughput_per_s": .number(part.result.summary.throughput),
                 "start_offset_ns": .number(Double(part.result.startOffset))]
            }),
            "token_cleanup": ["tokens_removed": .number(Double(merge.cleanup.tokensRemoved)),
                              "devices_deleted": .number(Double(merge.cleanup.devicesDeleted)),
                              "removal_errors": .number(Double(merge.cleanup.removalErrors))],
        ], command: "merge")
        if !reporting.quiet { for line in merge.segmentLines { printNow(line) } }
        return status
    }
}
