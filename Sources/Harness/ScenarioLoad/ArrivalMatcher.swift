// The measuring half of a scenario-driven load run, as a state machine without sockets:
// events say which pushes they must cause (the oracle's `ExpectedPush`es) and when they were
// due; the gateway's arrivals come in, each matched by device token and spec id to the
// earliest event still waiting for that push. Latency runs from the event's intended time
// (so a sender that falls behind its schedule shows in the percentiles: coordinated omission,
// load-testing.md "Latency"); token cleanup is judged from outside, as `run` judges it.
import Driver
import Metrics
import PushModel
import RecordLine
import Reports
import Scenario
import ScenarioRunner

/// How one event is doing. Times are nanoseconds from the run's start.
struct EventProgress {
    var intended: UInt64
    var started: UInt64
    /// Pushes the event must cause.
    var expected: Int
    /// Pushes answered for good (accepted, token dead, refused for the request).
    var matched = 0
    var accepted = 0
    var lastAccepted: UInt64 = 0
    /// When the sender finished the event (its pushes answered, as far as it says: an adapter's
    /// event is finished once accepted); nil while it is in flight.
    var finished: UInt64?
}

/// A token-cleanup rule of `run` and what broke it during a load run.
public struct CleanupFinding: Sendable {
    /// The rule's name (`CleanupRule.name`).
    public var rule: String
    public var problems: [String]
    public var passed: Bool { problems.isEmpty }
}

public struct ArrivalMatcher: Sendable {
    struct Key: Hashable {
        var token: DeviceToken
        var spec: String
    }

    /// A sender is given this long after the gateway answered a token dead before a push to it
    /// counts as "a push to a dead token": the answer has to reach it and its store.
    let graceNanoseconds: UInt64
    private var waiting: [Key: [Int]] = [:]
    /// The specs `waiting` holds for each token, to find them when the token dies.
    private var waitingSpecs: [DeviceToken: Set<String>] = [:]
    /// Pushes to a token answered dead before their event was handed over: a sender may still
    /// have decided them before the answer reached it (events overlap, the answer was on its
    /// way), so one that comes is matched, and one that does not is not waited for.
    private var optional: [Key: [Int]] = [:]
    private(set) var events: [EventProgress] = []
    /// Pushes expected and not yet matched.
    public private(set) var outstanding = 0

    var latency = HDRHistogram()
    var serviceTime = HDRHistogram()
    var sendLag = HDRHistogram()
    var ringAll = HDRHistogram()
    var outcomes: [OutcomeTally: Int] = [:]
    var completed = 0, delivered = 0, failed = 0, tokensRemoved = 0
    /// Pushes no event was waiting for, and transient answers (429, 5xx, resets) the sender should retry.
    public private(set) var unexpected = 0
    public private(set) var transientAnswers = 0
    var completedPerSecond: [Int] = []
    var deliveredPerSecond: [Int] = []
    /// Expected pushes by their event's intended second, and latency by the second they arrived.
    var perSecond = PerSecondSeries()
    var lastCompletion: UInt64 = 0
    /// When the last push arrived, matched or not: what the end of a run waits to go quiet.
    public private(set) var lastArrival: UInt64 = 0

    private var sequence = 0
    private var cleanup = CleanupState()
    /// Tokens answered dead, and when.
    private var deathTime: [DeviceToken: UInt64] = [:]
    /// Events before this one are finished (`decidingEvent` moves it on).
    private var firstUnfinished = 0
    /// The event whose push was answered dead, by token.
    private var deathEvent: [DeviceToken: Int] = [:]
    /// Dead tokens the oracle has not been told about yet.
    private var newlyDead: [DeviceToken] = []
    /// Tokens the gateway holds as bad: an FCM INVALID_ARGUMENT for one is about the token.
    public var badTokens: Set<DeviceToken> = []
    private var deadTokenPushes: [String] = []
    /// Pushes to a token already answered dead, so far.
    public var deadTokenPushCount: Int { deadTokenPushes.count }
    /// Pushes answered 429 or 503 with a Retry-After, waited out by their retries (the rule `run` judges too).
    private var retryAfter = RetryAfterRule()
    /// Retries that came too soon: how many, and the first few in words.
    public private(set) var retriesTooSoon = 0
    private var retriesTooSoonListed: [String] = []
    private let deviceName: @Sendable (String) -> String
    /// In a run split over segments whose sender fans out itself, another segment hands an
    /// event over at its intended time, maybe before this one has expected it: the intended
    /// time of the next event not yet expected here. An arrival from then on may be that
    /// event's, so it waits in `held` until the event is expected. `.max`: nothing waits.
    public private(set) var horizon: UInt64 = .max
    private var held: [(exchange: RecordedExchange, at: UInt64)] = []

    /// `deviceName` turns a token (any form) into `<person>/<device>` for findings.
    public init(graceNanoseconds: UInt64, deviceName: @escaping @Sendable (String) -> String) {
        self.graceNanoseconds = graceNanoseconds
        self.deviceName = deviceName
    }

    /// Event `index` (the next one: events are played in order) was due at `intended` and
    /// handed to the sender at `started`; it must cause `pushes`.
    public mutating func expect(event index: Int, intended: UInt64, started: UInt64, pushes: [ExpectedPush]) {
        precondition(index == events.count, "events are expected in order")
        events.append(EventProgress(intended: intended, started: started, expected: pushes.count))
        sendLag.record(started &- min(intended, started))
        var counted = 0
        for push in pushes {
            let key = Key(token: DeviceToken(push.token), spec: push.spec ?? "")
            if deathTime[key.token] != nil {
                optional[key, default: []].append(index)
                continue
            }
            waiting[key, default: []].append(index)
            waitingSpecs[key.token, default: []].insert(key.spec)
            counted += 1
        }
        events[index].expected = counted
        perSecond.offer(counted, atSecond: Int(intended / 1_000_000_000))
        outstanding += counted
    }

    /// Arrivals at or after `horizon` wait until it moves past them; those before it that
    /// waited are matched now, in the order they came. Returns their latencies.
    @discardableResult
    public mutating func hold(from horizon: UInt64) -> [UInt64?] {
        self.horizon = horizon
        guard !held.isEmpty else { return [] }
        let due = held.filter { $0.at < horizon }
        held.removeAll { $0.at < horizon }
        return due.map { arrive($0.exchange, at: $0.at) }
    }

    /// `arrive`, unless `at` is at or past the horizon: then the arrival waits (nil).
    public mutating func receive(_ exchange: RecordedExchange, at: UInt64) -> UInt64? {
        guard at < horizon else {
            held.append((exchange, at))
            lastArrival = max(lastArrival, at)
            return nil
        }
        return arrive(exchange, at: at)
    }

    /// `token` was answered dead at `at`: what events handed over since still wait for becomes optional.
    private mutating func died(_ token: DeviceToken, at: UInt64) {
        for spec in waitingSpecs.removeValue(forKey: token) ?? [] {
            let key = Key(token: token, spec: spec)
            guard let queue = waiting[key] else { continue }
            let (before, since) = (queue.filter { events[$0].started < at }, queue.filter { events[$0].started >= at })
            for index in since {
                events[index].expected -= 1
                outstanding -= 1
            }
            optional[key, default: []] += since
            waiting[key] = before.isEmpty ? nil : before
            if !before.isEmpty { waitingSpecs[token, default: []].insert(spec) }
        }
    }

    /// The gateway answered `exchange` at `at` (nanoseconds from the start). Returns the
    /// push's latency from its event's intended time when it matched one.
    @discardableResult
    public mutating func arrive(_ exchange: RecordedExchange, at: UInt64) -> UInt64? {
        guard exchange.isPush else { return nil }
        sequence += 1
        lastArrival = max(lastArrival, at)
        guard let token = exchange.deviceToken else {
            unexpected += 1
            return nil
        }
        let answer = AnswerClass.of(status: exchange.status ?? 0, reason: exchange.reason, tokenIsBad: badTokens.contains(token))
        let key = Key(token: token, spec: exchange.specID ?? "")
        if let finding = retryAfter.observe(exchange, token: token, label: "push #\(sequence)", at: at,
                                            deviceName: { deviceName(token.comparable) }) {
            retriesTooSoon += 1
            if retriesTooSoonListed.count < 5 { retriesTooSoonListed.append(finding) }
        }
        let eventIndex: Int?
        if answer == .transient {
            // Not an answer for good: the sender retries, and the retry is the push's arrival.
            transientAnswers += 1
            eventIndex = nil
        } else if var queue = waiting[key], !queue.isEmpty {
            eventIndex = queue.removeFirst()
            waiting[key] = queue.isEmpty ? nil : queue
        } else if var queue = optional[key], !queue.isEmpty {
            let index = queue.removeFirst()
            optional[key] = queue.isEmpty ? nil : queue
            events[index].expected += 1
            outstanding += 1
            eventIndex = index
        } else if answer.killsToken, let decider = decidingEvent(at: at),
                  heardBy(token).map({ events[decider].started <= $0 }) ?? true {
            // A file's `expect` lists what must be delivered; the first push to a token the
            // gateway holds as dead is not in it, yet a sender cannot know before trying. It is
            // the latest event's push, and token cleanup. So is one the sender decided before
            // it can have heard of the answer (the rules forgot the token already).
            events[decider].expected += 1
            outstanding += 1
            eventIndex = decider
        } else {
            unexpected += 1
            eventIndex = nil
        }
        if let died = deathTime[token], let heard = heardBy(token) {
            let decidedAt = (eventIndex ?? decidingEvent(at: at)).map { events[$0].started } ?? 0
            if decidedAt > heard {
                deadTokenPushes.append(Problem.deadTokenPush(
                    device: deviceName(token.comparable), push: "push #\(sequence)",
                    answered: "dead \(Format.milliseconds(decidedAt - died)) ms before its event was handed to the sender").message)
            }
        }
        cleanup.absorb([exchange], event: eventIndex ?? events.count - 1, badTokens: badTokens)
        if answer.killsToken, deathTime[token] == nil {
            deathTime[token] = at
            deathEvent[token] = eventIndex ?? decidingEvent(at: at)
            newlyDead.append(token)
            died(token, at: at)
        }
        guard let eventIndex else { return nil }
        return record(answer: answer, status: exchange.status ?? 0, reason: exchange.reason, event: eventIndex, at: at)
    }

    private mutating func record(answer: AnswerClass, status: Int, reason: String?, event index: Int, at: UInt64) -> UInt64 {
        outstanding -= 1
        let event = events[index]
        let fromIntended = at &- min(event.intended, at)
        latency.record(fromIntended)
        serviceTime.record(at &- min(event.started, at))
        let outcome: PushOutcome
        switch answer {
        case .accepted: outcome = .delivered(id: nil)
        case .gone, .bad: outcome = .tokenRemoved(reason: reason ?? answer.rawValue)
        default: outcome = .failed(reason: reason ?? answer.rawValue, status: status)
        }
        outcomes[OutcomeTally(outcome), default: 0] += 1
        completed += 1
        let second = Int(at / 1_000_000_000)
        if completedPerSecond.count <= second {
            completedPerSecond += repeatElement(0, count: second + 1 - completedPerSecond.count)
            deliveredPerSecond += repeatElement(0, count: second + 1 - deliveredPerSecond.count)
        }
        completedPerSecond[second] += 1
        perSecond.complete(latency: fromIntended, atSecond: second)
        switch outcome {
        case .delivered:
            delivered += 1
            deliveredPerSecond[second] += 1
            events[index].accepted += 1
            events[index].lastAccepted = max(events[index].lastAccepted, at)
        case .tokenRemoved: tokensRemoved += 1
        case .failed, .dryRun: failed += 1
        }
        lastCompletion = max(lastCompletion, at)
        events[index].matched += 1
        let progress = events[index]
        if progress.matched == progress.expected, progress.accepted > 0 {
            ringAll.record(progress.lastAccepted &- min(progress.intended, progress.lastAccepted))
        }
        return fromIntended
    }

    /// The sender finished event `index` at `at`: it has heard every answer to the event's pushes.
    public mutating func finished(event index: Int, at: UInt64) {
        events[index].finished = at
    }

    /// From when a sender must know that `token` (comparable) is dead: the grace after the
    /// gateway's answer, or after the sender finished the event that pushed to it, whichever is
    /// later (with events in flight a loaded sender reads an answer well after the gateway sent
    /// it; it has read it once that event is finished). `UInt64.max` while that event is in
    /// flight; nil while the token is not dead.
    private func heardBy(_ token: DeviceToken) -> UInt64? {
        guard let died = deathTime[token] else { return nil }
        var heard = died
        if let index = deathEvent[token] {
            guard let finished = events[index].finished else { return .max }
            heard = max(heard, finished)
        }
        return heard &+ min(graceNanoseconds, .max &- heard)
    }

    /// The event most recently handed to the sender before `at`: the one whose deciding an
    /// unexpected push came from.
    private func latestEvent(startedBy at: UInt64) -> Int? {
        events.lastIndex { $0.started <= at }
    }

    /// The event a push no event waited for is taken to come from: the earliest one still in
    /// flight at `at` (with several in flight it may be any of them; the earliest is the one
    /// decided soonest, so the sender is given the benefit of the doubt), else the latest started.
    private mutating func decidingEvent(at: UInt64) -> Int? {
        while firstUnfinished < events.count, events[firstUnfinished].finished != nil { firstUnfinished += 1 }
        if firstUnfinished < events.count, events[firstUnfinished].started <= at { return firstUnfinished }
        return latestEvent(startedBy: at)
    }

    /// Tokens answered dead since the last call, for the oracle to forget.
    public mutating func takeNewlyDead() -> [DeviceToken] {
        defer { newlyDead.removeAll() }
        return newlyDead
    }

    public func isDead(_ token: DeviceToken) -> Bool { deathTime[token] != nil }

    /// The run is over: expected pushes that never came are missing, unless their token was
    /// answered dead meanwhile (a sender is right to skip it). `plan` describes the run;
    /// `elapsed` is its length in nanoseconds; `played` events of `planned` were handed to the sender.
    public func finish(plan: LoadPlan, played: Int, planned: Int, elapsed: UInt64, lateAfter: UInt64,
                       store: (listed: [ListedDevice], live: Set<DeviceToken>)?) -> (summary: RunSummary, cleanup: [CleanupFinding]) {
        var events = self.events
        var missing = 0
        var missedPushProblems: [Problem] = []
        for (key, indices) in waiting {
            for index in indices {
                if deathTime[key.token] != nil {
                    events[index].expected -= 1
                    continue
                }
                missing += 1
                if let problem = cleanup.missedPushProblem(token: key.token, spec: key.spec, deviceName: deviceName(key.token.comparable)) {
                    missedPushProblems.append(problem)
                }
            }
        }
        var counts = RunCounts()
        counts.iterations = played
        counts.droppedIterations = planned - played
        counts.lateIterations = events.filter { $0.started > $0.intended &+ lateAfter }.count
        counts.sent = events.reduce(0) { $0 + $1.expected }
        counts.completed = completed
        counts.delivered = delivered
        counts.failed = failed
        counts.tokensRemoved = tokensRemoved
        counts.abandoned = missing
        counts.unexpected = unexpected
        counts.retriesTooSoon = retriesTooSoon
        counts.deadTokenPushes = deadTokenPushes.count
        let withPushes = events.filter { $0.expected > 0 }
        counts.fanOuts = withPushes.filter { $0.matched >= $0.expected }.count
        counts.fanOutsFullyDelivered = withPushes.filter { $0.accepted == $0.expected }.count
        counts.fanOutsIncomplete = withPushes.count - counts.fanOuts
        let outcomeList = outcomes.map { OutcomeCount(kind: $0.key.name, reason: $0.key.reason, count: $0.value) }
            .sorted { ($0.kind, $0.reason) < ($1.kind, $1.reason) }
        var summary = RunSummary(plan: plan, environment: .current(), counts: counts, outcomes: outcomeList,
                                 elapsedSeconds: Double(elapsed) / 1e9, measuredSeconds: Double(lastCompletion) / 1e9,
                                 latency: latency, serviceTime: serviceTime, sendLag: sendLag, timeToRingAll: ringAll,
                                 completedPerSecond: completedPerSecond, deliveredPerSecond: deliveredPerSecond, timedOut: false)
        summary.perSecond = perSecond
        if missing > 0 { summary.notes.append("\(missing) expected pushes never reached the gateway") }
        if unexpected > 0 { summary.notes.append("\(unexpected) pushes reached the gateway that no event called for") }
        if transientAnswers > 0 { summary.notes.append("\(transientAnswers) transient answers (429, 5xx, resets), retried or not") }
        if retriesTooSoon > 0 {
            summary.notes.append("\(retriesTooSoon) retries came before their answer's Retry-After: " + retriesTooSoonListed.joined(separator: "; "))
        }

        var storeProblems: [String] = []
        if let store {
            storeProblems = EventJudge.compareStore(listed: store.listed, live: store.live.subtracting(deathTime.keys),
                                                    dead: Set(deathTime.keys), deviceName: deviceName).map(\.message)
        }
        var byRule: [CleanupRule: [String]] = [:]
        for problem in missedPushProblems { if let rule = problem.cleanupRule { byRule[rule, default: []].append(problem.message) } }
        byRule = byRule.mapValues { $0.sorted() }
        byRule[.noPushToDeadToken] = deadTokenPushes
        byRule[.storeMatchesAnswers] = storeProblems
        let findings = CleanupRule.allCases.map { CleanupFinding(rule: $0.name, problems: byRule[$0] ?? []) }
        return (summary, findings)
    }

    /// What a segment's result carries besides `summary` (`finish`'s): the histograms, and each
    /// event with pushes as a fan-out a merge of segments adds up (an event's pushes may be
    /// spread over segments, and its time to ring all is the latest of theirs).
    public func measured(summary: RunSummary, lateAfter: UInt64) -> RunResult {
        let fanOuts = events.enumerated().filter { $0.element.expected > 0 }.map { index, event in
            FanOutCompletion(iteration: index, pushes: event.expected, delivered: event.accepted,
                             ringAll: event.accepted > 0 ? event.lastAccepted &- min(event.intended, event.lastAccepted) : nil,
                             late: event.started > event.intended &+ lateAfter, complete: event.matched >= event.expected)
        }
        return RunResult(summary: summary, latency: latency, serviceTime: serviceTime, sendLag: sendLag,
                         timeToRingAll: ringAll, fanOuts: fanOuts)
    }
}
