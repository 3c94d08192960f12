import Driver
import Foundation
import JSON

/// `drive`'s options for one segment of a run split over machines (docs/scale-out.md): which
/// segment, when every segment starts, and the result file `pushproof merge` reads.
struct DriveSegmentOptions {
    static let specs: [OptionSpec] = [
        .value("segment", "I/N", "Run segment I of N (I from 0, as a Kubernetes Indexed Job's JOB_COMPLETION_INDEX): every segment "
               + "plays the whole schedule and fans each call or message out to its own share of the devices, so N "
               + "machines together send the run's pushes once. With --scenario and --sender-cmd (a sender that fans out "
               + "itself) each event is handed over by one segment, and every segment times its own devices' pushes.",
               default: "0/1"),
        .value("segment-weights", "W,...", "The segments' shares, N fractions summing to 1 (1/2,1/4,1/4).", default: "equal"),
        .value("start-at", "TIME", "Start at this time (RFC 3339 with a zone, or Unix ms) after setting up: give every segment the "
               + "same one. Latency counts from it, so a late start shows; at most 10 minutes in the past.", default: "at once"),
        .value("result", "FILE", "Write this segment's result (counts, fan-outs, HdrHistogram interval log) for 'pushproof merge'."),
    ]

    let segment: ExecutionSegment
    let plannedStart: PlannedStart?
    let resultPath: String?

    init(_ arguments: ParsedArguments) throws(UsageError) {
        do {
            segment = try arguments.value("segment").map { text throws(ExecutionSegmentError) in
                try ExecutionSegment(parsing: text, weights: arguments.value("segment-weights"))
            } ?? .whole
        } catch {
            throw UsageError(message: error.description)
        }
        if arguments.value("segment-weights") != nil, arguments.value("segment") == nil {
            throw UsageError(message: "--segment-weights goes with --segment")
        }
        do {
            plannedStart = try arguments.value("start-at").map { text throws(PlannedStartError) in
                try PlannedStart(parsing: text, now: Int64(Date().timeIntervalSince1970 * 1000))
            }
        } catch {
            throw UsageError(message: error.description)
        }
        resultPath = arguments.value("result")
    }

    /// "segment 1/3 (1/3:2/3): 300 of 900 devices"; nil unsegmented.
    func note(workspace: GroupWorkspace) -> String? {
        guard segment.segmentCount > 1 else { return nil }
        return "segment \(segment.index)/\(segment.segmentCount) (\(segment)): \(workspace.ownedDeviceCount) of "
            + "\(workspace.deviceCount) devices"
    }

    /// The identity every segment of the run computes alike: the load's options, N, the weights
    /// and the start; not the segment's index.
    func identity(workload: String, members: Int, plan: LoadPlan, transports: String, goneTokens: Int) -> RunIdentity {
        func milliseconds(_ duration: Duration?) -> String {
            duration.map { String($0.components.seconds * 1000 + $0.components.attoseconds / 1_000_000_000_000_000) } ?? "default"
        }
        return RunIdentity(fields: identityFields.merging([
            "workload": workload, "members": String(members), "model": plan.modelDescription,
            "warm_up_ms": milliseconds(plan.warmUp), "time_limit_ms": milliseconds(plan.timeLimit),
            "late_after_ms": milliseconds(plan.lateAfter), "drop_after_ms": milliseconds(plan.dropAfter),
            "max_in_flight": String(plan.maxInFlight), "transports": transports, "gone_tokens": String(goneTokens),
        ]) { $1 })
    }

    /// The split's part of every run's identity: N, the weights and the start.
    var identityFields: [String: String] {
        ["segments": String(segment.segmentCount), "segment_weights": segment.weights.map(\.description).joined(separator: ","),
         "start_at_unix_ms": plannedStart.map { String($0.unixMilliseconds) } ?? "none"]
    }
}
