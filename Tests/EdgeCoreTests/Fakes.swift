import EdgeModel
import AASAEngine
import CachePolicy
import EdgeCore
import Foundation
import OriginFetcher
import SnapshotStore

/// A wall clock the test moves by hand: TTLs are tested without sleeping.
final class TestClock: WallClock, @unchecked Sendable {
    private let lock = NSLock()
    private var current: Double

    init(_ start: Double = 1_700_000_000) { current = start }

    func now() -> Double { lock.withLock { current } }
    func advance(_ seconds: Double) { lock.withLock { current += seconds } }
}

/// `SnapshotStoring` in memory, with the SQLite store's rules: versions content-addressed per
/// host, a failure never replaces the current version, a soft purge never undoes a hard one, a
/// purge asked for since a revalidation began survives its 304.
actor InMemoryStore: SnapshotStoring {
    private struct Host {
        var current: Int?
        var confirmedAt: Double?
        var failure: StoredFailure?
        var purge = "none"
        var purgedAt: Double?
        var upstream: UpstreamHeaders?
    }

    private var hostTable: [String: Host] = [:]
    private var versionsByHost: [String: [StoredSnapshot]] = [:]
    private var log: [String: [LoggedFetch]] = [:]
    private var clients: [String: [String: ServedEvent]] = [:]  // host -> "version client" -> last event
    private var firstServed: [String: [String: Double]] = [:]
    private(set) var writes = 0

    func host(_ name: String) async throws -> (StoredHost, StoredSnapshot?)? {
        guard let host = hostTable[name] else { return nil }
        let snapshot = versionsByHost[name]?.first { $0.version == host.current }
        return (stored(name, host, snapshot), snapshot)
    }

    private func stored(_ name: String, _ host: Host, _ snapshot: StoredSnapshot?) -> StoredHost {
        StoredHost(name: name, currentVersion: host.current, confirmedAt: host.confirmedAt, failure: host.failure, purge: host.purge,
                   appIDs: snapshot?.appIDs ?? [], upstream: host.upstream)
    }

    func hosts() async throws -> [StoredHost] {
        hostTable.keys.sorted().map { name in
            let host = hostTable[name]!
            return stored(name, host, versionsByHost[name]?.first { $0.version == host.current })
        }
    }

    func hosts(after: String?, containing: String?, limit: Int) async throws -> [StoredHost] {
        Array(try await hosts().filter { host in
            (after.map { host.name > $0 } ?? true) && (containing.map { $0.isEmpty || host.name.contains($0) } ?? true)
        }.prefix(limit))
    }

    func recordSuccess(host name: String, body: [UInt8], sha256: String, etag: String?, lastModified: String?, contentType: String?,
                       cacheControl: String?, valid: Bool, diagnostics: String, appIDs: [String], fetch: FetchRecord) async throws -> RecordedFetch {
        writes += 1
        var host = hostTable[name] ?? Host()
        let previous = host.current
        var list = versionsByHost[name] ?? []
        let version: Int
        if let existing = list.firstIndex(where: { $0.sha256 == sha256 }) {
            version = list[existing].version
        } else {
            version = (list.map(\.version).max() ?? 0) + 1
            list.append(StoredSnapshot(host: name, version: version, sha256: sha256, body: body, etag: etag, lastModified: lastModified,
                                       contentType: contentType, cacheControl: cacheControl, firstFetchedAt: fetch.at,
                                       lastConfirmedAt: fetch.at, valid: valid, diagnostics: diagnostics, appIDs: appIDs))
        }
        versionsByHost[name] = list
        (host.current, host.confirmedAt, host.failure, host.purge, host.upstream) = (version, fetch.confirmedAt, nil, "none", fetch.upstream)
        hostTable[name] = host
        let change: RecordedFetch.Change = previous == version ? .unchanged : .updated
        append(name, fetch, change.rawValue, nil, nil, version)
        return RecordedFetch(change: change, version: version, previousVersion: previous)
    }

    func recordNotModified(host name: String, fetch: FetchRecord, startedAt: Double) async throws -> RecordedFetch {
        writes += 1
        var host = hostTable[name] ?? Host()
        host.confirmedAt = fetch.confirmedAt
        host.failure = nil
        if !(host.purgedAt.map { $0 > startedAt } ?? false) { host.purge = "none" }
        hostTable[name] = host
        append(name, fetch, "unchanged", nil, nil, host.current)
        return RecordedFetch(change: .unchanged, version: host.current, previousVersion: host.current)
    }

    func recordFailure(host name: String, reason: String, details: String, fetch: FetchRecord) async throws -> RecordedFetch {
        writes += 1
        var host = hostTable[name] ?? Host()
        host.failure = StoredFailure(reason: reason, details: details, at: fetch.confirmedAt, upstream: fetch.upstream)
        hostTable[name] = host
        append(name, fetch, "failed", reason, details, host.current)
        return RecordedFetch(change: .failed, version: host.current, previousVersion: host.current)
    }

    private func append(_ name: String, _ fetch: FetchRecord, _ outcome: String, _ reason: String?, _ details: String?, _ version: Int?) {
        log[name, default: []].append(LoggedFetch(at: fetch.at, outcome: outcome, status: fetch.status, reason: reason, details: details,
                                                  durationMs: fetch.durationMs, version: version, trigger: fetch.trigger))
    }

    func purge(host name: String, hard: Bool, at time: Double) async throws -> Bool {
        guard var host = hostTable[name] else { return false }
        host.purge = host.purge == "hard" ? "hard" : (hard ? "hard" : "soft")
        host.purgedAt = time
        hostTable[name] = host
        return true
    }

    func recordServed(_ events: [ServedEvent], maxClients: Int) async throws {
        for event in events {
            clients[event.host, default: [:]]["\(event.version) \(event.client)"] = event
            firstServed[event.host, default: [:]]["\(event.version) \(event.client)", default: event.at] = min(
                firstServed[event.host]?["\(event.version) \(event.client)"] ?? event.at, event.at)
        }
    }

    func pruneServed(before time: Double) async throws -> Int { 0 }

    func served(host name: String) async throws -> [ServedEvent] {
        (clients[name] ?? [:]).flatMap { key, last -> [ServedEvent] in
            let first = firstServed[name]?[key] ?? last.at
            return first < last.at ? [ServedEvent(host: name, version: last.version, at: first, client: last.client), last] : [last]
        }.sorted { $0.at < $1.at }
    }

    func servedOthers(host name: String) async throws -> [Int: Int] { [:] }

    func fetches(host name: String, limit: Int) async throws -> [LoggedFetch] { Array((log[name] ?? []).reversed().prefix(limit)) }

    func versions(host name: String) async throws -> [Int] { (versionsByHost[name] ?? []).map(\.version).sorted() }

    func snapshots(host name: String) async throws -> [SnapshotSummary] {
        (versionsByHost[name] ?? []).sorted { $0.version > $1.version }.map {
            SnapshotSummary(version: $0.version, sha256: $0.sha256, size: $0.body.count, firstFetchedAt: $0.firstFetchedAt,
                            lastConfirmedAt: $0.lastConfirmedAt, valid: $0.valid)
        }
    }

    func snapshot(host name: String, version: Int) async throws -> StoredSnapshot? { versionsByHost[name]?.first { $0.version == version } }

    func versionCount() async throws -> Int { versionsByHost.values.map(\.count).reduce(0, +) }

    func checkWritable(at: Double) async throws {}

    private var probeRuns: [ProbeRun] = []
    private var observations: [Int64: [ProbeRecord]] = [:]

    func startProbeRun(host: String, cdnURL: String, interval: Double, at: Double) async throws -> Int64 {
        let id = Int64(probeRuns.count + 1)
        probeRuns.append(ProbeRun(id: id, host: host, cdnURL: cdnURL, interval: interval, startedAt: at, endedAt: nil, state: "running",
                                  lastObservedAt: nil))
        return id
    }

    func recordProbeObservation(run: Int64, _ observation: ProbeRecord) async throws { observations[run, default: []].append(observation) }

    func endProbeRun(_ run: Int64, at: Double, state: String) async throws {
        guard let index = probeRuns.firstIndex(where: { $0.id == run }) else { return }
        let r = probeRuns[index]
        probeRuns[index] = ProbeRun(id: r.id, host: r.host, cdnURL: r.cdnURL, interval: r.interval, startedAt: r.startedAt, endedAt: at,
                                    state: state, lastObservedAt: observations[run]?.last?.at)
    }

    func probeRunList(limit: Int) async throws -> [ProbeRun] { Array(probeRuns.reversed().prefix(limit)) }

    func probeRun(_ id: Int64) async throws -> (ProbeRun, [ProbeRecord])? {
        probeRuns.first { $0.id == id }.map { ($0, observations[id] ?? []) }
    }
}

/// An origin whose answers the test sets per host; counts fetches; a fetch can be held open
/// until the test releases it (to line up concurrent requests or a purge mid-fetch).
final class FakeOrigin: OriginFetching, @unchecked Sendable {
    enum Answer: Sendable {
        case body(String, etag: String?)
        case status(Int)
        /// What a parent edge answers: a copy with its `Age`, `X-Cache` and `Via`.
        case parentCopy(String, age: Double, xCache: String, via: String)
    }

    let timeout: Double
    private let lock = NSLock()
    private var answers: [String: Answer] = [:]
    private var counts: [String: Int] = [:]
    private var lastValidators: [String: Validators?] = [:]
    private var gate: CheckedContinuation<Void, Never>?
    private var holding = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    init(timeout: Double = 5) { self.timeout = timeout }

    func set(_ host: String, _ answer: Answer) { lock.withLock { answers[host] = answer } }
    func count(_ host: String) -> Int { lock.withLock { counts[host] ?? 0 } }
    func validators(_ host: String) -> Validators? { lock.withLock { lastValidators[host] ?? nil } }

    /// Fetches from now on wait until `release()`.
    func hold() { lock.withLock { holding = true } }
    func release() {
        let resumed = lock.withLock { () -> [CheckedContinuation<Void, Never>] in
            holding = false
            defer { waiting = [] }
            return waiting
        }
        resumed.forEach { $0.resume() }
    }
    var held: Int { lock.withLock { waiting.count } }

    func fetch(_ host: OriginHost, validators: Validators?, via: String) async -> FetchResult {
        let name = host.description
        let answer = lock.withLock { () -> Answer? in
            counts[name, default: 0] += 1
            lastValidators[name] = validators
            return answers[name]
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let wait = lock.withLock { () -> Bool in
                if holding { waiting.append(continuation) }
                return holding
            }
            if !wait { continuation.resume() }
        }
        let url = host.originURL
        switch answer {
        case .body(let text, let etag)?:
            if let etag, validators?.etag == etag {
                return FetchResult(host: host, url: url, outcome: .notModified, status: 304, statusLine: "304 Not Modified", etag: etag)
            }
            let body = Array(text.utf8)
            return FetchResult(host: host, url: url, outcome: .fetched, status: 200, statusLine: "200 OK", etag: etag, body: body,
                               sha256: SHA256.hex(body))
        case .parentCopy(let text, let age, let xCache, let via)?:
            let body = Array(text.utf8)
            return FetchResult(host: host, url: url, outcome: .fetched, status: 200, statusLine: "200 OK", body: body, sha256: SHA256.hex(body),
                               upstream: UpstreamHeaders(xCache: xCache, via: via), upstreamAge: age)
        case .status(let code)?:
            let line = "\(code) Error"
            return FetchResult(host: host, url: url, outcome: .failed(OriginFailure(code: .badHTTPResponse, statusLine: line,
                                                                                  details: JSONObject([JSONMember("status", .string(line))]))),
                               status: code, statusLine: line)
        case nil:
            let failure = OriginFailure(code: .connectionFailed, details: JSONObject([JSONMember("cause", "refused")]))
            return FetchResult(host: host, url: url, outcome: .failed(failure), status: nil, statusLine: nil)
        }
    }
}
