// A DeviceStore on one SQLite file: the reference sender's durable token registry.
import CSQLite
import PushModel
import Synchronization

/// Why the SQLite store could not do what was asked. Every case names the file so a
/// misconfigured path is obvious from the message alone.
public enum DeviceStoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file could not be opened or created (missing directory, no permission).
    case cannotOpen(path: String, message: String)
    /// The file exists but is not an SQLite database, or is damaged.
    case corruptDatabase(path: String, message: String)
    /// A statement failed for another reason (disk full, locked for too long, ...).
    case statementFailed(path: String, code: Int32, message: String)
    /// A row holds a value this version cannot turn into a `Device`.
    case invalidRow(path: String, message: String)

    public var description: String {
        switch self {
        case .cannotOpen(let path, let message): "cannot open device database at \(path): \(message)"
        case .corruptDatabase(let path, let message): "device database at \(path) is not a valid SQLite database: \(message)"
        case .statementFailed(let path, let code, let message): "device database at \(path): SQLite error \(code): \(message)"
        case .invalidRow(let path, let message): "device database at \(path) holds an invalid row: \(message)"
        }
    }
}

/// Devices in an SQLite file, in WAL mode so readers do not block the writer.
///
/// Registering is idempotent: the token column is UNIQUE and `register` is an upsert, so
/// registering the same token again (even for another user, as happens when a phone changes
/// hands) leaves exactly one row whose fields are the latest registration's.
/// Thread-safe: one connection, guarded by a `Mutex`, with statements prepared once.
public final class SQLiteDeviceStore: DeviceStore {
    private let connection: Mutex<SQLiteConnection>
    public let path: String

    /// Opens (creating if needed) the database at `path` and creates the schema.
    /// Throws `DeviceStoreError.cannotOpen` on a bad path and `.corruptDatabase` when the
    /// file is not a database.
    public init(path: String) throws(DeviceStoreError) {
        self.path = path
        connection = Mutex(try SQLiteConnection(path: path))
    }

    public func register(_ device: Device) throws(DeviceStoreError) {
        try connection.withLock { connection throws(DeviceStoreError) in try connection.upsert(device) }
    }

    @discardableResult
    public func remove(token: String) throws(DeviceStoreError) -> Bool {
        try connection.withLock { connection throws(DeviceStoreError) in try connection.delete(token: token) }
    }

    public func devices(of userID: String) throws(DeviceStoreError) -> [Device] {
        try connection.withLock { connection throws(DeviceStoreError) in try connection.devices(userID: userID) }
    }

    public func allDevices() throws(DeviceStoreError) -> [Device] {
        try connection.withLock { connection throws(DeviceStoreError) in try connection.devices(userID: nil) }
    }

    /// The journal mode SQLite reports for the open connection ("wal" once opened).
    public func journalMode() throws(DeviceStoreError) -> String {
        try connection.withLock { connection throws(DeviceStoreError) in try connection.journalMode() }
    }
}

/// The one owner of the `sqlite3*` handle and its prepared statements. Only touched while
/// the store's mutex is held.
private final class SQLiteConnection {
    private let path: String
    private let db: OpaquePointer
    private var upsertStatement: OpaquePointer?
    private var deleteStatement: OpaquePointer?
    private var byUserStatement: OpaquePointer?
    private var allStatement: OpaquePointer?

    private static let schema = """
        CREATE TABLE IF NOT EXISTS devices (
            id INTEGER PRIMARY KEY,
            token TEXT NOT NULL UNIQUE,
            user_id TEXT NOT NULL,
            platform TEXT NOT NULL,
            kind TEXT
        );
        CREATE INDEX IF NOT EXISTS devices_by_user ON devices(user_id);
        """

    init(path: String) throws(DeviceStoreError) {
        self.path = path
        var handle: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let openCode = sqlite3_open_v2(path, &handle, flags, nil)
        guard openCode == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close(handle)
            throw .cannotOpen(path: path, message: message)
        }
        db = handle
        do throws(DeviceStoreError) {
            sqlite3_busy_timeout(db, 5000)
            // The first statement reads the header: a non-database file fails here, not at open.
            let mode = try journalModeSetting("PRAGMA journal_mode=WAL")
            if mode != "wal" {
                throw DeviceStoreError.cannotOpen(path: path, message: "journal mode is \(mode), WAL unavailable")
            }
            try execute(Self.schema)
            upsertStatement = try prepare("""
                INSERT INTO devices (token, user_id, platform, kind) VALUES (?1, ?2, ?3, ?4)
                ON CONFLICT(token) DO UPDATE SET
                    user_id = excluded.user_id, platform = excluded.platform, kind = excluded.kind
                """)
            deleteStatement = try prepare("DELETE FROM devices WHERE token = ?1")
            byUserStatement = try prepare("SELECT user_id, platform, kind, token FROM devices WHERE user_id = ?1 ORDER BY id")
            allStatement = try prepare("SELECT user_id, platform, kind, token FROM devices ORDER BY id")
        } catch {
            finalizeAll()
            sqlite3_close(db)
            throw error
        }
    }

    deinit {
        finalizeAll()
        sqlite3_close(db)
    }

    private func finalizeAll() {
        for statement in [upsertStatement, deleteStatement, byUserStatement, allStatement] {
            sqlite3_finalize(statement)
        }
        upsertStatement = nil
        deleteStatement = nil
        byUserStatement = nil
        allStatement = nil
    }

    func upsert(_ device: Device) throws(DeviceStoreError) {
        let statement = try require(upsertStatement)
        defer { sqlite3_reset(statement); sqlite3_clear_bindings(statement) }
        bind(device.token, at: 1, in: statement)
        bind(device.userID, at: 2, in: statement)
        bind(device.platform.rawValue, at: 3, in: statement)
        if let kind = device.kind { bind(kind.rawValue, at: 4, in: statement) } else { sqlite3_bind_null(statement, 4) }
        try stepToDone(statement)
    }

    func delete(token: String) throws(DeviceStoreError) -> Bool {
        let statement = try require(deleteStatement)
        defer { sqlite3_reset(statement); sqlite3_clear_bindings(statement) }
        bind(token, at: 1, in: statement)
        try stepToDone(statement)
        return sqlite3_changes(db) > 0
    }

    func devices(userID: String?) throws(DeviceStoreError) -> [Device] {
        let statement = try require(userID == nil ? allStatement : byUserStatement)
        defer { sqlite3_reset(statement); sqlite3_clear_bindings(statement) }
        if let userID { bind(userID, at: 1, in: statement) }
        var devices: [Device] = []
        while true {
            let code = sqlite3_step(statement)
            if code == SQLITE_DONE { return devices }
            guard code == SQLITE_ROW else { throw error(code) }
            let user = text(statement, 0) ?? ""
            guard let platform = text(statement, 1).flatMap(DevicePlatform.init(rawValue:)) else {
                throw .invalidRow(path: path, message: "unknown platform \(text(statement, 1) ?? "NULL")")
            }
            let kind = text(statement, 2).flatMap(IOSTokenKind.init(rawValue:))
            let token = text(statement, 3) ?? ""
            devices.append(Device(userID: user, platform: platform, kind: kind, token: token))
        }
    }

    func journalMode() throws(DeviceStoreError) -> String {
        try journalModeSetting("PRAGMA journal_mode")
    }

    // MARK: - SQLite plumbing

    private func journalModeSetting(_ sql: String) throws(DeviceStoreError) -> String {
        let statement = try prepare(sql)
        defer { sqlite3_finalize(statement) }
        let code = sqlite3_step(statement)
        guard code == SQLITE_ROW else { throw error(code) }
        return text(statement, 0) ?? ""
    }

    private func execute(_ sql: String) throws(DeviceStoreError) {
        let code = sqlite3_exec(db, sql, nil, nil, nil)
        guard code == SQLITE_OK else { throw error(code) }
    }

    private func prepare(_ sql: String) throws(DeviceStoreError) -> OpaquePointer {
        var statement: OpaquePointer?
        let code = sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard code == SQLITE_OK, let statement else { throw error(code) }
        return statement
    }

    private func require(_ statement: OpaquePointer?) throws(DeviceStoreError) -> OpaquePointer {
        guard let statement else { throw .statementFailed(path: path, code: SQLITE_MISUSE, message: "statement not prepared") }
        return statement
    }

    private func stepToDone(_ statement: OpaquePointer) throws(DeviceStoreError) {
        let code = sqlite3_step(statement)
        guard code == SQLITE_DONE else { throw error(code) }
    }

    private func bind(_ value: String, at index: Int32, in statement: OpaquePointer) {
        sqlite3_bind_text(statement, index, value, -1, cshim_sqlite_transient())
    }

    private func text(_ statement: OpaquePointer, _ column: Int32) -> String? {
        guard let pointer = sqlite3_column_text(statement, column) else { return nil }
        return String(cString: pointer)
    }

    private func error(_ code: Int32) -> DeviceStoreError {
        let message = String(cString: sqlite3_errmsg(db))
        switch code & 0xFF {
        case SQLITE_NOTADB, SQLITE_CORRUPT: return .corruptDatabase(path: path, message: message)
        case SQLITE_CANTOPEN: return .cannotOpen(path: path, message: message)
        default: return .statementFailed(path: path, code: code, message: message)
        }
    }
}
