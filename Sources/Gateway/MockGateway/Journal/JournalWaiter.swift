import HTTPCore
import Synchronization

/// One long poll (`wait_ms=`): answered once `query.minimum` requests match, or at the
/// deadline with what there is (`"timed_out": true`).
///
/// It keeps a count and the last sequence number it looked at, never lines: the answer reads
/// them from the journal when it is sent (`JournalAnswer`), so a poll that waits for more than
/// will ever come costs a few hundred bytes, not a copy of everything that matched. The
/// journal's evaluation pass counts for it (`RequestJournal.evaluateWaiters`), from the last
/// line it saw; the deadline's evaluation runs on the transport's loop.
final class JournalWaiter: Sendable {
    /// The answer, given how many matched, the sequence number counted through, and whether
    /// the time ran out first.
    typealias Render = @Sendable (_ count: Int, _ through: UInt64, _ timedOut: Bool) -> HTTPResponse

    private struct State {
        /// Lines up to this sequence number have been looked at.
        var evaluatedThrough: UInt64
        var count = 0
        var finished = false
    }

    let query: JournalQuery
    let responder: DeferredResponse
    private let journal: RequestJournal
    private let render: Render
    private let state: Mutex<State>

    init(query: JournalQuery, journal: RequestJournal, render: @escaping Render) {
        self.query = query
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

    /// Registers with the journal, which then looks at what it holds already (if that is
    /// enough, the responder is completed at once). False: too many polls wait already.
    func start() -> Bool {
        guard journal.addWaiter(self) else { return false }
        journal.scheduleEvaluation()
        return true
    }

    /// The last sequence number looked at; nil once answered or gone.
    var position: UInt64? {
        state.withLock { $0.finished ? nil : $0.evaluatedThrough }
    }

    /// The journal's evaluation pass found `count` more matches after `from` (the position it
    /// read) up to `through`: answered if that makes the minimum. Ignored if the poll moved on
    /// meanwhile (another pass, or its deadline), so no line is counted twice.
    func advance(by count: Int, from: UInt64, through: UInt64) {
        state.withLock { state in
            guard !state.finished, state.evaluatedThrough == from, through > from || count > 0 else { return }
            state.count += count
            state.evaluatedThrough = max(state.evaluatedThrough, through)
            guard state.count >= query.minimum else { return }
            finish(&state)
            responder.complete(render(state.count, state.evaluatedThrough, false))
        }
    }

    private func advance(_ state: inout State) {
        let found = journal.count(query, after: state.evaluatedThrough)
        state.count += found.count
        state.evaluatedThrough = found.through
    }

    private func finish(_ state: inout State) {
        state.finished = true
        journal.removeWaiter(self)
    }

    /// The deadline (the transport's timer, on the admin loop): answer with what there is.
    private func timedOut() -> HTTPResponse {
        state.withLock { state in
            if !state.finished { advance(&state) }
            finish(&state)
            return render(state.count, state.evaluatedThrough, state.count < query.minimum)
        }
    }

    /// The client went away.
    private func cancelled() {
        state.withLock { finish(&$0) }
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
