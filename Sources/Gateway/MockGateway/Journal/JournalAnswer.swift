import HTTPCore
import Synchronization

/// The body of a `GET /requests` answer, read from the journal's ring piece by piece as the
/// client takes it (`StreamedBody`): a client that reads slowly or not at all holds one
/// piece, not the up to 16 MiB of lines that match. Lines dropped from the ring before their
/// piece was read are left out; the waiting form counts them (`"dropped"`).
final class JournalAnswer: StreamedBody {
    enum Form: Sendable {
        /// `[line,line,…]`.
        case lines
        /// A long poll's `{"requests": […], "count": N, "dropped": D, "timed_out": bool}`:
        /// `count` the matches seen, `dropped` those of them (up to the limit) no longer held.
        case waited(count: Int, timedOut: Bool)
    }

    private struct Progress {
        var cursor: RequestJournal.Cursor
        var opened = false
    }

    private let journal: RequestJournal
    private let query: JournalQuery
    private let form: Form
    /// Only the transport's loop thread calls `next`; the lock is what makes that Sendable.
    private let progress: Mutex<Progress>

    /// The matches of `query` up to `through` (nil: the newest line when the first piece is read).
    init(journal: RequestJournal, query: JournalQuery, through: UInt64? = nil, form: Form) {
        self.journal = journal
        self.query = query
        self.form = form
        progress = Mutex(Progress(cursor: RequestJournal.Cursor(query, through: through)))
    }

    func next(into out: inout [UInt8], preferredBytes: Int) -> Bool {
        progress.withLock { progress in
            let start = out.count
            if !progress.opened {
                progress.opened = true
                switch form {
                case .lines: out.append(UInt8(ascii: "["))
                case .waited: out.append(contentsOf: #"{"requests":["#.utf8)
                }
            }
            while !progress.cursor.finished && out.count - start < max(1, preferredBytes) {
                journal.step(query, &progress.cursor, writing: true, into: &out, preferredBytes: start + max(1, preferredBytes))
            }
            guard progress.cursor.finished else { return false }
            switch form {
            case .lines:
                out.append(UInt8(ascii: "]"))
            case let .waited(count, timedOut):
                let dropped = max(0, min(count, query.limit ?? .max) - progress.cursor.found)
                out.append(contentsOf: #"],"count":\#(count),"dropped":\#(dropped),"timed_out":\#(timedOut)}"#.utf8)
            }
            out.append(0x0A)
            return true
        }
    }
}
