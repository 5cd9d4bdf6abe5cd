import AASAEngine
import EdgeModel

/// The admin API's JSON bodies (docs/openapi.yaml) as `Encodable` types, built from the edge's
/// records. `JSONValueEncoder` writes their members in the order declared here and every optional
/// member, `null` when absent; the `history` command prints the same shapes.
public enum AdminJSON {
    /// A host's last failure: the 404 form's reason and details, and when.
    public struct Failure: Encodable, Sendable {
        public let reason: String
        /// The failure form's details object (`{}` when it does not read as one).
        public let details: JSONValue
        public let at: Timestamp

        public init(_ failure: FailureInfo) {
            reason = failure.reason
            details = (try? JSONReader.parse(failure.details)) ?? .object(JSONObject())
            at = Timestamp(failure.at)
        }
    }

    /// One host in `GET /domains`.
    public struct Domain: Encodable, Sendable {
        public let domain: String
        public let state: String
        public let serving: String
        public let version: Int?
        public let fetchedAt: Timestamp?
        public let expiresAt: Timestamp?
        public let lastFailure: Failure?

        public init(_ status: DomainStatus) {
            domain = status.domain
            state = status.state
            serving = status.serving
            version = status.version
            fetchedAt = Timestamp.of(status.fetchedAt)
            expiresAt = Timestamp.of(status.expiresAt)
            lastFailure = status.lastFailure.map(Failure.init)
        }
    }

    /// `GET /domains/{host}`: the list's fields, then the current file's app IDs and diagnostics.
    public struct DomainDetail: Encodable, Sendable {
        public let summary: Domain
        public let appIDs: [String]
        public let diagnostics: JSONValue

        public init(_ status: DomainStatus) {
            summary = Domain(status)
            appIDs = status.appIDs ?? []
            diagnostics = status.diagnostics.flatMap { try? JSONReader.parse($0) } ?? .array([])
        }

        private enum CodingKeys: String, CodingKey { case appIDs, diagnostics }

        public func encode(to encoder: any Encoder) throws {
            try summary.encode(to: encoder)
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(appIDs, forKey: .appIDs)
            try container.encode(diagnostics, forKey: .diagnostics)
        }
    }

    /// `GET /domains`: a page of hosts and the cursor of the next (`null` on the last).
    public struct DomainList: Encodable, Sendable {
        public let domains: [Domain]
        public let next: String?
        public init(domains: [Domain], next: String?) {
            self.domains = domains
            self.next = next
        }
    }

    /// `POST /domains/{host}/purge`.
    public struct Purge: Encodable, Sendable {
        public let domain: String
        /// `soft` or `hard`.
        public let purge: String
        public init(domain: String, soft: Bool) {
            self.domain = domain
            purge = soft ? "soft" : "hard"
        }
    }

    /// `POST /domains/{host}/refetch`, and each host of a release.
    public struct Refetch: Encodable, Sendable {
        public let domain: String
        public let outcome: String
        public let version: Int?
        public let previousVersion: Int?
        public let failure: Failure?
        public let durationMs: FixedPoint

        public init(_ result: RefetchResult) {
            domain = result.host.description
            outcome = result.outcome
            version = result.version
            previousVersion = result.previousVersion
            failure = result.failure.map(Failure.init)
            durationMs = FixedPoint(result.durationMs, decimals: 1)
        }
    }

    /// `POST /releases`: each host refetched, the counts by outcome, the hosts left out.
    public struct Release: Encodable, Sendable {
        public let results: [Refetch]
        public let updated: Int
        public let unchanged: Int
        public let failed: Int
        public let skipped: [String]

        public init(results: [RefetchResult], skipped: [String]) {
            self.results = results.map(Refetch.init)
            updated = results.count(where: { $0.outcome == "updated" })
            unchanged = results.count(where: { $0.outcome == "unchanged" })
            failed = results.count(where: { $0.outcome == "failed" })
            self.skipped = skipped
        }
    }

    /// `GET /nodes`.
    public struct Nodes: Encodable, Sendable {
        public struct Node: Encodable, Sendable {
            public let node: String
            public let startedAt: Timestamp
            public let lastSeenAt: Timestamp
            public let version: String
        }
        public let nodes: [Node]

        public init(_ nodes: [NodeStatus]) {
            self.nodes = nodes.map { Node(node: $0.node, startedAt: Timestamp($0.startedAt), lastSeenAt: Timestamp($0.lastSeenAt), version: $0.version) }
        }
    }

    /// `GET /domains/{host}/snapshots`: the stored versions, newest first.
    public struct Snapshots: Encodable, Sendable {
        public struct Snapshot: Encodable, Sendable {
            public let version: Int
            public let sha256: String
            public let size: Int
            public let firstFetchedAt: Timestamp
            public let lastConfirmedAt: Timestamp
            public let valid: Bool
        }
        public let snapshots: [Snapshot]

        public init(_ summaries: [SnapshotSummary]) {
            snapshots = summaries.map {
                Snapshot(version: $0.version, sha256: $0.sha256, size: $0.size, firstFetchedAt: Timestamp($0.firstFetchedAt),
                         lastConfirmedAt: Timestamp($0.lastConfirmedAt), valid: $0.valid)
            }
        }
    }

    /// `GET /domains/{host}/fetches`: the origin fetch log, newest first.
    public struct Fetches: Encodable, Sendable {
        public struct Fetch: Encodable, Sendable {
            public let at: Timestamp
            public let outcome: String
            public let status: Int?
            public let reason: String?
            public let durationMs: FixedPoint
            public let version: Int?
            public let trigger: String
        }
        public let fetches: [Fetch]

        public init(_ log: [LoggedFetch]) {
            fetches = log.map {
                Fetch(at: Timestamp($0.at), outcome: $0.outcome, status: $0.status, reason: $0.reason,
                      durationMs: FixedPoint($0.durationMs, decimals: 1), version: $0.version, trigger: $0.trigger)
            }
        }
    }

    /// `GET /readyz` on an edge with a shared store.
    public struct StoreHealth: Encodable, Sendable {
        /// `ok` or `unavailable`.
        public let store: String
        public init(available: Bool) { store = available ? "ok" : "unavailable" }
    }

    /// Every error: one line saying what was wrong.
    public struct Problem: Encodable, Sendable {
        public let error: String
        public init(_ error: String) { self.error = error }
    }
}
