import AASAEngine
import CachePolicy
import Foundation
import EdgeModel
import OriginFetcher
import SnapshotStore

/// What `aasa-edge probe` watches and for how long.
public struct ProbeConfiguration: Sendable {
    public static let appleCDNTemplate = "https://app-site-association.cdn-apple.com/a/v1/{host}"

    public var host: OriginHost
    /// The CDN URL with `{host}` already replaced.
    public var cdnURL: String
    public var interval: Double
    public var duration: Double
    public var untilConverged: Bool
    /// Timeout of each CDN request.
    public var cdnTimeout: Double

    public init(host: OriginHost, cdnTemplate: String = appleCDNTemplate, interval: Double = 60, duration: Double = 3600,
                untilConverged: Bool = false, cdnTimeout: Double = 10) {
        self.host = host
        cdnURL = cdnTemplate.replacingOccurrences(of: "{host}", with: host.description)
        self.interval = interval
        self.duration = duration
        self.untilConverged = untilConverged
        self.cdnTimeout = cdnTimeout
    }
}

/// The outcome of a probe run.
public struct ProbeReport: Sendable {
    public let run: Int64
    public let startedAt: Double
    public let records: [ProbeRecord]
    public let changes: [ProbeChange]

    public func json(_ configuration: ProbeConfiguration) -> JSONValue {
        ProbeAnalysis.json(host: configuration.host.description, cdnURL: configuration.cdnURL, observations: records.count, changes: changes)
    }
}

/// Watches an origin (through the edge's fetcher, with its rules) and a CDN (a plain GET) side by
/// side, records every observation in the store, and measures how long the CDN takes to serve
/// each origin change.
public final class Probe: Sendable {
    let configuration: ProbeConfiguration
    let fetcher: OriginFetcher
    let store: SnapshotStore
    let clock: any WallClock
    private let stopLock = NSLock()
    nonisolated(unsafe) private var stopFlag = false

    public init(configuration: ProbeConfiguration, fetcher: OriginFetcher, store: SnapshotStore, clock: any WallClock = SystemClock()) {
        self.configuration = configuration
        self.fetcher = fetcher
        self.store = store
        self.clock = clock
    }

    /// Ends the run after the observation in progress (e.g. on SIGINT).
    public func stop() { stopLock.withLock { stopFlag = true } }
    private var stopRequested: Bool { stopLock.withLock { stopFlag } }

    /// Observes every `interval` seconds until `duration` has passed, the CDN has converged (when
    /// asked), or `stop()`. `onTick` receives each pair of observations as it is recorded.
    public func run(onTick: @Sendable (_ origin: ProbeRecord, _ cdn: ProbeRecord, _ changes: [ProbeChange]) -> Void) async throws -> ProbeReport {
        let start = clock.now()
        let run = try store.startProbeRun(host: configuration.host.description, cdnURL: configuration.cdnURL,
                                          interval: configuration.interval, at: start)
        var records: [ProbeRecord] = []
        var changes: [ProbeChange] = []
        var tick = 0
        while true {
            async let originResult = fetcher.fetch(configuration.host)
            async let cdnResult = fetcher.observe(configuration.cdnURL, timeout: configuration.cdnTimeout,
                                                  headers: ["User-Agent: aasa-edge-probe/1"])
            let origin = Self.record(await originResult)
            let cdn = Self.record(await cdnResult)
            try store.recordProbeObservation(run: run, origin)
            try store.recordProbeObservation(run: run, cdn)
            records.append(origin)
            records.append(cdn)
            changes = ProbeAnalysis.changes(records)
            onTick(origin, cdn, changes)

            if configuration.untilConverged && ProbeAnalysis.converged(changes) { break }
            if stopRequested { break }
            tick += 1
            let next = start + Double(tick) * configuration.interval
            if next - start > configuration.duration { break }
            // Sleep in short steps so that stop() is honoured promptly.
            while clock.now() < next, !stopRequested {
                try? await Task.sleep(nanoseconds: UInt64(min(0.2, max(0.001, next - clock.now())) * 1e9))
            }
            if stopRequested { break }
        }
        return ProbeReport(run: run, startedAt: start, records: records, changes: changes)
    }

    static func canonicalSha256(_ body: [UInt8]) -> String? {
        guard case .object(let object)? = try? JSONReader.parse(String(decoding: body, as: UTF8.self)) else { return nil }
        return SHA256.hex(Array(JSONWriter.string(.object(object), sortedKeys: true).utf8))
    }

    static func record(_ result: FetchResult) -> ProbeRecord {
        let fetched = result.isUsable
        return ProbeRecord(
            at: result.startedAt, source: "origin", status: result.status, sha256: result.sha256,
            canonicalSha256: fetched ? canonicalSha256(result.body) : nil, age: nil, cacheControl: result.cacheControl, xCache: nil,
            failureReason: result.failure?.reason, failureDetails: result.failure?.detailsJSON, error: nil,
            durationMs: result.timings.total * 1000)
    }

    static func record(_ observation: HTTPObservation) -> ProbeRecord {
        let headers = observation.headers
        return ProbeRecord(
            at: observation.startedAt, source: "cdn", status: observation.status, sha256: observation.sha256,
            canonicalSha256: observation.status == 200 ? canonicalSha256(observation.body) : nil,
            age: headers["age"].flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }, cacheControl: headers["cache-control"],
            xCache: headers["x-cache"], failureReason: headers["apple-failure-reason"], failureDetails: headers["apple-failure-details"],
            error: observation.error, durationMs: observation.durationMs)
    }
}
