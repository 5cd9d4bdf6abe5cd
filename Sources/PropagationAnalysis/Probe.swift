import AASAEngine
import CachePolicy
import Foundation
import EdgeModel
import OriginFetcher

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
    /// The run ends after this many observations of each side, whatever `duration` says (nil: no such end).
    public var maximumTicks: Int?

    public init(host: OriginHost, cdnTemplate: String = appleCDNTemplate, interval: Double = 60, duration: Double = 3600,
                untilConverged: Bool = false, cdnTimeout: Double = 10, maximumTicks: Int? = nil) {
        self.maximumTicks = maximumTicks
        self.host = host
        cdnURL = cdnTemplate.replacingOccurrences(of: "{host}", with: host.description)
        self.interval = interval
        self.duration = duration
        self.untilConverged = untilConverged
        self.cdnTimeout = cdnTimeout
    }
}

/// A flag one thread sets and others read.
final class StopFlag: Sendable {
    private let lock = NSLock()
    nonisolated(unsafe) private var value = false
    func set() { lock.withLock { value = true } }
    var isSet: Bool { lock.withLock { value } }
}

/// The outcome of a probe run.
public struct ProbeReport: Sendable {
    public let run: Int64
    public let startedAt: Double
    public let records: [ProbeRecord]
    public let changes: [ProbeChange]

    public func summary(_ configuration: ProbeConfiguration) -> ProbeAnalysis.Report {
        ProbeAnalysis.Report(host: configuration.host.description, cdnURL: configuration.cdnURL, observations: records.count, changes: changes)
    }
}

/// Watches an origin (through the edge's fetcher, with its rules) and a CDN (a plain GET) side by
/// side, records every observation in the store, and measures how long the CDN takes to serve
/// each origin change. `aasa-edge probe` runs one; the server runs several (`ProbeRunner`).
public final class Probe: Sendable {
    public let configuration: ProbeConfiguration
    let fetcher: OriginFetcher
    let store: any SnapshotStoring
    let clock: any WallClock
    private let stopFlag = StopFlag()

    public init(configuration: ProbeConfiguration, fetcher: OriginFetcher, store: any SnapshotStoring, clock: any WallClock = SystemClock()) {
        self.configuration = configuration
        self.fetcher = fetcher
        self.store = store
        self.clock = clock
    }

    /// Ends the run after the observation in progress (e.g. on SIGINT, or `DELETE` of the run).
    public func stop() { stopFlag.set() }
    private var stopRequested: Bool { stopFlag.isSet }

    /// Records the run in the store (`running`) and returns its id; `observe(run:)` then runs it.
    public func begin() async throws -> (run: Int64, startedAt: Double) {
        let start = clock.now()
        let run = try await store.startProbeRun(host: configuration.host.description, cdnURL: configuration.cdnURL,
                                                interval: configuration.interval, at: start)
        return (run, start)
    }

    /// Begins and observes: the whole run.
    public func run(onTick: @Sendable (_ origin: ProbeRecord, _ cdn: ProbeRecord, _ changes: [ProbeChange]) -> Void) async throws -> ProbeReport {
        let (run, start) = try await begin()
        return try await observe(run: run, startedAt: start, onTick: onTick)
    }

    /// Observes every `interval` seconds until `duration` has passed, the CDN has converged (when
    /// asked), or `stop()`; then records how the run ended (`converged`, `finished`, `stopped`, or
    /// `failed` when the store refused an observation). `onTick` receives each pair of
    /// observations as it is recorded.
    public func observe(run: Int64, startedAt start: Double,
                        onTick: @Sendable (_ origin: ProbeRecord, _ cdn: ProbeRecord, _ changes: [ProbeChange]) -> Void = { _, _, _ in })
        async throws -> ProbeReport {
        var records: [ProbeRecord] = []
        var changes: [ProbeChange] = []
        var tick = 0
        var state = "finished"
        do {
            while true {
                async let originResult = fetcher.fetch(configuration.host)
                async let cdnResult = fetcher.observe(configuration.cdnURL, timeout: configuration.cdnTimeout,
                                                      headers: ["User-Agent: aasa-edge-probe/1"])
                let origin = Self.record(await originResult)
                let cdn = Self.record(await cdnResult)
                try await store.recordProbeObservation(run: run, origin)
                try await store.recordProbeObservation(run: run, cdn)
                records.append(origin)
                records.append(cdn)
                changes = ProbeAnalysis.changes(records)
                onTick(origin, cdn, changes)

                if configuration.untilConverged && ProbeAnalysis.converged(changes) {
                    state = "converged"
                    break
                }
                if stopRequested { break }
                tick += 1
                if let maximum = configuration.maximumTicks, tick >= maximum { break }
                let next = start + Double(tick) * configuration.interval
                if next - start > configuration.duration { break }
                // Sleep in short steps so that stop() is honoured promptly.
                while clock.now() < next, !stopRequested {
                    try? await Task.sleep(nanoseconds: UInt64(min(0.2, max(0.001, next - clock.now())) * 1e9))
                }
                if stopRequested { break }
            }
        } catch {
            try? await store.endProbeRun(run, at: clock.now(), state: "failed")
            throw error
        }
        if stopRequested, state != "converged" { state = "stopped" }
        try await store.endProbeRun(run, at: clock.now(), state: state)
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
