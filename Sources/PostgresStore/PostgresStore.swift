import EdgeModel
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOSSL
import PostgresNIO

public enum PostgresStoreError: Error, CustomStringConvertible, Equatable {
    /// The store cannot be reached now (the edge goes on from memory).
    case unavailable
    /// A call took longer than the store's call timeout.
    case timedOut(String)
    /// The store could not be reached within the start-up wait.
    case unreachable(String)
    /// `store copy`: the target holds this version with other bytes.
    case conflict(host: String, version: Int)

    public var description: String {
        switch self {
        case .unavailable: return "store unavailable"
        case .timedOut(let what): return "store call timed out: \(what)"
        case .unreachable(let why): return why
        case .conflict(let host, let version): return "\(host) version \(version) has other bytes in the target store"
        }
    }

    /// One line for an operator about any error of the store, without credentials.
    public static func describe(_ error: any Error) -> String { PostgresStore.describe(error) }
}

/// The edge's records in PostgreSQL, shared by several edges: the same tables as the SQLite store
/// plus a change log announced on the channel `aasa_edge` (LISTEN/NOTIFY), fetch leases for
/// cross-node coalescing and the list of nodes. The only code touching PostgreSQL.
///
/// Availability follows one dedicated listening connection: while it is down, calls fail at once
/// (`PostgresStoreError.unavailable`) so the edge serves from memory instead of waiting; it
/// reconnects with a backoff capped at 5 s and then delivers the changes it missed.
public final class PostgresStore: SharedStoring, Sendable {
    public static let channel = "aasa_edge"

    public let node: String
    public let location: PostgresLocation
    public let changes: AsyncStream<StoreChange>
    private let continuation: AsyncStream<StoreChange>.Continuation
    let client: PostgresClient
    private let listenerConfiguration: PostgresConnection.Configuration
    let logger: Logger
    /// Seconds one call may take, waiting for a pooled connection included.
    private let callTimeout: Double
    private let status = NIOLockedValueBox(Status())

    private struct Status {
        var available = false
        /// The newest change id delivered: reconnection re-reads from there.
        var lastChange: Int64 = 0
        /// Recent change ids delivered: a change both notified and read back by a catch-up
        /// (it committed while the listener was starting to LISTEN) is delivered once.
        var delivered = Set<Int64>()
        var listener: PostgresConnection?
        var tasks: [Task<Void, Never>] = []
    }

    /// - Parameters:
    ///   - maxConnections: pooled connections to the server (`--store-connections`), besides the
    ///     one that listens.
    public init(location: PostgresLocation, password: String?, node: String, maxConnections: Int, callTimeout: Double = 5,
                logger: Logger) throws {
        self.location = location
        self.node = node
        self.logger = logger
        self.callTimeout = callTimeout
        let tls: PostgresClient.Configuration.TLS
        let connectionTLS: PostgresConnection.Configuration.TLS
        switch location.tls {
        case .disable:
            tls = .disable
            connectionTLS = .disable
        case .prefer:
            tls = .prefer(.makeClientConfiguration())
            connectionTLS = .prefer(try NIOSSLContext(configuration: .makeClientConfiguration()))
        case .require:
            tls = .require(.makeClientConfiguration())
            connectionTLS = .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
        }
        var configuration = PostgresClient.Configuration(host: location.host, port: location.port, username: location.user,
                                                         password: password, database: location.database, tls: tls)
        configuration.options.maximumConnections = max(1, maxConnections)
        configuration.options.connectTimeout = .seconds(2)
        var background = logger
        background.logLevel = .critical  // the pool's own chatter; outages are logged here once
        client = PostgresClient(configuration: configuration, backgroundLogger: background)
        var listener = PostgresConnection.Configuration(host: location.host, port: location.port, username: location.user,
                                                        password: password, database: location.database, tls: connectionTLS)
        listener.options.connectTimeout = .seconds(2)
        listenerConfiguration = listener
        (changes, continuation) = AsyncStream.makeStream(of: StoreChange.self, bufferingPolicy: .bufferingNewest(65_536))
    }

    /// Connects (trying for up to `wait` seconds), creates or upgrades the schema, and starts
    /// listening for changes.
    @discardableResult
    public func start(waitingUpTo wait: Double = 10, listen: Bool = true) async throws -> [String] {
        var applied: [String] = []
        let runner = Task { await client.run() }
        status.withLockedValue { $0.tasks.append(runner) }
        let deadline = ContinuousClock.now + .milliseconds(Int(wait * 1000))
        while true {
            do {
                // One direct connection first: its error says what is wrong (refused, auth, no database).
                let connection = try await PostgresConnection.connect(configuration: listenerConfiguration, id: 0, logger: logger)
                defer { Task { try? await connection.close() } }
                applied = try await Schema.migrate(connection, logger: logger)
                break
            } catch {
                guard ContinuousClock.now < deadline else { throw PostgresStoreError.unreachable(Self.describe(error)) }
                try await Task.sleep(for: .milliseconds(250))
            }
        }
        let last = try await withTimeout("change log", seconds: callTimeout) { client in
            try await client.query("SELECT COALESCE(MAX(id), 0)::BIGINT FROM change", logger: self.logger).collect().first?
                .decode(Int64.self) ?? 0
        }
        status.withLockedValue {
            $0.lastChange = last
            $0.available = true
        }
        if listen {
            let listener = Task { await self.listenForChanges() }
            status.withLockedValue { $0.tasks.append(listener) }
        }
        return applied
    }

    /// Stops listening and closes every connection.
    public func close() async {
        let (tasks, listener) = status.withLockedValue { status in
            status.available = false
            defer { status.tasks = []; status.listener = nil }
            return (status.tasks, status.listener)
        }
        try? await listener?.close()
        for task in tasks { task.cancel() }
        continuation.finish()
    }

    public var isAvailable: Bool { status.withLockedValue { $0.available } }

    // MARK: calls

    /// Runs `body` on the pool unless the store is known to be down, within the call timeout. A
    /// failure that is not the server's answer to the statement marks the store down until the
    /// listener reconnects.
    @discardableResult
    private func call<T: Sendable>(_ what: String, _ body: @escaping @Sendable (PostgresClient) async throws -> T) async throws -> T {
        guard isAvailable else { throw PostgresStoreError.unavailable }
        do {
            return try await withTimeout(what, seconds: callTimeout, body)
        } catch let error as PSQLError where error.code != .server {
            markUnavailable(because: error)  // the connection, not the statement, failed
            throw error
        } catch PostgresStoreError.timedOut(let what) {
            markUnavailable(because: PostgresStoreError.timedOut(what))
            throw PostgresStoreError.timedOut(what)
        }
    }

    private func withTimeout<T: Sendable>(_ what: String, seconds: Double,
                                          _ body: @escaping @Sendable (PostgresClient) async throws -> T) async throws -> T {
        try await withThrowingTaskGroup(of: T.self) { group in
            group.addTask { try await body(self.client) }
            group.addTask {
                try await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
                throw PostgresStoreError.timedOut(what)
            }
            defer { group.cancelAll() }
            return try await group.next()!
        }
    }

    private func transaction<T: Sendable>(_ what: String, _ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        try await call(what) { client in try await Self.inTransaction(client, logger: self.logger, body) }
    }

    /// A transaction whose error is the one that ended it (not PostgresNIO's wrapper).
    static func inTransaction<T: Sendable>(_ client: PostgresClient, logger: Logger,
                                           _ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        do {
            return try await client.withTransaction(logger: logger) { connection in try await body(connection) }
        } catch let error as PostgresTransactionError {
            throw error.closureError ?? error.beginError ?? error.commitError ?? error
        }
    }

    private func markUnavailable(because error: any Error) {
        let (was, listener) = status.withLockedValue { status -> (Bool, PostgresConnection?) in
            defer { status.available = false }
            return (status.available, status.listener)
        }
        if was {
            logger.error("store unavailable: serving from memory until it is back", metadata: ["store": "\(location)", "error": "\(Self.describe(error))"])
        }
        // The listener's reconnection decides when the store is back.
        if let listener { Task { try? await listener.close() } }
    }

    static func describe(_ error: any Error) -> String {
        if let error = error as? PostgresStoreError { return error.description }
        if let error = error as? PostgresTransactionError {
            return describe(error.closureError ?? error.beginError ?? error.commitError ?? error.rollbackError ?? error)
        }
        if let error = error as? PSQLError {
            if let message = error.serverInfo?[.message] { return message }
            return "\(error.code)" + (error.underlying.map { ": \($0)" } ?? "")
        }
        return "\(error)"
    }

    // MARK: change feed

    /// One connection that LISTENs on `aasa_edge`, reconnecting with backoff (0.1 s doubling to
    /// 5 s). After each (re)connection, changes committed since the last one delivered are read
    /// from the change log, so a notification lost while disconnected is not lost.
    private func listenForChanges() async {
        var backoff = 0.1
        var wasDown = false
        while !Task.isCancelled {
            var opened: PostgresConnection?
            do {
                let connection = try await PostgresConnection.connect(configuration: listenerConfiguration, id: 1, logger: logger)
                opened = connection
                status.withLockedValue { $0.listener = connection }
                try await connection.listen(on: Self.channel) { notifications in
                    try await self.catchUp(connection)
                    status.withLockedValue { $0.available = true }
                    if wasDown {
                        logger.notice("store reachable again", metadata: ["store": "\(location)"])
                        wasDown = false
                    }
                    backoff = 0.1
                    for try await notification in notifications {
                        if let change = Self.change(fromPayload: notification.payload) { deliver(change) }
                    }
                }
            } catch {
                if !Task.isCancelled, isAvailable {
                    logger.error("store unavailable: serving from memory until it is back",
                                 metadata: ["store": "\(location)", "error": "\(Self.describe(error))"])
                }
            }
            try? await opened?.close()
            if Task.isCancelled { break }
            status.withLockedValue {
                $0.available = false
                $0.listener = nil
            }
            wasDown = true
            try? await Task.sleep(for: .milliseconds(Int(backoff * 1000)))
            backoff = min(backoff * 2, 5)
        }
    }

    private func catchUp(_ connection: PostgresConnection) async throws {
        let since = status.withLockedValue { $0.lastChange }
        let pruned = try await connection.query("SELECT upto FROM change_pruned WHERE id = 1", logger: logger).collect().first?
            .decode(Int64.self) ?? 0
        if pruned > since {
            logger.warning("changes this edge missed were pruned from the change log: dropping what it holds in memory",
                           metadata: ["last_heard": "\(since)", "pruned_up_to": "\(pruned)"])
            deliver(StoreChange(id: pruned, host: "", kind: .resync, node: node))
        }
        let rows = try await connection.query("SELECT id, host, kind, node FROM change WHERE id > \(since) ORDER BY id", logger: logger)
        for try await (id, host, kind, node) in rows.decode((Int64, String, String, String).self) {
            if let kind = StoreChange.Kind(rawValue: kind) { deliver(StoreChange(id: id, host: host, kind: kind, node: node)) }
        }
    }

    private func deliver(_ change: StoreChange) {
        let fresh = status.withLockedValue { status -> Bool in
            if change.kind != .resync {
                guard status.delivered.insert(change.id).inserted else { return false }
                if status.delivered.count > 20_000 {
                    let floor = status.lastChange - 10_000
                    status.delivered = status.delivered.filter { $0 > floor }
                }
            }
            status.lastChange = max(status.lastChange, change.id)
            return true
        }
        guard fresh else { return }
        if case .dropped = continuation.yield(change) {
            // The consumer fell 65,536 changes behind: the oldest are gone, so it must resync.
            continuation.yield(StoreChange(id: change.id, host: "", kind: .resync, node: node))
        }
    }

    /// `ID KIND NODE HOST`.
    static func change(fromPayload payload: String) -> StoreChange? {
        let parts = payload.split(separator: " ", maxSplits: 3)
        guard parts.count == 4, let id = Int64(parts[0]), let kind = StoreChange.Kind(rawValue: String(parts[1])) else { return nil }
        return StoreChange(id: id, host: String(parts[3]), kind: kind, node: String(parts[2]))
    }

    /// Logs the change and announces it; delivered to listeners when the transaction commits.
    private func announce(_ connection: PostgresConnection, host: String, kind: StoreChange.Kind, at: Double) async throws {
        try await connection.query("""
            WITH c AS (INSERT INTO change (host, kind, node, at) VALUES (\(host), \(kind.rawValue), \(node), \(at)) RETURNING id)
            SELECT pg_notify(\(Self.channel), c.id::TEXT || ' ' || \(kind.rawValue) || ' ' || \(node) || ' ' || \(host)) FROM c
            """, logger: logger)
    }

    // MARK: SharedStoring

    public func claimFetch(host: String, since: Double, until: Double) async throws -> FetchClaim {
        try await call("claim fetch") { client in
            let node = self.node
            let claimed = try await client.query("""
                INSERT INTO fetch_lease (host, node, until) VALUES (\(host), \(node), \(until))
                ON CONFLICT (host) DO UPDATE SET node = EXCLUDED.node, until = EXCLUDED.until
                WHERE fetch_lease.until < \(since) OR fetch_lease.node = \(node)
                RETURNING node
                """, logger: self.logger).collect().count == 1
            // A fetch recorded since the caller looked (it may have ended its lease just now):
            // its result answers the caller.
            // The fetch log's time, not the host's confirmation (behind a parent edge that is
            // backdated by the parent's Age).
            let latest = try await client.query("""
                SELECT at FROM fetch_log WHERE host = \(host) ORDER BY id DESC LIMIT 1
                """, logger: self.logger).collect().first?.decode(Double.self)
            if let latest, latest >= since {
                if claimed {
                    try await client.query("DELETE FROM fetch_lease WHERE host = \(host) AND node = \(node)", logger: self.logger)
                }
                return .done
            }
            return claimed ? .claimed : .busy
        }
    }

    public func endFetch(host: String) async throws {
        try await call("end fetch") { client in
            try await client.query("DELETE FROM fetch_lease WHERE host = \(host) AND node = \(self.node)", logger: self.logger)
        }
    }

    public func heartbeat(startedAt: Double, at: Double, version: String) async throws {
        try await call("heartbeat") { client in
            try await client.query("""
                INSERT INTO node (name, started_at, last_seen_at, version) VALUES (\(self.node), \(startedAt), \(at), \(version))
                ON CONFLICT (name) DO UPDATE SET started_at = EXCLUDED.started_at, last_seen_at = EXCLUDED.last_seen_at,
                                                 version = EXCLUDED.version
                """, logger: self.logger)
            // The change log only serves edges catching up after a short outage.
            try await client.query("""
                WITH gone AS (DELETE FROM change WHERE at < \(at - 86_400) RETURNING id)
                UPDATE change_pruned SET upto = GREATEST(upto, (SELECT COALESCE(MAX(id), 0) FROM gone)) WHERE id = 1
                """, logger: self.logger)
        }
    }

    public func nodes(seenSince since: Double) async throws -> [NodeRecord] {
        try await call("nodes") { client in
            var nodes: [NodeRecord] = []
            let rows = try await client.query("""
                SELECT name, started_at, last_seen_at, version FROM node WHERE last_seen_at >= \(since) ORDER BY name
                """, logger: self.logger)
            for try await (name, started, seen, version) in rows.decode((String, Double, Double, String).self) {
                nodes.append(NodeRecord(node: name, startedAt: started, lastSeenAt: seen, version: version))
            }
            return nodes
        }
    }

    // MARK: reading

    private static let hostColumns = """
        h.name, h.current_version, h.confirmed_at, h.failure_reason, h.failure_details, h.failure_at, h.purge, s.app_ids,
        h.upstream, h.failure_upstream
        """

    private static func host(_ row: PostgresRow) throws -> StoredHost {
        let (name, version, confirmed, reason, details, failureAt, purge, appIDs, upstream, failureUpstream) =
            try row.decode((String, Int?, Double?, String?, String?, Double?, String, String?, String?, String?).self)
        var failure: StoredFailure?
        if let reason, let failureAt {
            failure = StoredFailure(reason: reason, details: details ?? "{}", at: failureAt, upstream: UpstreamHeaders(stored: failureUpstream))
        }
        return StoredHost(name: name, currentVersion: version, confirmedAt: confirmed, failure: failure, purge: purge,
                          appIDs: StoredList.decode(appIDs), upstream: UpstreamHeaders(stored: upstream))
    }

    private static let snapshotColumns = """
        host, version, sha256, body, etag, last_modified, content_type, cache_control, first_fetched_at, last_confirmed_at,
        valid, diagnostics, app_ids
        """

    private static func snapshot(_ row: PostgresRow) throws -> StoredSnapshot {
        let cells = row.makeRandomAccess()
        let body = try cells["body"].decode(ByteBuffer.self)
        return StoredSnapshot(host: try cells["host"].decode(String.self), version: try cells["version"].decode(Int.self),
                              sha256: try cells["sha256"].decode(String.self), body: Array(body.readableBytesView),
                              etag: try cells["etag"].decode(String?.self), lastModified: try cells["last_modified"].decode(String?.self),
                              contentType: try cells["content_type"].decode(String?.self),
                              cacheControl: try cells["cache_control"].decode(String?.self),
                              firstFetchedAt: try cells["first_fetched_at"].decode(Double.self),
                              lastConfirmedAt: try cells["last_confirmed_at"].decode(Double.self),
                              valid: try cells["valid"].decode(Bool.self), diagnostics: try cells["diagnostics"].decode(String.self),
                              appIDs: StoredList.decode(try cells["app_ids"].decode(String.self)))
    }

    public func host(_ name: String) async throws -> (StoredHost, StoredSnapshot?)? {
        try await call("read host") { client in
            let rows = try await client.query("""
                SELECT \(unescaped: Self.hostColumns) FROM host h
                LEFT JOIN snapshot s ON s.host = h.name AND s.version = h.current_version WHERE h.name = \(name)
                """, logger: self.logger).collect()
            guard let row = rows.first else { return nil }
            let host = try Self.host(row)
            guard let version = host.currentVersion else { return (host, nil) }
            let snapshot = try await client.query("""
                SELECT \(unescaped: Self.snapshotColumns) FROM snapshot WHERE host = \(name) AND version = \(version)
                """, logger: self.logger).collect().first.map(Self.snapshot)
            return (host, snapshot)
        }
    }

    public func hosts() async throws -> [StoredHost] {
        try await hosts(after: nil, containing: nil, limit: Int(Int32.max))
    }

    public func hosts(after: String?, containing: String?, limit: Int) async throws -> [StoredHost] {
        try await call("list hosts") { client in
            let rows = try await client.query("""
                SELECT \(unescaped: Self.hostColumns) FROM host h
                LEFT JOIN snapshot s ON s.host = h.name AND s.version = h.current_version
                WHERE (\(after)::TEXT IS NULL OR h.name > \(after)) AND (\(containing ?? "") = '' OR strpos(h.name, \(containing ?? "")) > 0)
                ORDER BY h.name LIMIT \(limit)
                """, logger: self.logger)
            var hosts: [StoredHost] = []
            for try await row in rows { hosts.append(try Self.host(row)) }
            return hosts
        }
    }

    public func served(host name: String) async throws -> [ServedEvent] {
        try await call("read ledger") { client in
            var events: [ServedEvent] = []
            let rows = try await client.query("SELECT version, client, first_at, last_at FROM served_client WHERE host = \(name)", logger: self.logger)
            for try await (version, clientID, first, last) in rows.decode((Int, String, Double, Double).self) {
                events.append(ServedEvent(host: name, version: version, at: first, client: clientID))
                if last > first { events.append(ServedEvent(host: name, version: version, at: last, client: clientID)) }
            }
            return events.sorted { $0.at < $1.at }
        }
    }

    public func servedOthers(host name: String) async throws -> [Int: Int] {
        try await call("read ledger") { client in
            var others: [Int: Int] = [:]
            let rows = try await client.query("SELECT version, clients FROM served_others WHERE host = \(name)", logger: self.logger)
            for try await (version, clients) in rows.decode((Int, Int).self) { others[version] = clients }
            return others
        }
    }

    public func fetches(host name: String, limit: Int) async throws -> [LoggedFetch] {
        try await call("read fetch log") { client in
            var fetches: [LoggedFetch] = []
            let rows = try await client.query("""
                SELECT at, outcome, status, reason, details, duration_ms, version, trigger FROM fetch_log
                WHERE host = \(name) ORDER BY id DESC LIMIT \(limit)
                """, logger: self.logger)
            for try await (at, outcome, status, reason, details, duration, version, trigger)
                in rows.decode((Double, String, Int?, String?, String?, Double, Int?, String).self) {
                fetches.append(LoggedFetch(at: at, outcome: outcome, status: status, reason: reason, details: details,
                                           durationMs: duration, version: version, trigger: trigger))
            }
            return fetches
        }
    }

    public func versions(host name: String) async throws -> [Int] {
        try await call("read versions") { client in
            var versions: [Int] = []
            let rows = try await client.query("SELECT version FROM snapshot WHERE host = \(name) ORDER BY version", logger: self.logger)
            for try await version in rows.decode(Int.self) { versions.append(version) }
            return versions
        }
    }

    public func snapshots(host name: String) async throws -> [SnapshotSummary] {
        try await call("read versions") { client in
            var summaries: [SnapshotSummary] = []
            let rows = try await client.query("""
                SELECT version, sha256, size, first_fetched_at, last_confirmed_at, valid FROM snapshot
                WHERE host = \(name) ORDER BY version DESC
                """, logger: self.logger)
            for try await (version, sha, size, first, last, valid) in rows.decode((Int, String, Int, Double, Double, Bool).self) {
                summaries.append(SnapshotSummary(version: version, sha256: sha, size: size, firstFetchedAt: first, lastConfirmedAt: last, valid: valid))
            }
            return summaries
        }
    }

    public func snapshot(host name: String, version: Int) async throws -> StoredSnapshot? {
        try await call("read version") { client in
            try await client.query("""
                SELECT \(unescaped: Self.snapshotColumns) FROM snapshot WHERE host = \(name) AND version = \(version)
                """, logger: self.logger).collect().first.map(Self.snapshot)
        }
    }

    public func versionCount() async throws -> Int {
        try await call("count versions") { client in
            try await client.query("SELECT COUNT(*)::BIGINT FROM snapshot", logger: self.logger).collect().first?.decode(Int.self) ?? 0
        }
    }

    // MARK: probe runs

    static func observationInsert(run: Int64, _ o: ProbeRecord) -> PostgresQuery {
        """
        INSERT INTO probe_observation (run, at, source, status, sha256, canonical_sha256, age, cache_control, x_cache,
                                       failure_reason, failure_details, error, duration_ms)
        VALUES (\(run), \(o.at), \(o.source), \(o.status), \(o.sha256), \(o.canonicalSha256), \(o.age), \(o.cacheControl),
                \(o.xCache), \(o.failureReason), \(o.failureDetails), \(o.error), \(o.durationMs))
        """
    }

    public func startProbeRun(host: String, cdnURL: String, interval: Double, at: Double) async throws -> Int64 {
        try await call("start probe run") { client in
            let rows = try await client.query("""
                INSERT INTO probe_run (host, cdn_url, interval_seconds, started_at, state) VALUES (\(host), \(cdnURL), \(interval), \(at), 'running')
                RETURNING id
                """, logger: self.logger).collect()
            guard let id = try rows.first?.decode(Int64.self) else { throw PostgresStoreError.unavailable }
            return id
        }
    }

    public func recordProbeObservation(run: Int64, _ observation: ProbeRecord) async throws {
        try await call("record probe observation") { client in
            try await client.query(Self.observationInsert(run: run, observation), logger: self.logger)
        }
    }

    public func endProbeRun(_ run: Int64, at: Double, state: String) async throws {
        try await call("end probe run") { client in
            try await client.query("UPDATE probe_run SET ended_at = \(at), state = \(state) WHERE id = \(run)", logger: self.logger)
        }
    }

    private static let probeRunColumns = """
        id, host, cdn_url, interval_seconds, started_at, ended_at, state,
        (SELECT MAX(at) FROM probe_observation WHERE run = probe_run.id)
        """

    private static func probeRuns(_ rows: PostgresRowSequence) async throws -> [ProbeRun] {
        var runs: [ProbeRun] = []
        for try await (id, host, cdnURL, interval, started, ended, state, last) in rows.decode(
            (Int64, String, String, Double, Double, Double?, String, Double?).self) {
            runs.append(ProbeRun(id: id, host: host, cdnURL: cdnURL, interval: interval, startedAt: started, endedAt: ended, state: state,
                                 lastObservedAt: last))
        }
        return runs
    }

    public func probeRunList(limit: Int) async throws -> [ProbeRun] {
        try await call("list probe runs") { client in
            try await Self.probeRuns(try await client.query(
                "SELECT \(unescaped: Self.probeRunColumns) FROM probe_run ORDER BY id DESC LIMIT \(limit)", logger: self.logger))
        }
    }

    public func probeRun(_ id: Int64) async throws -> (ProbeRun, [ProbeRecord])? {
        try await call("read probe run") { client in
            guard let run = try await Self.probeRuns(try await client.query(
                "SELECT \(unescaped: Self.probeRunColumns) FROM probe_run WHERE id = \(id)", logger: self.logger)).first else { return nil }
            var records: [ProbeRecord] = []
            let rows = try await client.query("""
                SELECT at, source, status, sha256, canonical_sha256, age, cache_control, x_cache, failure_reason, failure_details, error,
                       duration_ms
                FROM probe_observation WHERE run = \(id) ORDER BY at
                """, logger: self.logger)
            for try await row in rows {
                let c = row.makeRandomAccess()
                records.append(ProbeRecord(
                    at: try c[0].decode(Double.self), source: try c[1].decode(String.self), status: try c[2].decode(Int?.self),
                    sha256: try c[3].decode(String?.self), canonicalSha256: try c[4].decode(String?.self), age: try c[5].decode(Int?.self),
                    cacheControl: try c[6].decode(String?.self), xCache: try c[7].decode(String?.self),
                    failureReason: try c[8].decode(String?.self), failureDetails: try c[9].decode(String?.self),
                    error: try c[10].decode(String?.self), durationMs: try c[11].decode(Double.self)))
            }
            return (run, records)
        }
    }

    public func checkWritable(at: Double) async throws {
        try await call("readiness") { client in
            try await client.query("""
                INSERT INTO readiness (node, checked_at) VALUES (\(self.node), \(at))
                ON CONFLICT (node) DO UPDATE SET checked_at = EXCLUDED.checked_at
                """, logger: self.logger)
        }
    }

    // MARK: writing

    /// Creates the host row when missing and locks it: writes to one host are serialised across
    /// edges. Returns the current version.
    private static func lockHost(_ connection: PostgresConnection, _ name: String, at: Double, logger: Logger) async throws -> Int? {
        try await connection.query("INSERT INTO host (name, created_at) VALUES (\(name), \(at)) ON CONFLICT (name) DO NOTHING", logger: logger)
        return try await connection.query("SELECT current_version FROM host WHERE name = \(name) FOR UPDATE", logger: logger)
            .collect().first?.decode(Int?.self) ?? nil
    }

    private static func log(_ connection: PostgresConnection, _ name: String, _ fetch: FetchRecord, outcome: String, reason: String?,
                            details: String?, version: Int?, logger: Logger) async throws {
        try await connection.query("""
            INSERT INTO fetch_log (host, at, outcome, status, reason, details, duration_ms, version, trigger)
            VALUES (\(name), \(fetch.at), \(outcome), \(fetch.status), \(reason), \(details), \(fetch.durationMs), \(version), \(fetch.trigger))
            """, logger: logger)
    }

    public func recordSuccess(host name: String, body: [UInt8], sha256: String, etag: String?, lastModified: String?,
                              contentType: String?, cacheControl: String?, valid: Bool, diagnostics: String,
                              appIDs: [String], fetch: FetchRecord) async throws -> RecordedFetch {
        try await transaction("record fetch") { connection in
            let logger = self.logger
            let previous = try await Self.lockHost(connection, name, at: fetch.at, logger: logger)
            let version: Int
            if let existing = try await connection.query("SELECT version FROM snapshot WHERE host = \(name) AND sha256 = \(sha256)", logger: logger)
                .collect().first?.decode(Int.self) {
                version = existing
                try await connection.query("""
                    UPDATE snapshot SET last_confirmed_at = \(fetch.at), etag = \(etag), last_modified = \(lastModified),
                                        content_type = \(contentType), cache_control = \(cacheControl)
                    WHERE host = \(name) AND version = \(version)
                    """, logger: logger)
            } else {
                version = (try await connection.query("SELECT COALESCE(MAX(version), 0)::BIGINT FROM snapshot WHERE host = \(name)", logger: logger)
                    .collect().first?.decode(Int.self) ?? 0) + 1
                try await connection.query("""
                    INSERT INTO snapshot (host, version, sha256, size, body, etag, last_modified, content_type, cache_control,
                                          first_fetched_at, last_confirmed_at, valid, diagnostics, app_ids)
                    VALUES (\(name), \(version), \(sha256), \(body.count), \(ByteBuffer(bytes: body)), \(etag), \(lastModified),
                            \(contentType), \(cacheControl), \(fetch.at), \(fetch.at), \(valid), \(diagnostics), \(StoredList.encode(appIDs)))
                    """, logger: logger)
            }
            try await connection.query("""
                UPDATE host SET current_version = \(version), confirmed_at = \(fetch.confirmedAt), expires_at = \(fetch.expiresAt),
                                failure_reason = NULL, failure_details = NULL, failure_at = NULL, failure_until = NULL,
                                failure_upstream = NULL, purge = 'none', upstream = \(fetch.upstream?.stored)
                WHERE name = \(name)
                """, logger: logger)
            let change: RecordedFetch.Change = previous == version ? .unchanged : .updated
            try await Self.log(connection, name, fetch, outcome: change.rawValue, reason: nil, details: nil, version: version, logger: logger)
            try await self.announce(connection, host: name, kind: .fetched, at: fetch.at)
            return RecordedFetch(change: change, version: version, previousVersion: previous)
        }
    }

    public func recordNotModified(host name: String, fetch: FetchRecord, startedAt: Double) async throws -> RecordedFetch {
        try await transaction("record fetch") { connection in
            let logger = self.logger
            let version = try await Self.lockHost(connection, name, at: fetch.at, logger: logger)
            try await connection.query("""
                UPDATE host SET confirmed_at = \(fetch.confirmedAt), expires_at = \(fetch.expiresAt), failure_reason = NULL,
                                failure_details = NULL, failure_at = NULL, failure_until = NULL, failure_upstream = NULL,
                                purge = CASE WHEN purged_at IS NOT NULL AND purged_at > \(startedAt) THEN purge ELSE 'none' END
                WHERE name = \(name)
                """, logger: logger)
            if let version {
                try await connection.query("UPDATE snapshot SET last_confirmed_at = \(fetch.at) WHERE host = \(name) AND version = \(version)",
                                           logger: logger)
            }
            try await Self.log(connection, name, fetch, outcome: RecordedFetch.Change.unchanged.rawValue, reason: nil, details: nil,
                               version: version, logger: logger)
            try await self.announce(connection, host: name, kind: .fetched, at: fetch.at)
            return RecordedFetch(change: .unchanged, version: version, previousVersion: version)
        }
    }

    public func recordFailure(host name: String, reason: String, details: String, fetch: FetchRecord) async throws -> RecordedFetch {
        try await transaction("record fetch") { connection in
            let logger = self.logger
            let version = try await Self.lockHost(connection, name, at: fetch.at, logger: logger)
            try await connection.query("""
                UPDATE host SET failure_reason = \(reason), failure_details = \(details), failure_at = \(fetch.confirmedAt),
                                failure_until = \(fetch.failureUntil), failure_upstream = \(fetch.upstream?.stored)
                WHERE name = \(name)
                """, logger: logger)
            try await Self.log(connection, name, fetch, outcome: RecordedFetch.Change.failed.rawValue, reason: reason, details: details,
                               version: version, logger: logger)
            try await self.announce(connection, host: name, kind: .fetched, at: fetch.at)
            return RecordedFetch(change: .failed, version: version, previousVersion: version)
        }
    }

    public func purge(host name: String, hard: Bool, at time: Double) async throws -> Bool {
        try await transaction("purge") { connection in
            let known = try await connection.query("""
                UPDATE host SET purge = CASE WHEN purge = 'hard' THEN 'hard' ELSE \(hard ? "hard" : "soft") END, purged_at = \(time)
                WHERE name = \(name) RETURNING name
                """, logger: self.logger).collect().count == 1
            if known { try await self.announce(connection, host: name, kind: hard ? .purgeHard : .purgeSoft, at: time) }
            return known
        }
    }

    public func recordServed(_ events: [ServedEvent], maxClients: Int) async throws {
        struct Key: Hashable {
            let host: String
            let version: Int
            let client: String
        }
        // One row per key: an INSERT … ON CONFLICT may not touch a row twice.
        var merged: [Key: (first: Double, last: Double)] = [:]
        for event in events {
            let key = Key(host: event.host, version: event.version, client: event.client)
            let seen = merged[key]
            merged[key] = (min(seen?.first ?? event.at, event.at), max(seen?.last ?? event.at, event.at))
        }
        guard !merged.isEmpty else { return }
        let keys = Array(merged.keys)
        let hosts = keys.map(\.host), versions = keys.map(\.version), clients = keys.map(\.client)
        let firsts = keys.map { merged[$0]!.first }, lasts = keys.map { merged[$0]!.last }
        try await transaction("record ledger") { connection in
            let logger = self.logger
            try await connection.query("""
                INSERT INTO served_client (host, version, client, first_at, last_at)
                SELECT * FROM UNNEST(\(hosts)::TEXT[], \(versions)::BIGINT[], \(clients)::TEXT[], \(firsts)::FLOAT8[], \(lasts)::FLOAT8[])
                ON CONFLICT (host, version, client) DO UPDATE SET first_at = LEAST(served_client.first_at, EXCLUDED.first_at),
                                                                  last_at = GREATEST(served_client.last_at, EXCLUDED.last_at)
                """, logger: logger)
            let touched = Set(keys.map { "\($0.version) \($0.host)" })
            for item in touched {
                let parts = item.split(separator: " ", maxSplits: 1)
                let version = Int(parts[0])!, host = String(parts[1])
                let count = try await connection.query("""
                    SELECT COUNT(*)::BIGINT FROM served_client WHERE host = \(host) AND version = \(version)
                    """, logger: logger).collect().first?.decode(Int.self) ?? 0
                guard count > maxClients else { continue }
                let excess = count - maxClients
                let lastAt = try await connection.query("""
                    WITH gone AS (
                        DELETE FROM served_client WHERE host = \(host) AND version = \(version) AND client IN
                            (SELECT client FROM served_client WHERE host = \(host) AND version = \(version) ORDER BY last_at LIMIT \(excess))
                        RETURNING last_at)
                    SELECT COALESCE(MAX(last_at), 0) FROM gone
                    """, logger: logger).collect().first?.decode(Double.self) ?? 0
                try await connection.query("""
                    INSERT INTO served_others (host, version, clients, last_at) VALUES (\(host), \(version), \(excess), \(lastAt))
                    ON CONFLICT (host, version) DO UPDATE SET clients = served_others.clients + EXCLUDED.clients,
                                                              last_at = GREATEST(served_others.last_at, EXCLUDED.last_at)
                    """, logger: logger)
            }
        }
    }

    public func pruneServed(before time: Double) async throws -> Int {
        try await transaction("prune ledger") { connection in
            let removed = try await connection.query("DELETE FROM served_client WHERE last_at < \(time) RETURNING 1", logger: self.logger)
                .collect().count
            try await connection.query("DELETE FROM served_others WHERE last_at < \(time)", logger: self.logger)
            return removed
        }
    }
}
