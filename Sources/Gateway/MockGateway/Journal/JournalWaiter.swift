import HTTPCore
import Synchronization

/// One long poll (`wait_ms=`): answered once `query.minimum` requests match, or at the
/// deadline with what there is (`"timed_out": true`).
///
/// Every request the journal takes while this waits pokes it. A poke looks only at the lines
/// newer than the last it saw, so a wait costs each new request one filter check. It runs on
/// whichever thread recorded the request, and never blocks it: if another thread is already
/// evaluating, the poke leaves a flag that thread picks up before it lets go (so no line is
/// missed), and returns.
final class JournalWaiter: Sendable {
    /// What the answer carries: the matches kept (up to the query's limit), how many matched,
    /// and whether the time ran out first.
    typealias Render = @Sendable (_ kept: [RequestJournal.Line], _ count: Int, _ timedOut: Bool) -> HTTPResponse

    private struct State {
        /// Lines up to this sequence number have been looked at.
        var evaluatedThrough: UInt64
        var kept: [RequestJournal.Line] = []
        var count = 0
        var finished = false
    }

    let query: JournalQuery
    /// `/requests` keeps the matching lines for its answer; `/requests/count` only counts.
    let keepsLines: Bool
    let responder: DeferredResponse
    private let journal: RequestJournal
    private let render: Render
    private let state: Mutex<State>
    private let needsEvaluation = Atomic<Bool>(false)

    init(query: JournalQuery, keepsLines: Bool, journal: RequestJournal, render: @escaping Render) {
        self.query = query
        self.keepsLines = keepsLines
        self.journal = journal
        self.render = render
        state = Mutex(State(evaluatedThrough: query.since))
        let timeout = UInt64(query.waitMillis ?? 0) * 1_000_000
        // The responder and the waiter refer to each other until the wait ends one way or another.
        let box = WaiterBox()
        responder = DeferredResponse(timeoutNanos: timeout) { box.waiter?.timedOut() ?? HTTPResponse(status: 500) }
        box.waiter = self
        responder.onCancel { [weak self] in self?.cancelled() }
    }

    /// Registers with the journal and looks at what it holds already; if that is enough, the
    /// responder is completed at once (the transport then answers without waiting).
    func start() {
        journal.addWaiter(self)
        needsEvaluation.store(true, ordering: .releasing)
        poke()
    }

    /// New lines may match. Never blocks (see the type's comment).
    func poke() {
        needsEvaluation.store(true, ordering: .releasing)
        while needsEvaluation.load(ordering: .acquiring) {
            let ran: Void? = state.withLockIfAvailable { state in
                while needsEvaluation.exchange(false, ordering: .acquiringAndReleasing) {
                    evaluate(&state)
                }
            }
            // Another thread holds the lock: it sees the flag before letting go, or this loop
            // (re-checking after that thread's release) does.
            if ran == nil { return }
        }
    }

    private func evaluate(_ state: inout State) {
        guard !state.finished else { return }
        let keep = keepsLines ? query.limit.map { max(0, $0 - state.kept.count) } : 0
        let found = journal.matches(query, after: state.evaluatedThrough, keep: keep)
        state.evaluatedThrough = found.through
        state.count += found.count
        state.kept.append(contentsOf: found.kept)
        if state.count >= query.minimum { finish(&state, timedOut: false) }
    }

    private func finish(_ state: inout State, timedOut: Bool) {
        state.finished = true
        journal.removeWaiter(self)
        responder.complete(render(state.kept, state.count, timedOut))
    }

    /// The deadline (the transport's timer, on the admin loop): answer with what there is.
    private func timedOut() -> HTTPResponse {
        state.withLock { state in
            evaluate(&state)
            let response = render(state.kept, state.count, state.count < query.minimum)
            state.finished = true
            journal.removeWaiter(self)
            return response
        }
    }

    /// The client went away.
    private func cancelled() {
        state.withLock { state in
            state.finished = true
            journal.removeWaiter(self)
        }
    }
}

/// Lets the responder's timeout closure reach the waiter built after it. Weak: the journal
/// holds the waiter while it waits, and nothing is left to time out once it has let go.
private final class WaiterBox: Sendable {
    private struct Reference {
        weak var waiter: JournalWaiter?
    }

    private let stored = Mutex(Reference())

    var waiter: JournalWaiter? {
        get { stored.withLock { $0.waiter } }
        set { stored.withLock { $0.waiter = newValue } }
    }
}
