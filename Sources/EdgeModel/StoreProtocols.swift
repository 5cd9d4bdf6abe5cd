// The seams between the edge and its stores. Each store module conforms its own type; the edge
// (EdgeCore) sees only these protocols.

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

    // Probe runs (`aasa-edge probe` and the server's own probes write the same records).
    /// Records a new run (`running`) and returns its id.
    func startProbeRun(host: String, cdnURL: String, interval: Double, at: Double) async throws -> Int64
    func recordProbeObservation(run: Int64, _ observation: ProbeRecord) async throws
    /// Marks the run ended (`converged`, `finished`, `stopped` or `failed`).
    func endProbeRun(_ run: Int64, at: Double, state: String) async throws
    /// The newest `limit` runs, newest first.
    func probeRunList(limit: Int) async throws -> [ProbeRun]
    /// One run with its observations in time order; nil when unknown.
    func probeRun(_ id: Int64) async throws -> (ProbeRun, [ProbeRecord])?
}


/// A store several edges share (PostgreSQL): besides the records, it tells each edge what the
/// others changed, lets one edge at a time fetch a host, and keeps the list of edges.
public protocol SharedStoring: SnapshotStoring {
    /// This edge's `--node-id`: written with each change so an edge can skip its own.
    var node: String { get }
    /// Every committed change to a host's served state (fetch results and purges, this edge's
    /// included), as it commits; after a lost connection, the changes missed meanwhile are
    /// delivered again on reconnection. One consumer.
    var changes: AsyncStream<StoreChange> { get }
    /// False while the store cannot be reached (writes and reads fail at once then).
    var isAvailable: Bool { get }
    /// Asks to be the one edge fetching `host` until `until`. `.done` when the host was fetched
    /// (or failed) at or after `since`: the caller's copy is outdated, the store has a newer answer.
    func claimFetch(host: String, since: Double, until: Double) async throws -> FetchClaim
    /// Gives up the claim (the fetch's result is recorded).
    func endFetch(host: String) async throws
    /// Records this edge as alive (`/admin/v1/nodes`).
    func heartbeat(startedAt: Double, at: Double, version: String) async throws
    /// Edges seen at or after `since`, by name.
    func nodes(seenSince since: Double) async throws -> [NodeRecord]
}

/// A committed change of one host, announced to every edge (LISTEN/NOTIFY).
public struct StoreChange: Sendable, Equatable {
    public enum Kind: String, Sendable {
        /// An origin fetch was recorded (new version, confirmation or failure).
        case fetched
        case purgeHard = "purge-hard"
        case purgeSoft = "purge-soft"
        /// Changes were lost to this edge (it was away longer than the change log is kept, or
        /// it fell too far behind): anything it holds may be outdated (`host` is empty).
        case resync
    }
    public let id: Int64
    public let host: String
    public let kind: Kind
    /// The edge that made it.
    public let node: String

    public init(id: Int64, host: String, kind: Kind, node: String) {
        self.id = id
        self.host = host
        self.kind = kind
        self.node = node
    }
}

public enum FetchClaim: Sendable, Equatable {
    /// This edge fetches; the others wait for its change.
    case claimed
    /// Another edge is fetching the host now.
    case busy
    /// The host was fetched since the caller looked: read it again instead of fetching.
    case done
}

/// One edge of a shared store (`/admin/v1/nodes`).
public struct NodeRecord: Sendable, Equatable {
    public let node: String
    public let startedAt: Double
    public let lastSeenAt: Double
    public let version: String

    public init(node: String, startedAt: Double, lastSeenAt: Double, version: String) {
        self.node = node
        self.startedAt = startedAt
        self.lastSeenAt = lastSeenAt
        self.version = version
    }
}
