import AASAEngine
import EdgeModel

/// How one version of a host travelled: when the origin changed, when the edge first served it,
/// and how long each client took to receive it.
public struct VersionPropagation: Sendable, Equatable {
    public let version: Int
    /// The last successful fetch that still returned the previous version (nil for the first version).
    public let originLastSeenPrevious: Double?
    /// The first fetch that returned this version.
    public let originFirstSeen: Double
    public let firstServedAt: Double?
    /// When the edge last served the version this one replaced.
    public let lastServedPrevious: Double?
    /// Seconds from `originFirstSeen` until each client first received this version.
    public let clientDelays: [Double]
    /// Clients whose latest copy is a version older than this one.
    public let clientsBehind: [ClientPosition]
    /// Clients of this version no longer tracked one by one (`--max-tracked-clients`).
    public var others: Int = 0

    public struct ClientPosition: Sendable, Equatable {
        public let client: String
        public let version: Int
        public let lastServedAt: Double
    }
}

/// The propagation ledger: pure functions of the fetch log and the served events.
public enum Propagation {
    /// Per version, newest first. `fetches` and `served` in any order.
    public static func versions(fetches: [LoggedFetch], served: [ServedEvent], others: [Int: Int] = [:]) -> [VersionPropagation] {
        // Walk the successful fetches in time order and note when the origin's version changed.
        struct Transition {
            let version: Int
            let previous: Int?
            let at: Double
            let lastSeenPrevious: Double?
        }
        var transitions: [Transition] = []
        var current: Int?
        var lastSuccess: Double?
        for fetch in fetches.sorted(by: { $0.at < $1.at }) where fetch.outcome != "failed" {
            guard let version = fetch.version else { continue }
            if version != current, !transitions.contains(where: { $0.version == version }) {
                transitions.append(Transition(version: version, previous: current, at: fetch.at, lastSeenPrevious: current == nil ? nil : lastSuccess))
            }
            current = version
            lastSuccess = fetch.at
        }
        let order = Dictionary(uniqueKeysWithValues: transitions.enumerated().map { ($1.version, $0) })
        let events = served.sorted { $0.at < $1.at }
        var latestByClient: [String: ServedEvent] = [:]
        for event in events { latestByClient[event.client] = event }

        return transitions.reversed().map { t in
            var firstByClient: [String: Double] = [:]
            for event in events where event.version == t.version && firstByClient[event.client] == nil {
                firstByClient[event.client] = event.at
            }
            let rank = order[t.version] ?? 0
            let behind = latestByClient.values
                .filter { (order[$0.version] ?? -1) < rank }
                .sorted { $0.client < $1.client }
                .map { VersionPropagation.ClientPosition(client: $0.client, version: $0.version, lastServedAt: $0.at) }
            return VersionPropagation(
                version: t.version, originLastSeenPrevious: t.lastSeenPrevious, originFirstSeen: t.at,
                firstServedAt: events.first { $0.version == t.version }?.at,
                lastServedPrevious: t.previous.flatMap { previous in events.last { $0.version == previous }?.at },
                clientDelays: firstByClient.values.map { max(0, $0 - t.at) }.sorted(),
                clientsBehind: behind, others: others[t.version] ?? 0)
        }
    }

    /// Nearest-rank percentile of sorted values.
    public static func percentile(_ sorted: [Double], _ p: Double) -> Double? {
        guard !sorted.isEmpty else { return nil }
        let rank = Int((p / 100 * Double(sorted.count)).rounded(.up))
        return sorted[min(max(rank, 1), sorted.count) - 1]
    }

    /// `GET /admin/v1/domains/{host}/propagation`: each version's travel, oldest first.
    public struct Report: Encodable, Sendable {
        public struct Version: Encodable, Sendable {
            public let version: Int
            public let originLastSeenPrevious: Timestamp?
            public let originFirstSeen: Timestamp
            public let firstServedAt: Timestamp?
            public let lastServedPrevious: Timestamp?
            public let clients: Clients
            public let clientsBehind: [Behind]
        }
        /// Delays of the clients that received the version (nearest-rank percentiles, seconds).
        public struct Clients: Encodable, Sendable {
            public let count: Int
            public let p50Seconds: FixedPoint?
            public let p95Seconds: FixedPoint?
            public let maxSeconds: FixedPoint?
            public let others: Int
        }
        public struct Behind: Encodable, Sendable {
            public let client: String
            public let version: Int
            public let lastServedAt: Timestamp
        }
        public let domain: String
        public let versions: [Version]

        public init(domain: String, _ versions: [VersionPropagation]) {
            func seconds(_ s: Double?) -> FixedPoint? { s.map { FixedPoint($0, decimals: 3) } }
            self.domain = domain
            self.versions = versions.map { v in
                Version(version: v.version, originLastSeenPrevious: Timestamp.of(v.originLastSeenPrevious),
                        originFirstSeen: Timestamp(v.originFirstSeen), firstServedAt: Timestamp.of(v.firstServedAt),
                        lastServedPrevious: Timestamp.of(v.lastServedPrevious),
                        clients: Clients(count: v.clientDelays.count, p50Seconds: seconds(Propagation.percentile(v.clientDelays, 50)),
                                         p95Seconds: seconds(Propagation.percentile(v.clientDelays, 95)),
                                         maxSeconds: seconds(v.clientDelays.last), others: v.others),
                        clientsBehind: v.clientsBehind.map { Behind(client: $0.client, version: $0.version, lastServedAt: Timestamp($0.lastServedAt)) })
            }
        }
    }
}
