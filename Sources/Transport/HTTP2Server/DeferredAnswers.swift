// Deferred answers (`HTTPResponse.deferred`, long polls): the loop's table of requests
// waiting for one, the mailbox through which other threads hand answers back (and wake the
// loop through its eventfd), and the deadline timer after which `onTimeout` answers.
import Descriptors
import Glibc
import HTTPCore
import Synchronization

/// Where a deferred answer goes: the request's HTTP/2 stream, or its place in an HTTP/1.1
/// connection's response order.
enum DeferredTarget {
    case http2(Connection, streamID: Int32)
    case http1(Connection, sequence: Int)

    var connection: Connection {
        switch self {
        case let .http2(connection, _), let .http1(connection, _): connection
        }
    }
}

/// Completed deferred answers on their way from any thread to the loop that owns them.
/// Posting writes the loop's eventfd; after `close()` (the loop has ended, its eventfd is
/// about to be closed) posts are dropped, under the same lock, so no late completion can
/// write into a descriptor number that has been reused.
final class DeferredMailbox: Sendable {
    private struct State {
        var ready: [DeferredResponse] = []
        var closed = false
    }

    private let state = Mutex(State())
    private let wakeFD: Int32

    init(wakeFD: Int32) { self.wakeFD = wakeFD }

    func post(_ responder: DeferredResponse) {
        state.withLock { state in
            guard !state.closed else { return }
            let wasEmpty = state.ready.isEmpty
            state.ready.append(responder)
            // One wake-up per batch: the loop takes everything posted when it wakes.
            if wasEmpty {
                postWakeEvent(wakeFD)
            }
        }
    }

    func takeAll() -> [DeferredResponse] {
        state.withLock { state in
            var taken: [DeferredResponse] = []
            swap(&taken, &state.ready)
            return taken
        }
    }

    func close() {
        state.withLock { state in
            state.closed = true
            state.ready = []
        }
    }
}

/// The requests of one loop waiting for a deferred answer. Loop thread only.
final class DeferredAnswers {
    /// One request's wait: the responder's identity and a number never reused, so a deadline
    /// timer can find its wait without holding the responder (an identity alone could name a
    /// later responder at the same address).
    struct Registration {
        var key: ObjectIdentifier
        var number: UInt64
    }

    let mailbox: DeferredMailbox
    private var waiting: [ObjectIdentifier: (responder: DeferredResponse, target: DeferredTarget, number: UInt64)] = [:]
    private var registrations: UInt64 = 0

    init(wakeFD: Int32) {
        mailbox = DeferredMailbox(wakeFD: wakeFD)
    }

    var isEmpty: Bool { waiting.isEmpty }

    /// A handler deferred its answer. Returns the answer if it has already come (the session
    /// sends it as if the handler had returned it); otherwise the responder will post its
    /// answer to this loop's mailbox, and the request's connection calls `wait` before the
    /// loop next looks at the mailbox.
    func claim(_ responder: DeferredResponse) -> HTTPResponse? {
        let mailbox = mailbox
        return responder.bind(waker: { mailbox.post($0) })
    }

    /// The request waits for the answer `claim` did not find, with a deadline timer on `loop`.
    func wait(for responder: DeferredResponse, target: DeferredTarget, loop: EventLoop) {
        registrations &+= 1
        let registration = Registration(key: ObjectIdentifier(responder), number: registrations)
        waiting[registration.key] = (responder, target, registration.number)
        target.connection.awaitedAnswers += 1
        loop.schedule(.deferredDeadline(registration), after: max(1, responder.timeoutNanos))
    }

    /// Sends the answers other threads have completed (after an eventfd wake-up).
    func deliverPosted() {
        for responder in mailbox.takeAll() {
            guard let target = remove(responder), let response = responder.take() else { continue }
            target.connection.answerDeferred(target, with: response)
        }
    }

    /// The deadline timer fired: the answer if one came meanwhile, else the timeout answer.
    /// Nothing if that wait has ended already.
    func expire(_ registration: Registration) {
        guard let entry = waiting[registration.key], entry.number == registration.number else { return }
        expire(entry.responder)
    }

    private func expire(_ responder: DeferredResponse) {
        guard let target = remove(responder), let response = responder.expire() else { return }
        target.connection.answerDeferred(target, with: response)
    }

    /// The request's stream or connection is gone: nobody to answer.
    func cancel(_ responder: DeferredResponse) {
        _ = remove(responder)
        responder.cancel()
    }

    /// Server shutdown: answer every waiting request now, with what it has.
    func expireAll() {
        for (responder, _, _) in Array(waiting.values) { expire(responder) }
    }

    /// The loop ends: nothing can be answered any more.
    func close() {
        for (responder, _, _) in Array(waiting.values) { cancel(responder) }
        mailbox.close()
    }

    private func remove(_ responder: DeferredResponse) -> DeferredTarget? {
        guard let entry = waiting.removeValue(forKey: ObjectIdentifier(responder)) else { return nil }
        entry.target.connection.awaitedAnswers -= 1
        return entry.target
    }
}
