import EdgeModel
import Foundation
import GRDB

/// The edge's durable store: versioned snapshots, host state and the origin fetch log, in SQLite
/// (WAL) through GRDB. The only code that touches SQLite. Every change is one transaction (a fetch's
/// record is a savepoint in a transaction it may share with other fetches': `GroupCommit`), so a
/// crash at any point leaves a consistent database, and a failed fetch never replaces or deletes a
/// good snapshot.
public final class SnapshotStore: Sendable {
    private let pool: DatabasePool
    /// The fetch records' writer (one commit per batch of fetches).
    let commits: GroupCommit
    public let path: String

    public init(path: String) throws {
        self.path = path
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent()
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        // The store holds client addresses: created readable by its owner only. SQLite gives the
        // -wal and -shm files the database file's mode.
        let created = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        if created >= 0 { close(created) }
        var configuration = Configuration()
        configuration.busyMode = .timeout(5)
        // WAL with synchronous=NORMAL: a commit is not fsynced on its own (checkpoints are), so a
        // killed process loses nothing committed and the database is never corrupted; a power
        // loss may lose the last commits. A release makes thousands of fetch records.
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = NORMAL") }
        // Several processes may open a new store at once (an edge and probes, two probes): the
        // switch to WAL does not wait for a lock, and each migrator may find a migration missing
        // that another applies meanwhile (its own attempt then fails and rolls back). Both settle
        // on a second look, so try again for a while; a migration that fails for good still
        // throws, after about 5 s.
        pool = try Self.retrying(when: { [.SQLITE_BUSY, .SQLITE_LOCKED].contains($0.resultCode) }) {
            try DatabasePool(path: path, configuration: configuration)
        }
        try Self.retrying(when: { _ in true }) { [pool] in try Self.migrator.migrate(pool) }
        commits = GroupCommit(pool: pool)
    }

    /// `body`, tried again every 0.1 s (50 times at most) while it fails with an error `retry` accepts.
    private static func retrying<T>(when retry: (DatabaseError) -> Bool, _ body: () throws -> T) throws -> T {
        var attempt = 0
        while true {
            do {
                return try body()
            } catch let error as DatabaseError where attempt < 50 && retry(error) {
                attempt += 1
                usleep(100_000)
            }
        }
    }

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(sql: """
                CREATE TABLE host (
                    name TEXT PRIMARY KEY NOT NULL,
                    currentVersion INTEGER,
                    confirmedAt REAL,
                    failureReason TEXT,
                    failureDetails TEXT,
                    failureAt REAL,
                    purge TEXT NOT NULL DEFAULT 'none' CHECK (purge IN ('none', 'soft', 'hard')),
                    createdAt REAL NOT NULL
                );
                CREATE TABLE snapshot (
                    host TEXT NOT NULL REFERENCES host(name),
                    version INTEGER NOT NULL,
                    sha256 TEXT NOT NULL,
                    size INTEGER NOT NULL,
                    body BLOB NOT NULL,
                    etag TEXT,
                    lastModified TEXT,
                    contentType TEXT,
                    cacheControl TEXT,
                    firstFetchedAt REAL NOT NULL,
                    lastConfirmedAt REAL NOT NULL,
                    valid INTEGER NOT NULL,
                    diagnostics TEXT NOT NULL,
                    appIDs TEXT NOT NULL,
                    PRIMARY KEY (host, version),
                    UNIQUE (host, sha256)
                );
                CREATE TABLE fetch (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    host TEXT NOT NULL,
                    at REAL NOT NULL,
                    outcome TEXT NOT NULL,
                    status INTEGER,
                    reason TEXT,
                    details TEXT,
                    durationMs REAL NOT NULL,
                    version INTEGER,
                    trigger TEXT NOT NULL
                );
                CREATE INDEX fetch_by_host ON fetch(host, id);
                CREATE TABLE served (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    host TEXT NOT NULL,
                    version INTEGER NOT NULL,
                    at REAL NOT NULL,
                    client TEXT NOT NULL
                );
                CREATE INDEX served_by_host ON served(host, version, at);
                """)
        }
        migrator.registerMigration("v2 ttl metadata") { db in
            try db.execute(sql: "ALTER TABLE host ADD COLUMN expiresAt REAL")
            try db.execute(sql: "ALTER TABLE host ADD COLUMN failureUntil REAL")
        }
        migrator.registerMigration("v3 probe and readiness") { db in
            try db.execute(sql: """
                CREATE TABLE probe_run (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    host TEXT NOT NULL,
                    cdnURL TEXT NOT NULL,
                    interval REAL NOT NULL,
                    startedAt REAL NOT NULL
                );
                CREATE TABLE probe_observation (
                    run INTEGER NOT NULL REFERENCES probe_run(id),
                    at REAL NOT NULL,
                    source TEXT NOT NULL CHECK (source IN ('origin', 'cdn')),
                    status INTEGER,
                    sha256 TEXT,
                    canonicalSha256 TEXT,
                    age INTEGER,
                    cacheControl TEXT,
                    xCache TEXT,
                    failureReason TEXT,
                    failureDetails TEXT,
                    error TEXT,
                    durationMs REAL NOT NULL
                );
                CREATE INDEX probe_observation_by_run ON probe_observation(run, at);
                CREATE TABLE readiness (id INTEGER PRIMARY KEY CHECK (id = 1), checkedAt REAL NOT NULL);
                """)
        }
        // The ledger keeps, per host, version and client, when the client was first and last
        // given the version (what the propagation views read), not every answer: its size is
        // bounded by clients, not by traffic. Clients past `--max-tracked-clients` per version
        // are folded into `served_others`.
        migrator.registerMigration("v4 served clients") { db in
            try db.execute(sql: """
                CREATE TABLE served_client (
                    host TEXT NOT NULL,
                    version INTEGER NOT NULL,
                    client TEXT NOT NULL,
                    firstAt REAL NOT NULL,
                    lastAt REAL NOT NULL,
                    PRIMARY KEY (host, version, client)
                ) WITHOUT ROWID;
                CREATE INDEX served_client_by_last ON served_client(host, version, lastAt);
                CREATE TABLE served_others (
                    host TEXT NOT NULL,
                    version INTEGER NOT NULL,
                    clients INTEGER NOT NULL,
                    lastAt REAL NOT NULL,
                    PRIMARY KEY (host, version)
                ) WITHOUT ROWID;
                INSERT INTO served_client (host, version, client, firstAt, lastAt)
                    SELECT host, version, substr(client, 1, 256), MIN(at), MAX(at) FROM served GROUP BY host, version, substr(client, 1, 256);
                DROP TABLE served;
                """)
        }
        // When the last purge was asked for: a revalidation that began before it does not undo it.
        migrator.registerMigration("v5 purge time") { db in
            try db.execute(sql: "ALTER TABLE host ADD COLUMN purgedAt REAL")
        }
        // Behind a parent edge (tiers): the parent's X-Cache and Via that came with the current
        // copy and with the last failure, one per line.
        migrator.registerMigration("v6 parent tier") { db in
            try db.execute(sql: "ALTER TABLE host ADD COLUMN upstream TEXT; ALTER TABLE host ADD COLUMN failureUpstream TEXT")
        }
        // How each probe run ended (runs recorded before this are taken as finished).
        migrator.registerMigration("v7 probe run end") { db in
            try db.execute(sql: """
                ALTER TABLE probe_run ADD COLUMN endedAt REAL;
                ALTER TABLE probe_run ADD COLUMN state TEXT NOT NULL DEFAULT 'finished';
                """)
        }
        return migrator
    }

    // MARK: reading

    /// The host's state and its current snapshot (with body), or nil when never seen.
    public func host(_ name: String) throws -> (StoredHost, StoredSnapshot?)? {
        try pool.read { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT * FROM host WHERE name = ?", arguments: [name]) else { return nil }
            let version: Int? = row["currentVersion"]
            let snapshot = try version.flatMap {
                try Row.fetchOne(db, sql: "SELECT * FROM snapshot WHERE host = ? AND version = ?", arguments: [name, $0]).map(Self.snapshot)
            }
            return (Self.host(row, appIDs: snapshot?.appIDs ?? []), snapshot)
        }
    }

    /// Every host, by name, with the app IDs of its current snapshot.
    public func hosts() throws -> [StoredHost] {
        try pool.read { db in
            try Row.fetchAll(db, sql: """
                SELECT host.*, snapshot.appIDs AS currentAppIDs FROM host
                LEFT JOIN snapshot ON snapshot.host = host.name AND snapshot.version = host.currentVersion
                ORDER BY host.name
                """).map { row in Self.host(row, appIDs: StoredList.decode(row["currentAppIDs"])) }
        }
    }

    /// Hosts by name after `after`, whose name contains `containing`, at most `limit`: one page of
    /// the admin list, read through the primary key's order (no full scan and sort per page).
    public func hosts(after: String?, containing: String?, limit: Int) throws -> [StoredHost] {
        try pool.read { db in
            var conditions: [String] = []
            var arguments: [any DatabaseValueConvertible] = []
            if let after {
                conditions.append("host.name > ?")
                arguments.append(after)
            }
            if let containing, !containing.isEmpty {
                conditions.append("instr(host.name, ?) > 0")
                arguments.append(containing)
            }
            arguments.append(limit)
            return try Row.fetchAll(db, sql: """
                SELECT host.*, snapshot.appIDs AS currentAppIDs FROM host
                LEFT JOIN snapshot ON snapshot.host = host.name AND snapshot.version = host.currentVersion
                \(conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND "))
                ORDER BY host.name LIMIT ?
                """, arguments: StatementArguments(arguments)).map { row in Self.host(row, appIDs: StoredList.decode(row["currentAppIDs"])) }
        }
    }

    private static func host(_ row: Row, appIDs: [String]) -> StoredHost {
        var failure: StoredFailure?
        if let reason: String = row["failureReason"], let at: Double = row["failureAt"] {
            failure = StoredFailure(reason: reason, details: row["failureDetails"] ?? "{}", at: at,
                                    upstream: UpstreamHeaders(stored: row["failureUpstream"]))
        }
        return StoredHost(name: row["name"], currentVersion: row["currentVersion"], confirmedAt: row["confirmedAt"],
                          failure: failure, purge: row["purge"], appIDs: appIDs, upstream: UpstreamHeaders(stored: row["upstream"]))
    }

    private static func snapshot(_ row: Row) -> StoredSnapshot {
        let body: Data = row["body"]
        return StoredSnapshot(host: row["host"], version: row["version"], sha256: row["sha256"], body: Array(body),
                              etag: row["etag"], lastModified: row["lastModified"], contentType: row["contentType"],
                              cacheControl: row["cacheControl"], firstFetchedAt: row["firstFetchedAt"],
                              lastConfirmedAt: row["lastConfirmedAt"], valid: row["valid"], diagnostics: row["diagnostics"],
                              appIDs: StoredList.decode(row["appIDs"]))
    }

    // MARK: writing

    private static func ensureHost(_ db: Database, _ name: String, at: Double) throws {
        try db.cachedStatement(sql: "INSERT OR IGNORE INTO host (name, createdAt) VALUES (?, ?)").execute(arguments: [name, at])
    }

    private static func currentVersion(_ db: Database, _ name: String) throws -> Int? {
        try Int.fetchOne(db.cachedStatement(sql: "SELECT currentVersion FROM host WHERE name = ?"), arguments: [name]) ?? nil
    }

    /// A usable body arrived. The same bytes as a stored version make that version current again
    /// (content-addressed); new bytes become the next version.
    public func recordSuccess(host name: String, body: [UInt8], sha256: String, etag: String?, lastModified: String?,
                              contentType: String?, cacheControl: String?, valid: Bool, diagnostics: String,
                              appIDs: [String], fetch: FetchRecord) async throws -> RecordedFetch {
        try await commits.write { db in
            try Self.ensureHost(db, name, at: fetch.at)
            let previous = try Self.currentVersion(db, name)
            let version: Int
            if let existing = try Int.fetchOne(db.cachedStatement(sql: "SELECT version FROM snapshot WHERE host = ? AND sha256 = ?"), arguments: [name, sha256]) {
                version = existing
                try db.cachedStatement(sql: """
                    UPDATE snapshot SET lastConfirmedAt = ?, etag = ?, lastModified = ?, contentType = ?, cacheControl = ?
                    WHERE host = ? AND version = ?
                    """).execute(arguments: [fetch.at, etag, lastModified, contentType, cacheControl, name, version])
            } else {
                version = (try Int.fetchOne(db.cachedStatement(sql: "SELECT MAX(version) FROM snapshot WHERE host = ?"), arguments: [name]) ?? 0) + 1
                try db.cachedStatement(sql: """
                    INSERT INTO snapshot (host, version, sha256, size, body, etag, lastModified, contentType, cacheControl,
                                          firstFetchedAt, lastConfirmedAt, valid, diagnostics, appIDs)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """).execute(arguments: [name, version, sha256, body.count, Data(body), etag, lastModified, contentType, cacheControl,
                                     fetch.at, fetch.at, valid, diagnostics, StoredList.encode(appIDs)])
            }
            try db.cachedStatement(sql: """
                UPDATE host SET currentVersion = ?, confirmedAt = ?, expiresAt = ?, failureReason = NULL, failureDetails = NULL,
                                failureAt = NULL, failureUntil = NULL, failureUpstream = NULL, purge = 'none', upstream = ? WHERE name = ?
                """).execute(arguments: [version, fetch.confirmedAt, fetch.expiresAt, fetch.upstream?.stored, name])
            let change: RecordedFetch.Change = previous == version ? .unchanged : .updated
            try Self.log(db, name, fetch, outcome: change.rawValue, reason: nil, details: nil, version: version)
            return RecordedFetch(change: change, version: version, previousVersion: previous)
        }
    }

    /// The origin answered 304: the current copy is confirmed.
    /// - Parameter startedAt: when the fetch began: a purge recorded since then stands (the 304
    ///   answers a question asked before the purge).
    public func recordNotModified(host name: String, fetch: FetchRecord, startedAt: Double) async throws -> RecordedFetch {
        try await commits.write { db in
            try Self.ensureHost(db, name, at: fetch.at)
            let version = try Self.currentVersion(db, name)
            try db.cachedStatement(sql: """
                UPDATE host SET confirmedAt = ?, expiresAt = ?, failureReason = NULL, failureDetails = NULL, failureAt = NULL,
                                failureUntil = NULL, failureUpstream = NULL,
                                purge = CASE WHEN purgedAt IS NOT NULL AND purgedAt > ? THEN purge ELSE 'none' END
                WHERE name = ?
                """).execute(arguments: [fetch.confirmedAt, fetch.expiresAt, startedAt, name])
            if let version {
                try db.cachedStatement(sql: "UPDATE snapshot SET lastConfirmedAt = ? WHERE host = ? AND version = ?").execute(arguments: [fetch.at, name, version])
            }
            try Self.log(db, name, fetch, outcome: RecordedFetch.Change.unchanged.rawValue, reason: nil, details: nil, version: version)
            return RecordedFetch(change: .unchanged, version: version, previousVersion: version)
        }
    }

    /// The fetch failed. The current snapshot stays; the failure is recorded beside it.
    public func recordFailure(host name: String, reason: String, details: String, fetch: FetchRecord) async throws -> RecordedFetch {
        try await commits.write { db in
            try Self.ensureHost(db, name, at: fetch.at)
            let version = try Self.currentVersion(db, name)
            try db.cachedStatement(sql: """
                UPDATE host SET failureReason = ?, failureDetails = ?, failureAt = ?, failureUntil = ?, failureUpstream = ? WHERE name = ?
                """).execute(arguments: [reason, details, fetch.confirmedAt, fetch.failureUntil, fetch.upstream?.stored, name])
            try Self.log(db, name, fetch, outcome: RecordedFetch.Change.failed.rawValue, reason: reason, details: details, version: version)
            return RecordedFetch(change: .failed, version: version, previousVersion: version)
        }
    }

    /// Marks the host purged (`soft` or `hard`); false when the host is unknown.
    public func purge(host name: String, hard: Bool, at time: Double = 0) throws -> Bool {
        try pool.write { db in
            // A soft purge does not undo a hard one: the copy stays forgotten until a fetch.
            try db.execute(sql: "UPDATE host SET purge = CASE WHEN purge = 'hard' THEN 'hard' ELSE ? END, purgedAt = ? WHERE name = ?",
                           arguments: [hard ? "hard" : "soft", time, name])
            return db.changesCount > 0
        }
    }

    private static func log(_ db: Database, _ name: String, _ fetch: FetchRecord, outcome: String, reason: String?,
                            details: String?, version: Int?) throws {
        try db.cachedStatement(sql: """
            INSERT INTO fetch (host, at, outcome, status, reason, details, durationMs, version, trigger)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            """).execute(arguments: [name, fetch.at, outcome, fetch.status, reason, details, fetch.durationMs, version, fetch.trigger])
    }

    /// Records served events in one transaction: each moves its client's first and last time for
    /// the version. Per host and version at most `maxClients` clients are kept; the least
    /// recently seen beyond that are folded into the version's `others` count.
    public func recordServed(_ events: [ServedEvent], maxClients: Int = .max) throws {
        struct Key: Hashable {
            let host: String
            let version: Int
        }
        try pool.write { db in
            let upsert = try db.cachedStatement(sql: """
                INSERT INTO served_client (host, version, client, firstAt, lastAt) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (host, version, client) DO UPDATE SET firstAt = min(firstAt, excluded.firstAt), lastAt = max(lastAt, excluded.lastAt)
                """)
            var touched = Set<Key>()
            for event in events {
                try upsert.execute(arguments: [event.host, event.version, event.client, event.at, event.at])
                touched.insert(Key(host: event.host, version: event.version))
            }
            for key in touched {
                let count = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM served_client WHERE host = ? AND version = ?",
                                             arguments: [key.host, key.version]) ?? 0
                guard count > maxClients else { continue }
                let excess = count - maxClients
                let lastAt = try Double.fetchOne(db, sql: """
                    SELECT MAX(lastAt) FROM (SELECT lastAt FROM served_client WHERE host = ? AND version = ? ORDER BY lastAt LIMIT ?)
                    """, arguments: [key.host, key.version, excess]) ?? 0
                try db.execute(sql: """
                    DELETE FROM served_client WHERE host = ? AND version = ? AND client IN
                        (SELECT client FROM served_client WHERE host = ? AND version = ? ORDER BY lastAt LIMIT ?)
                    """, arguments: [key.host, key.version, key.host, key.version, excess])
                try db.execute(sql: """
                    INSERT INTO served_others (host, version, clients, lastAt) VALUES (?, ?, ?, ?)
                    ON CONFLICT (host, version) DO UPDATE SET clients = clients + excluded.clients, lastAt = max(lastAt, excluded.lastAt)
                    """, arguments: [key.host, key.version, excess, lastAt])
            }
        }
    }

    /// Drops ledger entries last seen before `time` (ledger retention); returns how many.
    @discardableResult
    public func pruneServed(before time: Double) throws -> Int {
        try pool.write { db in
            try db.execute(sql: "DELETE FROM served_client WHERE lastAt < ?", arguments: [time])
            let removed = db.changesCount
            try db.execute(sql: "DELETE FROM served_others WHERE lastAt < ?", arguments: [time])
            return removed
        }
    }

    /// The ledger of a host as served events, oldest first: each client's first and (when later)
    /// last answer of each version.
    public func served(host name: String) throws -> [ServedEvent] {
        try pool.read { db in
            var events: [ServedEvent] = []
            let rows = try Row.fetchCursor(db, sql: "SELECT version, client, firstAt, lastAt FROM served_client WHERE host = ?", arguments: [name])
            while let row = try rows.next() {
                let version: Int = row["version"]
                let client: String = row["client"]
                let first: Double = row["firstAt"]
                let last: Double = row["lastAt"]
                events.append(ServedEvent(host: name, version: version, at: first, client: client))
                if last > first { events.append(ServedEvent(host: name, version: version, at: last, client: client)) }
            }
            return events.sorted { $0.at < $1.at }
        }
    }

    /// Per version, how many clients were folded out of the ledger (`--max-tracked-clients`).
    public func servedOthers(host name: String) throws -> [Int: Int] {
        try pool.read { db in
            var others: [Int: Int] = [:]
            let rows = try Row.fetchCursor(db, sql: "SELECT version, clients FROM served_others WHERE host = ?", arguments: [name])
            while let row = try rows.next() { others[row["version"]] = row["clients"] }
            return others
        }
    }

    /// Clients kept in the ledger for a host and version.
    public func trackedClients(host name: String, version: Int) throws -> Int {
        try pool.read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM served_client WHERE host = ? AND version = ?", arguments: [name, version]) ?? 0
        }
    }

    /// Newest-first entries of the origin fetch log.
    public func fetches(host name: String, limit: Int = 100) throws -> [LoggedFetch] {
        try pool.read { db in
            try Row.fetchAll(db, sql: """
                SELECT at, outcome, status, reason, details, durationMs, version, trigger FROM fetch
                WHERE host = ? ORDER BY id DESC LIMIT ?
                """, arguments: [name, limit]).map {
                LoggedFetch(at: $0["at"], outcome: $0["outcome"], status: $0["status"], reason: $0["reason"], details: $0["details"],
                            durationMs: $0["durationMs"], version: $0["version"], trigger: $0["trigger"])
            }
        }
    }

    /// Versions stored for a host, oldest first.
    public func versions(host name: String) throws -> [Int] {
        try pool.read { db in try Int.fetchAll(db, sql: "SELECT version FROM snapshot WHERE host = ? ORDER BY version", arguments: [name]) }
    }

    /// Every stored version of a host without bodies, newest first.
    public func snapshots(host name: String) throws -> [SnapshotSummary] {
        try pool.read { db in
            try Row.fetchAll(db, sql: """
                SELECT version, sha256, size, firstFetchedAt, lastConfirmedAt, valid FROM snapshot
                WHERE host = ? ORDER BY version DESC
                """, arguments: [name]).map {
                SnapshotSummary(version: $0["version"], sha256: $0["sha256"], size: $0["size"], firstFetchedAt: $0["firstFetchedAt"],
                                lastConfirmedAt: $0["lastConfirmedAt"], valid: $0["valid"])
            }
        }
    }

    /// One stored version, with its exact bytes.
    public func snapshot(host name: String, version: Int) throws -> StoredSnapshot? {
        try pool.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM snapshot WHERE host = ? AND version = ?", arguments: [name, version]).map(Self.snapshot)
        }
    }

    /// The stored TTL metadata of a host: (expiresAt, failureUntil).
    public func ttlMetadata(host name: String) throws -> (expiresAt: Double?, failureUntil: Double?) {
        try pool.read { db in
            let row = try Row.fetchOne(db, sql: "SELECT expiresAt, failureUntil FROM host WHERE name = ?", arguments: [name])
            return (row?["expiresAt"], row?["failureUntil"])
        }
    }

    /// Snapshot versions stored, all hosts together.
    public func versionCount() throws -> Int {
        try pool.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM snapshot") ?? 0 }
    }

    /// `PRAGMA integrity_check` is "ok".
    public func integrityCheck() throws -> Bool {
        try pool.read { db in try String.fetchOne(db, sql: "PRAGMA integrity_check") == "ok" }
    }

    /// Proves the store is writable now: one small committed write (what `/readyz` checks).
    public func checkWritable(at: Double) throws {
        try pool.write { db in
            try db.execute(sql: "INSERT INTO readiness (id, checkedAt) VALUES (1, ?) ON CONFLICT(id) DO UPDATE SET checkedAt = excluded.checkedAt",
                           arguments: [at])
        }
    }

    // MARK: probe

    /// Starts a probe run and returns its id.
    public func startProbeRun(host: String, cdnURL: String, interval: Double, at: Double) throws -> Int64 {
        try pool.write { db in
            try db.execute(sql: "INSERT INTO probe_run (host, cdnURL, interval, startedAt, state) VALUES (?, ?, ?, ?, 'running')",
                           arguments: [host, cdnURL, interval, at])
            return db.lastInsertedRowID
        }
    }

    public func recordProbeObservation(run: Int64, _ o: ProbeRecord) throws {
        try pool.write { db in
            try db.execute(sql: """
                INSERT INTO probe_observation (run, at, source, status, sha256, canonicalSha256, age, cacheControl, xCache,
                    failureReason, failureDetails, error, durationMs) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """, arguments: [run, o.at, o.source, o.status, o.sha256, o.canonicalSha256, o.age, o.cacheControl, o.xCache,
                                 o.failureReason, o.failureDetails, o.error, o.durationMs])
        }
    }

    public func endProbeRun(_ run: Int64, at: Double, state: String) throws {
        try pool.write { db in
            try db.execute(sql: "UPDATE probe_run SET endedAt = ?, state = ? WHERE id = ?", arguments: [at, state, run])
        }
    }

    private static let probeRunColumns = """
        id, host, cdnURL, interval, startedAt, endedAt, state,
        (SELECT MAX(at) FROM probe_observation WHERE run = probe_run.id) AS lastObservedAt
        """

    private static func probeRun(_ row: Row) -> ProbeRun {
        ProbeRun(id: row["id"], host: row["host"], cdnURL: row["cdnURL"], interval: row["interval"], startedAt: row["startedAt"],
                 endedAt: row["endedAt"], state: row["state"], lastObservedAt: row["lastObservedAt"])
    }

    public func probeRunList(limit: Int) throws -> [ProbeRun] {
        try pool.read { db in
            try Row.fetchAll(db, sql: "SELECT \(Self.probeRunColumns) FROM probe_run ORDER BY id DESC LIMIT ?", arguments: [limit])
                .map(Self.probeRun)
        }
    }

    public func probeRun(_ id: Int64) throws -> (ProbeRun, [ProbeRecord])? {
        guard let run = try pool.read({ db in
            try Row.fetchOne(db, sql: "SELECT \(Self.probeRunColumns) FROM probe_run WHERE id = ?", arguments: [id]).map(Self.probeRun)
        }) else { return nil }
        return (run, try probeObservations(run: id))
    }

    /// A run's observations in time order.
    public func probeObservations(run: Int64) throws -> [ProbeRecord] {
        try pool.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM probe_observation WHERE run = ? ORDER BY at, rowid", arguments: [run]).map {
                ProbeRecord(at: $0["at"], source: $0["source"], status: $0["status"], sha256: $0["sha256"],
                            canonicalSha256: $0["canonicalSha256"], age: $0["age"], cacheControl: $0["cacheControl"],
                            xCache: $0["xCache"], failureReason: $0["failureReason"], failureDetails: $0["failureDetails"],
                            error: $0["error"], durationMs: $0["durationMs"])
            }
        }
    }

    // MARK: export (`store copy`)

    /// Everything stored about one host; nil when unknown.
    public func export(host name: String) throws -> HostCopy? {
        try pool.read { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT * FROM host WHERE name = ?", arguments: [name]) else { return nil }
            let snapshots = try Row.fetchAll(db, sql: "SELECT * FROM snapshot WHERE host = ? ORDER BY version", arguments: [name]).map(Self.snapshot)
            let current = snapshots.first { $0.version == row["currentVersion"] }
            let fetches = try Row.fetchAll(db, sql: """
                SELECT at, outcome, status, reason, details, durationMs, version, trigger FROM fetch WHERE host = ? ORDER BY id
                """, arguments: [name]).map {
                LoggedFetch(at: $0["at"], outcome: $0["outcome"], status: $0["status"], reason: $0["reason"], details: $0["details"],
                            durationMs: $0["durationMs"], version: $0["version"], trigger: $0["trigger"])
            }
            let clients = try Row.fetchAll(db, sql: "SELECT version, client, firstAt, lastAt FROM served_client WHERE host = ?", arguments: [name]).map {
                HostCopy.LedgerClient(version: $0["version"], client: $0["client"], firstAt: $0["firstAt"], lastAt: $0["lastAt"])
            }
            let others = try Row.fetchAll(db, sql: "SELECT version, clients, lastAt FROM served_others WHERE host = ?", arguments: [name]).map {
                HostCopy.LedgerOthers(version: $0["version"], clients: $0["clients"], lastAt: $0["lastAt"])
            }
            return HostCopy(host: Self.host(row, appIDs: current?.appIDs ?? []), createdAt: row["createdAt"], expiresAt: row["expiresAt"],
                            failureUntil: row["failureUntil"], purgedAt: row["purgedAt"], snapshots: snapshots, fetches: fetches,
                            clients: clients, others: others)
        }
    }

    /// Every probe run with its observations, oldest first.
    public func probeRuns() throws -> [ProbeRunCopy] {
        let runs = try pool.read { db in
            try Row.fetchAll(db, sql: "SELECT id, host, cdnURL, interval, startedAt, endedAt, state FROM probe_run ORDER BY id").map {
                (id: $0["id"] as Int64, host: $0["host"] as String, cdnURL: $0["cdnURL"] as String, interval: $0["interval"] as Double,
                 startedAt: $0["startedAt"] as Double, endedAt: $0["endedAt"] as Double?, state: $0["state"] as String)
            }
        }
        return try runs.map {
            ProbeRunCopy(host: $0.host, cdnURL: $0.cdnURL, interval: $0.interval, startedAt: $0.startedAt, endedAt: $0.endedAt,
                         state: $0.state, observations: try probeObservations(run: $0.id))
        }
    }
}

extension SnapshotStore: SnapshotStoring {}
