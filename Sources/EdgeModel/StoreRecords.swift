import AASAEngine

/// The records the store keeps and gives back, shared by the store, the edge and its views.

/// A stored version of a host's AASA file: the exact origin bytes and what was known of them.
public struct StoredSnapshot: Sendable, Equatable {
    public let host: String
    public let version: Int
    public let sha256: String
    public let body: [UInt8]
    public let etag: String?
    public let lastModified: String?
    public let contentType: String?
    public let cacheControl: String?
    public let firstFetchedAt: Double
    public let lastConfirmedAt: Double
    public let valid: Bool
    /// The validator's diagnostics as JSON text (an array).
    public let diagnostics: String
    /// Canonical app IDs the file names (any service).
    public let appIDs: [String]

    public init(host: String, version: Int, sha256: String, body: [UInt8], etag: String?, lastModified: String?, contentType: String?,
                cacheControl: String?, firstFetchedAt: Double, lastConfirmedAt: Double, valid: Bool, diagnostics: String, appIDs: [String]) {
        self.host = host
        self.version = version
        self.sha256 = sha256
        self.body = body
        self.etag = etag
        self.lastModified = lastModified
        self.contentType = contentType
        self.cacheControl = cacheControl
        self.firstFetchedAt = firstFetchedAt
        self.lastConfirmedAt = lastConfirmedAt
        self.valid = valid
        self.diagnostics = diagnostics
        self.appIDs = appIDs
    }
}

public struct StoredFailure: Sendable, Equatable {
    public let reason: String
    /// One-line JSON object.
    public let details: String
    public let at: Double
    /// The parent edge's `X-Cache` and `Via` when the failure came through one.
    public let upstream: UpstreamHeaders?

    public init(reason: String, details: String, at: Double, upstream: UpstreamHeaders? = nil) {
        self.reason = reason
        self.details = details
        self.at = at
        self.upstream = upstream
    }
}

/// A host's cache state as stored.
public struct StoredHost: Sendable, Equatable {
    public let name: String
    public let currentVersion: Int?
    /// When the current copy was last fetched or confirmed by the origin.
    public let confirmedAt: Double?
    /// The last fetch's failure, when the last fetch failed.
    public let failure: StoredFailure?
    /// `none`, `soft` or `hard`.
    public let purge: String
    /// App IDs of the current snapshot.
    public let appIDs: [String]
    /// The parent edge's `X-Cache` and `Via` that came with the current copy (tiers).
    public let upstream: UpstreamHeaders?

    public init(name: String, currentVersion: Int?, confirmedAt: Double?, failure: StoredFailure?, purge: String, appIDs: [String],
                upstream: UpstreamHeaders? = nil) {
        self.upstream = upstream
        self.name = name
        self.currentVersion = currentVersion
        self.confirmedAt = confirmedAt
        self.failure = failure
        self.purge = purge
        self.appIDs = appIDs
    }
}

/// What a fetch did to the store.
public struct RecordedFetch: Sendable, Equatable {
    public enum Change: String, Sendable {
        case updated, unchanged, failed
    }
    public let change: Change
    public let version: Int?
    public let previousVersion: Int?

    public init(change: Change, version: Int?, previousVersion: Int?) {
        self.change = change
        self.version = version
        self.previousVersion = previousVersion
    }
}

/// A stored version, without its body.
public struct SnapshotSummary: Sendable, Equatable {
    public let version: Int
    public let sha256: String
    public let size: Int
    public let firstFetchedAt: Double
    public let lastConfirmedAt: Double
    public let valid: Bool

    public init(version: Int, sha256: String, size: Int, firstFetchedAt: Double, lastConfirmedAt: Double, valid: Bool) {
        self.version = version
        self.sha256 = sha256
        self.size = size
        self.firstFetchedAt = firstFetchedAt
        self.lastConfirmedAt = lastConfirmedAt
        self.valid = valid
    }
}

/// One entry of the origin fetch log.
public struct LoggedFetch: Sendable, Equatable {
    public let at: Double
    /// `updated`, `unchanged` or `failed`.
    public let outcome: String
    public let status: Int?
    public let reason: String?
    public let details: String?
    public let durationMs: Double
    public let version: Int?
    /// What started it: `request`, `refetch`, `release`, `background`.
    public let trigger: String

    public init(at: Double, outcome: String, status: Int?, reason: String?, details: String?, durationMs: Double, version: Int?, trigger: String) {
        self.at = at
        self.outcome = outcome
        self.status = status
        self.reason = reason
        self.details = details
        self.durationMs = durationMs
        self.version = version
        self.trigger = trigger
    }
}

/// A copy served to a client (the propagation ledger's raw material).
public struct ServedEvent: Sendable, Equatable {
    public let host: String
    public let version: Int
    public let at: Double
    public let client: String

    public init(host: String, version: Int, at: Double, client: String) {
        self.host = host
        self.version = version
        self.at = at
        self.client = client
    }
}

/// Metadata of an origin fetch, for the fetch log.
public struct FetchRecord: Sendable {
    public let at: Double
    public let status: Int?
    public let durationMs: Double
    public let trigger: String
    /// TTL metadata stored with the host: until when the copy is fresh (after a success) and
    /// until when a failure is cached (after a failure), under the TTLs of the edge that fetched.
    public let expiresAt: Double?
    public let failureUntil: Double?
    /// When the answer was current at the origin: `at`, less the parent's `Age` behind a parent
    /// edge. The host's confirmation (or failure) time, from which TTLs count.
    public let confirmedAt: Double
    /// The parent edge's `X-Cache` and `Via`, stored with the copy or failure.
    public let upstream: UpstreamHeaders?

    public init(at: Double, status: Int?, durationMs: Double, trigger: String, expiresAt: Double? = nil, failureUntil: Double? = nil,
                confirmedAt: Double? = nil, upstream: UpstreamHeaders? = nil) {
        self.confirmedAt = confirmedAt ?? at
        self.upstream = upstream
        self.at = at
        self.status = status
        self.durationMs = durationMs
        self.trigger = trigger
        self.expiresAt = expiresAt
        self.failureUntil = failureUntil
    }
}

/// A probe run as stored: what it watched, from when, and how it ended.
public struct ProbeRun: Sendable, Equatable {
    public let id: Int64
    public let host: String
    public let cdnURL: String
    public let interval: Double
    public let startedAt: Double
    /// nil while it runs (or when its process ended without saying so).
    public let endedAt: Double?
    /// `running`, `converged`, `finished` (its duration passed), `stopped` or `failed`.
    public let state: String
    /// The time of its last observation, if any.
    public let lastObservedAt: Double?

    public init(id: Int64, host: String, cdnURL: String, interval: Double, startedAt: Double, endedAt: Double?, state: String,
                lastObservedAt: Double?) {
        self.id = id
        self.host = host
        self.cdnURL = cdnURL
        self.interval = interval
        self.startedAt = startedAt
        self.endedAt = endedAt
        self.state = state
        self.lastObservedAt = lastObservedAt
    }
}

/// One observation of a probe run: the origin or the CDN at one moment.
public struct ProbeRecord: Sendable, Equatable {
    public let at: Double
    /// `origin` or `cdn`.
    public let source: String
    public let status: Int?
    public let sha256: String?
    /// SHA-256 of the body's canonical JSON (sorted keys, no whitespace), in case a CDN re-serialises.
    public let canonicalSha256: String?
    public let age: Int?
    public let cacheControl: String?
    public let xCache: String?
    public let failureReason: String?
    public let failureDetails: String?
    /// A transport problem (no response), or the origin failure's description.
    public let error: String?
    public let durationMs: Double

    public init(at: Double, source: String, status: Int?, sha256: String?, canonicalSha256: String?, age: Int?, cacheControl: String?,
                xCache: String?, failureReason: String?, failureDetails: String?, error: String?, durationMs: Double) {
        self.at = at
        self.source = source
        self.status = status
        self.sha256 = sha256
        self.canonicalSha256 = canonicalSha256
        self.age = age
        self.cacheControl = cacheControl
        self.xCache = xCache
        self.failureReason = failureReason
        self.failureDetails = failureDetails
        self.error = error
        self.durationMs = durationMs
    }
}

/// Everything a store holds about one host, for `store copy`: host row, versions with their
/// bytes, fetch log (oldest first) and ledger.
public struct HostCopy: Sendable {
    public struct LedgerClient: Sendable, Equatable {
        public let version: Int
        public let client: String
        public let firstAt: Double
        public let lastAt: Double
        public init(version: Int, client: String, firstAt: Double, lastAt: Double) {
            self.version = version
            self.client = client
            self.firstAt = firstAt
            self.lastAt = lastAt
        }
    }
    public struct LedgerOthers: Sendable, Equatable {
        public let version: Int
        public let clients: Int
        public let lastAt: Double
        public init(version: Int, clients: Int, lastAt: Double) {
            self.version = version
            self.clients = clients
            self.lastAt = lastAt
        }
    }
    public var host: StoredHost
    public var createdAt: Double
    public var expiresAt: Double?
    public var failureUntil: Double?
    public var purgedAt: Double?
    public var snapshots: [StoredSnapshot]
    public var fetches: [LoggedFetch]
    public var clients: [LedgerClient]
    public var others: [LedgerOthers]

    public init(host: StoredHost, createdAt: Double, expiresAt: Double?, failureUntil: Double?, purgedAt: Double?,
                snapshots: [StoredSnapshot], fetches: [LoggedFetch], clients: [LedgerClient], others: [LedgerOthers]) {
        self.host = host
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.failureUntil = failureUntil
        self.purgedAt = purgedAt
        self.snapshots = snapshots
        self.fetches = fetches
        self.clients = clients
        self.others = others
    }
}

/// One probe run with its observations, for `store copy`.
public struct ProbeRunCopy: Sendable {
    public let host: String
    public let cdnURL: String
    public let interval: Double
    public let startedAt: Double
    /// How the run ended (`ProbeRun.state`, `endedAt`): a copy keeps it.
    public let endedAt: Double?
    public let state: String
    public let observations: [ProbeRecord]

    public init(host: String, cdnURL: String, interval: Double, startedAt: Double, endedAt: Double?, state: String,
                observations: [ProbeRecord]) {
        self.host = host
        self.cdnURL = cdnURL
        self.interval = interval
        self.startedAt = startedAt
        self.endedAt = endedAt
        self.state = state
        self.observations = observations
    }
}

/// A list of strings as the stores keep it in one text column (a JSON array, e.g. a snapshot's
/// app IDs).
public enum StoredList {
    public static func encode(_ list: [String]) -> String {
        JSONWriter.string(.array(list.map { .string($0) }))
    }

    /// The strings of a stored array; empty for anything else.
    public static func decode(_ text: String?) -> [String] {
        guard let text, let elements = (try? JSONReader.parse(text))?.arrayValue else { return [] }
        return elements.compactMap(\.stringValue)
    }
}
