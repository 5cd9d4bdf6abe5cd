import CachePolicy
import Metrics
import EdgeModel
import OriginFetcher

/// The edge's metrics, through swift-metrics (a Prometheus factory in `serve`). Every metric is
/// created once, so counting on the hot path is one increment, and label sets are bounded (no
/// per-host labels). Request outcomes come from the same enum as `X-Cache` and `Cache-Status`.
public final class EdgeMetrics: Sendable {
    private let requests: [Counter]
    private let fetchResults: [String: Counter]
    private let failures: [String: Counter]
    private let fetchDuration: Metrics.Timer
    private let hostsCached: Gauge
    private let versionsStored: Gauge
    private let coalescedWaiters: Counter
    private let purges: [String: Counter]
    private let refetches: Counter
    private let releases: Counter
    private let storeWriteErrors: Counter
    private let connectionsRejected: Counter
    private let memoryEntries: Gauge
    private let memoryPrebuilt: Gauge
    private let unavailable: [String: Counter]

    public init() {
        requests = CacheOutcome.allCases.map { Counter(label: "aasa_edge_requests_total", dimensions: [("outcome", $0.rawValue)]) }
        fetchResults = Dictionary(uniqueKeysWithValues: ["updated", "unchanged", "failed"].map {
            ($0, Counter(label: "aasa_edge_origin_fetches_total", dimensions: [("result", $0)]))
        })
        failures = Dictionary(uniqueKeysWithValues: FailureCode.allCases.map {
            ($0.rawValue, Counter(label: "aasa_edge_origin_failures_total", dimensions: [("reason", $0.rawValue)]))
        })
        fetchDuration = Metrics.Timer(label: "aasa_edge_origin_fetch_duration_seconds", preferredDisplayUnit: .seconds)
        hostsCached = Gauge(label: "aasa_edge_hosts_cached")
        versionsStored = Gauge(label: "aasa_edge_snapshot_versions_stored")
        coalescedWaiters = Counter(label: "aasa_edge_coalesced_waiters_total")
        purges = Dictionary(uniqueKeysWithValues: ["hard", "soft"].map { ($0, Counter(label: "aasa_edge_purges_total", dimensions: [("mode", $0)])) })
        refetches = Counter(label: "aasa_edge_refetches_total")
        releases = Counter(label: "aasa_edge_releases_total")
        storeWriteErrors = Counter(label: "aasa_edge_store_write_errors_total")
        connectionsRejected = Counter(label: "aasa_edge_connections_rejected_total")
        memoryEntries = Gauge(label: "aasa_edge_memory_bytes", dimensions: [("part", "entries")])
        memoryPrebuilt = Gauge(label: "aasa_edge_memory_bytes", dimensions: [("part", "prebuilt")])
        unavailable = Dictionary(uniqueKeysWithValues: LocalShortage.allCases.map {
            ($0.rawValue, Counter(label: "aasa_edge_local_shortages_total", dimensions: [("resource", $0.rawValue)]))
        })
    }

    public func request(_ outcome: CacheOutcome) {
        requests[CacheOutcome.allCases.firstIndex(of: outcome)!].increment()
    }

    func originFetch(change: String, failureReason: String?, durationMs: Double) {
        fetchResults[change]?.increment()
        if let reason = failureReason { failures[String(reason.prefix(11))]?.increment() }
        fetchDuration.recordNanoseconds(Int64(durationMs * 1_000_000))
    }

    func coalesced() { coalescedWaiters.increment() }
    func purge(soft: Bool) { purges[soft ? "soft" : "hard"]?.increment() }
    func refetch() { refetches.increment() }
    func release() { releases.increment() }
    func storeWriteError() { storeWriteErrors.increment() }
    /// A new client connection closed at once: `--max-connections` were open.
    public func connectionRejected() { connectionsRejected.increment() }
    /// A request answered 503 because something of the edge's own ran short.
    func shortage(_ resource: LocalShortage) { unavailable[resource.rawValue]?.increment() }

    /// What `--memory-cache-mb` covers, by part: host entries and prebuilt hit responses.
    public func memory(prebuilt: Int) { memoryPrebuilt.record(prebuilt) }
    func memory(entries: Int) { memoryEntries.record(entries) }

    func gauges(hosts: Int, versions: Int) {
        hostsCached.record(hosts)
        versionsStored.record(versions)
    }
}
