import CachePolicy
import EdgeModel
import OriginFetcher
import SnapshotStore

/// Where the edge keeps what must outlive the process: versioned snapshots with their TTL
/// metadata, host state (current version, failure, purge), the fetch log and the propagation
/// ledger. `SnapshotStore` (SQLite) is the embedded one; an in-memory fake runs the edge's
/// behaviour tests. Async, so a networked store (PostgreSQL) can stand behind it.
public protocol SnapshotStoring: Sendable {
    /// The host's state and its current snapshot (with body), or nil when never seen.
    func host(_ name: String) async throws -> (StoredHost, StoredSnapshot?)?
    /// Every host, by name, with its current snapshot's app IDs.
    func hosts() async throws -> [StoredHost]
    /// One page of hosts by name: after `after`, containing `containing`, at most `limit`.
    func hosts(after: String?, containing: String?, limit: Int) async throws -> [StoredHost]
    /// A 200: a new version when the bytes are new (content-addressed), else the current one confirmed.
    func recordSuccess(host name: String, body: [UInt8], sha256: String, etag: String?, lastModified: String?,
                       contentType: String?, cacheControl: String?, valid: Bool, diagnostics: String,
                       appIDs: [String], fetch: FetchRecord) async throws -> RecordedFetch
    /// A 304 to the fetch that began at `startedAt`: a purge recorded since then stands.
    func recordNotModified(host name: String, fetch: FetchRecord, startedAt: Double) async throws -> RecordedFetch
    /// A failed fetch; the current snapshot stays.
    func recordFailure(host name: String, reason: String, details: String, fetch: FetchRecord) async throws -> RecordedFetch
    /// Marks the host purged; false when it is unknown. A soft purge never undoes a hard one.
    func purge(host name: String, hard: Bool, at time: Double) async throws -> Bool
    func recordServed(_ events: [ServedEvent], maxClients: Int) async throws
    func pruneServed(before time: Double) async throws -> Int
    func served(host name: String) async throws -> [ServedEvent]
    func servedOthers(host name: String) async throws -> [Int: Int]
    func fetches(host name: String, limit: Int) async throws -> [LoggedFetch]
    func versions(host name: String) async throws -> [Int]
    func snapshots(host name: String) async throws -> [SnapshotSummary]
    func snapshot(host name: String, version: Int) async throws -> StoredSnapshot?
    func versionCount() async throws -> Int
    /// Throws when the store does not accept a write now (`/readyz`).
    func checkWritable(at: Double) async throws
}

extension SnapshotStore: SnapshotStoring {}

/// How the edge asks an origin for its file (libcurl today; a parent edge later).
public protocol OriginFetching: Sendable {
    /// Never throws: every outcome, failures included, is a `FetchResult`.
    func fetch(_ host: OriginHost, validators: Validators?) async -> FetchResult
    /// Seconds one fetch may take (`--origin-timeout`): also how long a request waits for a slot.
    var timeout: Double { get }
}

extension OriginFetcher: OriginFetching {
    public var timeout: Double { configuration.timeout }
}

/// Single flight: at most one operation per key at a time; a caller arriving while one runs
/// waits for its result. In one process, `LocalSingleFlight`; across edges sharing a store, a
/// cross-node lock can stand behind the same protocol.
public protocol SingleFlight<Value>: Sendable {
    associatedtype Value: Sendable
    /// Runs `operation` for `key`, or joins the one in flight; `joined` says which.
    func run(_ key: String, _ operation: @escaping @Sendable () async -> Value) async -> (value: Value, joined: Bool)
}

/// `SingleFlight` within this process: a task per key in flight.
public final class LocalSingleFlight<Value: Sendable>: SingleFlight, Sendable {
    private let inflight = Locked<[String: Task<Value, Never>]>([:])

    public init() {}

    public func run(_ key: String, _ operation: @escaping @Sendable () async -> Value) async -> (value: Value, joined: Bool) {
        let (task, leader) = inflight.withLock { map -> (Task<Value, Never>, Bool) in
            if let running = map[key] { return (running, false) }
            let task = Task { await operation() }
            map[key] = task
            return (task, true)
        }
        let value = await task.value
        if leader { inflight.withLock { $0[key] = nil } }
        return (value, !leader)
    }
}
