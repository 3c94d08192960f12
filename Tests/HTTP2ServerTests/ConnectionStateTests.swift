// The connection's phase and flags (`ConnectionState`) without a socket: every event in every
// phase, the ones that do not apply included (they change nothing and ask for nothing), and
// the flags behind epoll's interest.
import Testing
@testable import HTTP2Server

/// Every event the state takes, by name, so a table can say what each does in each phase.
private enum Event: CaseIterable, CustomStringConvertible {
    case hungUp, readable, writable
    case handshakeDoneHTTP2, handshakeDoneHTTP1, handshakeDoneNoALPN, handshakeWantRead, handshakeWantWrite, handshakeFailed
    case sniffedHTTP2, sniffedHTTP1
    case peerClosed, writeBlocked, outputBackedUp, outputDrained
    case sessionWrite, sessionSchedule, sessionHoldInput, sessionLinger, sessionCloseAfterWrite, sessionClose
    case sessionReleasedInput, sessionFinished
    case headDeadlinePassed, idleTimedOut, beginShutdown, close

    func apply(to state: inout ConnectionState) -> ConnectionEffects {
        switch self {
        case .hungUp: state.hungUp()
        case .readable: state.readable()
        case .writable: state.writable()
        case .handshakeDoneHTTP2: state.handshook(.done(.http2))
        case .handshakeDoneHTTP1: state.handshook(.done(.http1))
        case .handshakeDoneNoALPN: state.handshook(.done(.none))
        case .handshakeWantRead: state.handshook(.wantRead)
        case .handshakeWantWrite: state.handshook(.wantWrite)
        case .handshakeFailed: state.handshook(.failed)
        case .sniffedHTTP2: state.sniffed(http2: true)
        case .sniffedHTTP1: state.sniffed(http2: false)
        case .peerClosed: state.peerClosed()
        case .writeBlocked: state.writeBlocked()
        case .outputBackedUp: state.outputBackedUp()
        case .outputDrained: state.outputDrained()
        case .sessionWrite: state.sessionReturned(.write)
        case .sessionSchedule: state.sessionReturned(.schedule)
        case .sessionHoldInput: state.sessionReturned(.holdInput)
        case .sessionLinger: state.sessionReturned(.linger)
        case .sessionCloseAfterWrite: state.sessionReturned(.closeAfterWrite)
        case .sessionClose: state.sessionReturned(.close)
        case .sessionReleasedInput: state.sessionReleasedInput()
        case .sessionFinished: state.sessionFinished()
        case .headDeadlinePassed: state.headDeadlinePassed()
        case .idleTimedOut: state.idleTimedOut()
        case .beginShutdown: state.beginShutdown()
        case .close: state.close()
        }
    }

    var description: String { "\(self)" }
}

/// A state in `phase`, reached by events (cleartext unless it is the handshake).
private func state(in phase: ConnectionState.Phase, tls: Bool = false) -> ConnectionState {
    var state = ConnectionState(isTLS: tls || phase == .handshaking)
    switch phase {
    case .handshaking, .sniffing: break
    case .http2: _ = state.isTLS ? state.handshook(.done(.http2)) : state.sniffed(http2: true)
    case .http1: _ = state.isTLS ? state.handshook(.done(.http1)) : state.sniffed(http2: false)
    case .lingering:
        _ = state.sniffed(http2: true)
        _ = state.sessionFinished()
    case .closed: _ = state.close()
    }
    #expect(state.phase == phase)
    return state
}

/// What an event does: its effects and the phase after it. Events a phase's table leaves out
/// must change nothing there and ask for nothing.
private typealias Outcome = (effects: ConnectionEffects, phase: ConnectionState.Phase)

private func expectTable(_ phase: ConnectionState.Phase, _ table: [Event: Outcome]) {
    for event in Event.allCases {
        var subject = state(in: phase)
        let before = subject
        let effects = event.apply(to: &subject)
        if let expected = table[event] {
            #expect(effects == expected.effects, "\(phase) + \(event)")
            #expect(subject.phase == expected.phase, "\(phase) + \(event)")
        } else {
            #expect(effects == [], "\(phase) + \(event) does not apply")
            #expect(subject == before, "\(phase) + \(event) changes nothing")
        }
    }
}

@Suite struct ConnectionStateTests {
    @Test func aConnectionStartsWithTheHandshakeOrBySniffing() {
        #expect(ConnectionState(isTLS: true).phase == .handshaking)
        #expect(ConnectionState(isTLS: false).phase == .sniffing)
        let fresh = ConnectionState(isTLS: false)
        #expect(!fresh.wantsWritable && !fresh.pausedForOutput && !fresh.pausedForSession && !fresh.shuttingDown)
        #expect(fresh.readsInput && !fresh.readsPaused && !fresh.isClosed)
    }

    @Test func handshaking() {
        expectTable(.handshaking, [
            .readable: (.advanceHandshake, .handshaking),
            .writable: (.advanceHandshake, .handshaking),
            .handshakeDoneHTTP2: ([.startHTTP2, .read], .http2),
            .handshakeDoneHTTP1: ([.startHTTP1, .read], .http1),
            .handshakeDoneNoALPN: (.read, .sniffing),
            .handshakeWantWrite: (.updateInterest, .handshaking),
            .handshakeFailed: (.close, .closed),
            .peerClosed: ([.write, .close], .closed),
            .writeBlocked: (.updateInterest, .handshaking),
            .outputBackedUp: (.updateInterest, .handshaking),
            .headDeadlinePassed: (.close, .closed),
            .idleTimedOut: (.close, .closed),
            .beginShutdown: (.close, .closed),
            .close: (.close, .closed),
        ])
    }

    @Test func sniffing() {
        expectTable(.sniffing, [
            .readable: (.read, .sniffing),
            .writable: ([.write, .resumeInput], .sniffing),
            .sniffedHTTP2: (.startHTTP2, .http2),
            .sniffedHTTP1: (.startHTTP1, .http1),
            .peerClosed: ([.write, .close], .closed),
            .writeBlocked: (.updateInterest, .sniffing),
            .outputBackedUp: (.updateInterest, .sniffing),
            .headDeadlinePassed: (.close, .closed),
            .idleTimedOut: (.close, .closed),
            .beginShutdown: (.close, .closed),
            .close: (.close, .closed),
        ])
    }

    @Test func speakingHTTP2() {
        expectTable(.http2, [
            .readable: (.read, .http2),
            .writable: ([.write, .resumeInput], .http2),
            .peerClosed: ([.write, .close], .closed),
            .writeBlocked: (.updateInterest, .http2),
            .outputBackedUp: (.updateInterest, .http2),
            .sessionWrite: (.write, .http2),
            .sessionSchedule: (.schedule, .http2),
            .sessionHoldInput: (.updateInterest, .http2),
            .sessionLinger: ([.write, .linger], .lingering),
            .sessionCloseAfterWrite: ([.write, .close], .closed),
            .sessionClose: (.close, .closed),
            .sessionFinished: (.linger, .lingering),
            // Told why (GOAWAY NO_ERROR) before the close.
            .idleTimedOut: ([.shutDownSession, .write, .close], .closed),
            .beginShutdown: ([.shutDownSession, .write], .http2),
            .close: (.close, .closed),
        ])
    }

    @Test func speakingHTTP1() {
        expectTable(.http1, [
            .readable: (.read, .http1),
            .writable: ([.write, .resumeInput], .http1),
            .peerClosed: ([.write, .close], .closed),
            .writeBlocked: (.updateInterest, .http1),
            .outputBackedUp: (.updateInterest, .http1),
            .sessionWrite: (.write, .http1),
            .sessionSchedule: (.schedule, .http1),
            .sessionHoldInput: (.updateInterest, .http1),
            .sessionLinger: ([.write, .linger], .lingering),
            .sessionCloseAfterWrite: ([.write, .close], .closed),
            .sessionClose: (.close, .closed),
            .sessionFinished: (.linger, .lingering),
            .idleTimedOut: (.close, .closed),
            .beginShutdown: ([.shutDownSession, .write], .http1),
            .close: (.close, .closed),
        ])
    }

    @Test func lingering() {
        expectTable(.lingering, [
            .readable: (.discardInput, .lingering),
            .peerClosed: (.close, .closed),
            // The write of a session's last call may still be running: a close still applies.
            .sessionCloseAfterWrite: (.close, .closed),
            .sessionClose: (.close, .closed),
            .close: (.close, .closed),
        ])
    }

    @Test func closedTakesNoMoreEvents() {
        expectTable(.closed, [:])
    }

    @Test func overTLSAWritableSocketIsReadToo() {
        // TLS may have been waiting to write before it could read further.
        for phase in [ConnectionState.Phase.http2, .http1] {
            var subject = state(in: phase, tls: true)
            #expect(subject.writable() == [.write, .resumeInput, .read])
        }
    }

    @Test func theHandshakeTurnsWritePollingOnAndOff() {
        var subject = ConnectionState(isTLS: true)
        #expect(subject.handshook(.wantWrite) == .updateInterest)
        #expect(subject.wantsWritable)
        #expect(subject.handshook(.wantWrite) == [], "no change, no epoll call")
        #expect(subject.handshook(.wantRead) == .updateInterest)
        #expect(!subject.wantsWritable)
        _ = subject.handshook(.wantWrite)
        #expect(subject.handshook(.done(.http2)) == [.updateInterest, .startHTTP2, .read])
        #expect(!subject.wantsWritable)
    }

    @Test func writePollingFollowsTheOutput() {
        var subject = state(in: .http2)
        #expect(subject.writeBlocked() == .updateInterest)
        #expect(subject.wantsWritable && !subject.readsPaused)
        #expect(subject.writeBlocked() == [])
        #expect(subject.outputDrained() == .updateInterest)
        #expect(!subject.wantsWritable)
        #expect(subject.outputDrained() == [], "already drained")
    }

    @Test func readingPausesWhileOutputIsBackedUpAndResumesOnceItDrains() {
        var subject = state(in: .http1)
        #expect(subject.outputBackedUp() == .updateInterest)
        #expect(subject.pausedForOutput && subject.readsPaused)
        #expect(subject.readsInput, "what is read still goes on; only epoll's interest changes")
        #expect(subject.outputBackedUp() == [])
        _ = subject.writeBlocked()
        #expect(subject.outputDrained() == .updateInterest, "one change of interest for both flags")
        #expect(!subject.pausedForOutput && !subject.wantsWritable)
    }

    @Test func aSessionThatHoldsInputStopsReadingUntilItLetsGo() {
        var subject = state(in: .http1)
        #expect(subject.sessionReturned([.holdInput, .schedule]) == [.schedule, .updateInterest])
        #expect(subject.pausedForSession && subject.readsPaused && !subject.readsInput)
        #expect(subject.readable() == [], "held input: nothing is read")
        #expect(subject.writable() == [.write, .resumeInput])
        #expect(subject.sessionReturned(.holdInput) == [])
        #expect(subject.sessionReleasedInput() == .updateInterest)
        #expect(!subject.pausedForSession && subject.readsInput)
        #expect(subject.sessionReleasedInput() == [])
        #expect(subject.readable() == .read)
    }

    @Test func aHangUpClosesOnlyWhileReadingIsPaused() {
        var reading = state(in: .http2)
        #expect(reading.hungUp() == [], "the read that follows finds out")
        var paused = state(in: .http2)
        _ = paused.outputBackedUp()
        #expect(paused.hungUp() == .close)
        #expect(paused.isClosed)
        #expect(paused.readable() == [] && paused.writable() == [])
    }

    @Test func lingeringClearsEveryFlagAndWritablePollingEndsThere() {
        var subject = state(in: .http1)
        _ = subject.writeBlocked()
        _ = subject.outputBackedUp()
        _ = subject.sessionReturned(.holdInput)
        #expect(subject.sessionFinished() == [.updateInterest, .linger])
        #expect(subject.phase == .lingering)
        #expect(!subject.wantsWritable && !subject.pausedForOutput && !subject.pausedForSession)
        #expect(subject.writeBlocked() == [], "what is unsent is given up with the write side")
        #expect(!subject.wantsWritable)
        #expect(subject.outputBackedUp() == [], "reading goes on, to discard")
        #expect(subject.readable() == .discardInput)
    }

    @Test func lingeringTurnsWritePollingOff() {
        // The session's last write blocked: what is left is given up with the write side.
        var subject = state(in: .http2)
        _ = subject.writeBlocked()
        #expect(subject.sessionReturned(.linger) == [.updateInterest, .write, .linger])
        #expect(subject.writable() == [])
        #expect(subject.phase == .lingering)
    }

    @Test func sessionActionsHaveAnOrderOfPrecedence() {
        var subject = state(in: .http2)
        #expect(subject.sessionReturned([.write, .schedule, .close, .linger, .closeAfterWrite]) == [.schedule, .close],
                ".close writes nothing more")
        subject = state(in: .http2)
        #expect(subject.sessionReturned([.write, .closeAfterWrite, .linger]) == [.write, .close])
        subject = state(in: .http1)
        #expect(subject.sessionReturned([.linger, .holdInput]) == [.write, .linger])
        #expect(subject.phase == .lingering && !subject.pausedForSession)
        subject = state(in: .http1)
        #expect(subject.sessionReturned([]) == [])
        #expect(subject.sessionReturned([.write, .holdInput, .schedule]) == [.schedule, .updateInterest, .write])
    }

    @Test func shutdownIsTakenOnceAndEndsConnectionsWithoutAProtocol() {
        var speaking = state(in: .http1)
        #expect(speaking.beginShutdown() == [.shutDownSession, .write])
        #expect(speaking.shuttingDown && speaking.phase == .http1, "the request in progress finishes")
        #expect(speaking.beginShutdown() == [], "once")
        var handshaking = ConnectionState(isTLS: true)
        _ = handshaking.handshook(.wantWrite)
        #expect(handshaking.beginShutdown() == .close, "a handshake in progress is not waited for")
        #expect(handshaking.isClosed && handshaking.shuttingDown)
    }

    @Test func effectsNameThemselves() {
        #expect(ConnectionEffects([.write, .close]).description == "[.write, .close]")
        #expect(ConnectionEffects().description == "[]")
    }
}
