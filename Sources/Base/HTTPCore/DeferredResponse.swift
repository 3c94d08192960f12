import Synchronization

/// An answer a handler gives later, from any thread, without holding up the event loop:
/// a long poll (`GET /requests?wait_ms=…` on the control API) answers once something has
/// happened elsewhere in the process, or when its time is up.
///
/// The handler returns `HTTPResponse.deferred(responder)`; the transport keeps the request's
/// stream (HTTP/2) or its place in the response order (HTTP/1.1) open and sends whatever is
/// passed to `complete(_:)` first. If nothing is by `timeoutNanos` after the request, the
/// transport calls `onTimeout` on its loop thread and sends that. If the client goes away
/// first (stream reset, connection closed, server stopped), the `onCancel` handlers run and
/// later completions are ignored.
///
/// One small state machine, the same whatever the thread: every transition happens under the
/// lock, handlers and the transport's wake-up run outside it, and exactly one response is ever
/// taken. The transport's half (`bind`, `take`, `expire`, `cancel`) is public only because
/// the transport lives in another module; applications call `complete` and `onCancel`.
public final class DeferredResponse: Sendable {
    private enum Phase {
        /// No answer yet; `waker` is set once the transport has taken the request in hand.
        case pending(waker: (@Sendable (DeferredResponse) -> Void)?)
        /// Answered, waiting for the transport to take the response.
        case completed(HTTPResponse)
        /// The transport has the response (or has claimed the timeout): nothing more happens.
        case delivered
        case cancelled
    }

    private struct State {
        var phase: Phase = .pending(waker: nil)
        var cancelHandlers: [@Sendable () -> Void] = []
    }

    /// How long the transport waits for `complete` before asking `onTimeout`.
    public let timeoutNanos: UInt64
    private let timeoutResponse: @Sendable () -> HTTPResponse
    private let state = Mutex(State())

    /// - Parameters:
    ///   - timeoutNanos: from the moment the handler returns.
    ///   - onTimeout: the answer when nothing came in time; runs once, on the loop thread.
    public init(timeoutNanos: UInt64, onTimeout: @escaping @Sendable () -> HTTPResponse) {
        self.timeoutNanos = timeoutNanos
        self.timeoutResponse = onTimeout
    }

    // MARK: Application side

    /// Answers the request. Any thread. Only the first answer counts: false when the request
    /// was already answered, timed out or cancelled.
    @discardableResult
    public func complete(_ response: HTTPResponse) -> Bool {
        let waker = state.withLock { state -> (@Sendable (DeferredResponse) -> Void)?? in
            guard case let .pending(waker) = state.phase else { return nil }
            state.phase = .completed(response)
            return .some(waker)
        }
        guard let waker else { return false }
        waker?(self)
        return true
    }

    /// Runs `handler` when the client goes away before an answer was sent; at once if it
    /// already has. Never runs after a completion was taken by the transport.
    public func onCancel(_ handler: @escaping @Sendable () -> Void) {
        let runNow = state.withLock { state -> Bool in
            if case .cancelled = state.phase { return true }
            state.cancelHandlers.append(handler)
            return false
        }
        if runNow { handler() }
    }

    /// Still waiting for an answer.
    public var isPending: Bool {
        state.withLock { state in
            if case .pending = state.phase { return true }
            return false
        }
    }

    // MARK: Transport side

    /// The transport has the request in hand: `waker` is called (from the completing thread)
    /// when an answer arrives. Returns the answer at once if it came before the binding (then
    /// `waker` is never called).
    public func bind(waker: @escaping @Sendable (DeferredResponse) -> Void) -> HTTPResponse? {
        state.withLock { state -> HTTPResponse? in
            switch state.phase {
            case .pending:
                state.phase = .pending(waker: waker)
                return nil
            case let .completed(response):
                state.phase = .delivered
                state.cancelHandlers = []
                return response
            case .delivered, .cancelled:
                return nil
            }
        }
    }

    /// The answer, once: nil before `complete`, and after the answer was taken or cancelled.
    public func take() -> HTTPResponse? {
        state.withLock { state -> HTTPResponse? in
            guard case let .completed(response) = state.phase else { return nil }
            state.phase = .delivered
            state.cancelHandlers = []
            return response
        }
    }

    /// The deadline passed: the answer if one came meanwhile, else `onTimeout`'s. Nil when the
    /// request was already answered or cancelled. A `complete` racing with this loses (false).
    public func expire() -> HTTPResponse? {
        let claimed = state.withLock { state -> HTTPResponse?? in
            switch state.phase {
            case .pending:
                state.phase = .delivered
                state.cancelHandlers = []
                return .some(nil)
            case let .completed(response):
                state.phase = .delivered
                state.cancelHandlers = []
                return .some(response)
            case .delivered, .cancelled:
                return nil
            }
        }
        guard let claimed else { return nil }
        return claimed ?? timeoutResponse()
    }

    /// The client went away (or the server stops) before the answer was sent. Runs the
    /// cancellation handlers unless the answer was already taken.
    public func cancel() {
        let handlers = state.withLock { state -> [@Sendable () -> Void] in
            switch state.phase {
            case .pending, .completed:
                state.phase = .cancelled
                let handlers = state.cancelHandlers
                state.cancelHandlers = []
                return handlers
            case .delivered, .cancelled:
                return []
            }
        }
        for handler in handlers { handler() }
    }
}
