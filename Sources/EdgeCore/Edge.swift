import AASAEngine
import CachePolicy
import Foundation
import Logging
import EdgeModel
import PropagationAnalysis
import OriginFetcher
import SnapshotStore

public struct EdgeConfiguration: Sendable {
    public var cache: CacheConfiguration
    /// `--allow-domain` suffixes; empty admits every domain.
    public var allowDomains: [String]
    public var refetchConcurrency: Int
    /// `--memory-cache-mb`: everything the edge keeps per host in memory. Host entries (bodies,
    /// their strings, the entries themselves) get `entryBudgetBytes`, least recently used hosts
    /// leaving memory (never the store) to be read back when next asked for; the HTTP layer's
    /// prebuilt responses get `prebuiltBudgetBytes`.
    public var memoryBudgetBytes: Int
    /// The share of `--memory-cache-mb` for prebuilt hit responses (an eighth).
    public var prebuiltBudgetBytes: Int { memoryBudgetBytes / 8 }
    /// The share of `--memory-cache-mb` for host entries.
    public var entryBudgetBytes: Int { memoryBudgetBytes - prebuiltBudgetBytes }
    /// `--ledger-retention-days`, in seconds.
    public var ledgerRetention: Double
    /// `--origin-concurrency`: origin fetches in flight at once for client-triggered misses.
    public var originConcurrency: Int
    /// `--max-tracked-clients`: per host and version, clients the propagation ledger keeps.
    public var maxTrackedClients: Int
    /// `--node-id`: this edge's name in `Via`, logs, metrics and `/admin/v1/nodes`.
    public let node: String
    /// What `aasa-edge --version` prints.
    public let version: String
    /// This edge's `Via` entry on every client-route answer (built once: it goes on every answer).
    public let via: String
    /// Store writes kept while a shared store is unreachable, written when it is back.
    public var pendingWriteLimit: Int

    public init(cache: CacheConfiguration = CacheConfiguration(), allowDomains: [String] = [], refetchConcurrency: Int = 64,
                memoryCacheMB: Int = 64, ledgerRetentionDays: Double = 30, originConcurrency: Int = 256,
                maxTrackedClients: Int = 10_000, node: String = "edge", version: String = "dev", pendingWriteLimit: Int = 10_000) {
        self.node = node
        self.version = version
        via = "1.1 \(node) (aasa-edge/\(version))"
        self.pendingWriteLimit = pendingWriteLimit
        self.maxTrackedClients = max(1, maxTrackedClients)
        ledgerRetention = ledgerRetentionDays * 86_400
        self.originConcurrency = max(1, originConcurrency)
        self.cache = cache
        self.allowDomains = allowDomains.map { $0.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: ".")) }
        self.refetchConcurrency = refetchConcurrency
        memoryBudgetBytes = max(1, memoryCacheMB) << 20
    }

    /// The allowlist matches on a label boundary: `lab.test` admits `a.lab.test` and `lab.test`.
    public func isAllowed(_ host: OriginHost) -> Bool {
        allowDomains.isEmpty || allowDomains.contains { host.name == $0 || host.name.hasSuffix("." + $0) }
    }
}

/// A copy held in memory: what the hot path serves.
public struct MemorySnapshot: Sendable {
    public let version: Int
    public let body: [UInt8]
    public let sha256: String
    /// The edge's ETag: the first 32 hex digits of the body's SHA-256, quoted.
    public let etag: String
    /// The origin's validators, for conditional refetches.
    let originETag: String?
    let originLastModified: String?
    public let appIDs: [String]
    /// Diagnostics as JSON text (an array).
    public let diagnostics: String
    /// Behind a parent edge: its `X-Cache` and `Via` that came with this copy.
    public let upstream: UpstreamHeaders?

    init(version: Int, body: [UInt8], sha256: String, originETag: String?, originLastModified: String?, appIDs: [String], diagnostics: String,
         upstream: UpstreamHeaders? = nil) {
        self.upstream = upstream
        self.version = version
        self.body = body
        self.sha256 = sha256
        etag = "\"" + sha256.prefix(32) + "\""
        self.originETag = originETag
        self.originLastModified = originLastModified
        self.appIDs = appIDs
        self.diagnostics = diagnostics
    }
}

/// The last failure of a host, as served in the 404 form.
public struct FailureInfo: Sendable, Equatable {
    public let reason: String
    public let details: String
    public let at: Double
    /// The origin's status, when it answered.
    public let originStatus: Int?
    /// Behind a parent edge: its `X-Cache` and `Via` that came with the failure.
    public var upstream: UpstreamHeaders? = nil
    public var tryDirect: Bool {
        FailureCode(rawValue: String(reason.prefix(11)))?.tryDirect ?? false
    }
}

/// A host in memory: its state machine and the payloads its actions serve.
struct HostEntry: Sendable {
    var snapshot: MemorySnapshot?
    var cache: HostCache
    var failure: FailureInfo?
    /// The version stored as current even when no copy is served (hard purge).
    var storedVersion: Int?

    static let unknown = HostEntry(snapshot: nil, cache: HostCache(), failure: nil, storedVersion: nil)
}

/// What of the edge's own can run short and turn a request into a `503`.
public enum LocalShortage: String, Sendable, CaseIterable {
    case fileDescriptors = "file-descriptors"
    case memory
    /// `--origin-concurrency` fetches were in flight and none ended within `--origin-timeout`.
    case originSlots = "origin-slots"
    /// The parent edge (`--parent`) answered `503`.
    case parent

    init(_ resource: LocalProblem.Resource) {
        switch resource {
        case .fileDescriptors: self = .fileDescriptors
        case .memory: self = .memory
        case .parent: self = .parent
        }
    }
}

/// One client answer, for the HTTP layer to translate.
public enum EdgeReply: Sendable {
    case copy(MemorySnapshot, age: Int, outcome: CacheOutcome, cacheStatus: String)
    case failure(FailureInfo, age: Int, outcome: CacheOutcome, cacheStatus: String)
    /// `503` with `Retry-After`: the edge ran short and has no usable copy (`outcome` is
    /// `.unavailable`). `detail` is one line for the body.
    case unavailable(LocalShortage, detail: String, retryAfter: Int)
    /// `508 Loop Detected`: the request's `Via` already names this edge (`upstreamVia` nil), or
    /// the parent edge answered `508` (with this `Via`). Nothing is cached or recorded.
    case loopDetected(upstreamVia: String?)

    public var outcome: CacheOutcome {
        switch self {
        case .copy(_, _, let outcome, _), .failure(_, _, let outcome, _): return outcome
        case .unavailable: return .unavailable
        case .loopDetected: return .rejected
        }
    }
}

/// The result of a refetch (admin, release or background).
public struct RefetchResult: Sendable {
    public let host: OriginHost
    /// `updated`, `unchanged` or `failed`.
    public let outcome: String
    public let version: Int?
    public let previousVersion: Int?
    public let failure: FailureInfo?
    public let durationMs: Double
}

/// What one origin fetch did, shared by every request that waited for it.
struct AppliedFetch: Sendable {
    let end: FetchEnd
    let change: String
    let version: Int?
    let previousVersion: Int?
    let failure: FailureInfo?
    let durationMs: Double
    let originStatus: Int?
    /// The fetch did not reach the origin: this ran short (`end` is `.unavailable`).
    var shortage: (LocalShortage, detail: String)? = nil
    /// The host as this fetch left it: what its waiters are answered from when a hard purge
    /// lands between the fetch and their reading the cache.
    let entry: HostEntry?
    /// Another edge sharing the store made the fetch; this one waited for its result.
    var remote = false
    /// The parent edge answered `508`: the tiers form a circle.
    var loop: ParentLoop? = nil
}

/// A parent edge's `508 Loop Detected`, with the `Via` it came with.
struct ParentLoop: Sendable {
    let via: String?
}

/// The caching edge: copies in memory (loaded lazily from the store after a restart), one origin
/// fetch per host at a time shared by every request that needs it, the store as the durable copy.
/// Decisions come from `CachePolicy`; this type only carries them out.
public final class Edge: Sendable {
    public let configuration: EdgeConfiguration
    /// The durable copy (SQLite, or a fake in tests); the only way the edge reaches storage.
    public let store: any SnapshotStoring
    /// The only way the edge fills its cache: the origin, or a parent edge (`--parent`).
    let fetcher: any OriginFetching
    /// The origin itself, for `?mode=developer` (which bypasses the tiers too); `fetcher` when
    /// there is no parent.
    let bypassFetcher: any OriginFetching
    let clock: any WallClock
    let logger: Logger
    let entries: Locked<MemoryCache>
    let ledger: ServedLedger
    public let metrics: EdgeMetrics
    /// One origin fetch per host at a time.
    let fetches = LocalSingleFlight<AppliedFetch>()
    /// `--refetch-concurrency` slots for releases and background refreshes.
    private let limiter: SlotLimiter
    /// `--origin-concurrency` slots for fetches that clients wait for.
    private let originSlots: SlotLimiter
    /// The store as several edges share it (nil for an embedded store).
    let shared: (any SharedStoring)?
    /// Requests waiting for another edge's fetch.
    let waiters = ChangeWaiters()
    /// Writes that wait for a shared store to come back.
    let pending: PendingWrites
    public let startedAt: Double
    private let background = Locked<[Task<Void, Never>]>([])

    public init(configuration: EdgeConfiguration, store: any SnapshotStoring, fetcher: any OriginFetching,
                bypassFetcher: (any OriginFetching)? = nil, clock: any WallClock = SystemClock(), logger: Logger,
                metrics: EdgeMetrics = EdgeMetrics()) {
        self.bypassFetcher = bypassFetcher ?? fetcher
        self.metrics = metrics
        self.configuration = configuration
        self.store = store
        self.fetcher = fetcher
        self.clock = clock
        self.logger = logger
        limiter = SlotLimiter(limit: configuration.refetchConcurrency)
        originSlots = SlotLimiter(limit: configuration.originConcurrency)
        let entries = Locked(MemoryCache(budget: configuration.entryBudgetBytes))
        self.entries = entries
        ledger = ServedLedger(store: store, logger: logger, retention: configuration.ledgerRetention,
                              maxClients: configuration.maxTrackedClients, clock: clock,
                              everySecond: { Self.releaseEvictedMemory(entries) })
        shared = store as? any SharedStoring
        pending = PendingWrites(limit: configuration.pendingWriteLimit)
        startedAt = clock.now()
        if let shared {
            let tasks = startSharing(shared)
            background.withLock { $0 = tasks }
        }
    }

    /// After evictions, hands the freed memory back to the system: glibc keeps freed small blocks
    /// in its arenas, so without this the process stays at its high-water mark.
    private static func releaseEvictedMemory(_ entries: Locked<MemoryCache>) {
        guard entries.withLock({ $0.takeEvictions() }) > 0 else { return }
        mallocTrim?(0)
    }

    /// glibc's `malloc_trim` (not in the Glibc module map), nil on other C libraries.
    private static let mallocTrim: (@convention(c) (Int) -> Int32)? = {
        #if canImport(Glibc)
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (Int) -> Int32).self)
        #else
        return nil
        #endif
    }()

    /// The propagation ledger of a host (admin API shape); nil when the host is unknown.
    public func propagation(_ host: OriginHost) async throws -> Propagation.Report? {
        try await propagationVersions(host).map { Propagation.Report(domain: host.description, $0) }
    }

    /// The propagation ledger of a host, newest version first (nil for an unknown host).
    public func propagationVersions(_ host: OriginHost) async throws -> [VersionPropagation]? {
        await ledger.flush()
        let key = host.description
        guard try await store.host(key) != nil else { return nil }
        return Propagation.versions(fetches: try await store.fetches(host: key, limit: 100_000), served: try await store.served(host: key),
                                    others: try await store.servedOthers(host: key))
    }

    /// The store accepts a write now (`/readyz`); the error says why not.
    public func checkReady() async throws {
        try await store.checkWritable(at: clock.now())
    }

    /// Brings the gauges up to date (before a scrape).
    public func updateGauges() async {
        let (hosts, bytes) = entries.withLock { ($0.entries.count, $0.bytes) }
        metrics.memory(entries: bytes)
        let versions = (try? await store.versionCount()) ?? 0
        metrics.gauges(hosts: hosts, versions: versions)
    }

    /// Writes what is still buffered (served events) and stops background work.
    public func close() async {
        for task in background.withLock({ $0 }) { task.cancel() }
        await ledger.close()
    }

    var cache: CacheConfiguration { configuration.cache }

    // MARK: client requests

    /// Answers a client request for `host` (already validated and allowed). `client` identifies
    /// the requester for the propagation ledger (`X-Client-ID`, else address + User-Agent).
    /// `via`: the request's `Via`, sent on to a parent edge with this edge's entry after it.
    public func serve(_ host: OriginHost, client: String = "", via: String? = nil) async -> EdgeReply {
        let reply = await answer(host, via: via)
        if case .copy(let snapshot, _, _, _) = reply {
            ledger.record(host: host.description, version: snapshot.version, at: clock.now(), client: client)
        }
        return reply
    }

    /// Answers from memory alone when the policy allows it without any origin work (a fresh copy,
    /// or a cached failure); nil when the request needs the full path (a fetch, a background
    /// refresh, a copy not yet in memory). Synchronous, so it can run on the event loop.
    public func serveFromMemory(_ host: OriginHost, client: String = "") -> EdgeReply? {
        let key = host.description
        guard let entry = entries.withLock({ $0.get(key) }) else { return nil }
        let now = clock.now()
        switch entry.cache.answerFromMemory(now: now, configuration: cache) {
        case .serveCopy(let outcome)?:
            guard let reply = copyReply(entry, outcome: outcome, now: now), case .copy(let snapshot, _, _, _) = reply else { return nil }
            ledger.record(host: key, version: snapshot.version, at: now, client: client)
            return reply
        case .serveFailure(let outcome)?:
            return entry.failure.map { failureReply($0, outcome: outcome, now: now) }
        default:
            return nil
        }
    }

    /// The request event through the host's state machine, then its actions carried out.
    private func answer(_ host: OriginHost, via: String?) async -> EdgeReply {
        let key = host.description
        let loaded = await self.entry(host)
        let now = clock.now()
        let (entry, actions) = entries.withLock { memory -> (HostEntry, [HostCache.Action]) in
            var entry = memory.get(key) ?? loaded
            let actions = entry.cache.handle(.request(now: now), configuration: cache)
            memory.set(key, entry)
            return (entry, actions)
        }
        var reply: EdgeReply?
        var waiting = HostCache.Waiting(before: entry.cache.state)
        var mustFetch = false
        for action in actions {
            switch action {
            case .serveCopy(let outcome): reply = copyReply(entry, outcome: outcome, now: now)
            case .serveFailure(let outcome): reply = entry.failure.map { failureReply($0, outcome: outcome, now: now) }
            case .refreshInBackground: refreshInBackground(host)
            case .fetch(let w):
                waiting = w
                mustFetch = true
            case .forgetCopy: break
            }
        }
        if let reply, !mustFetch { return reply }
        let (applied, collapsed) = await sharedFetch(host, trigger: "request", via: via)
        if let loop = applied.loop { return .loopDetected(upstreamVia: loop.via) }
        let current = await self.entry(host)
        let after = current.snapshot == nil ? applied.entry ?? current : current
        let finished = clock.now()
        let outcome = HostCache.answer(waiting, after: applied.end, now: finished, configuration: cache)
        if outcome == .unavailable, let (shortage, detail) = applied.shortage {
            metrics.shortage(shortage)
            return .unavailable(shortage, detail: detail, retryAfter: shortage == .originSlots ? 1 : 5)
        }
        if outcome != .failureMiss, let reply = copyReply(after, outcome: outcome, now: finished, collapsed: collapsed, originStatus: applied.originStatus) {
            return reply
        }
        let failure = after.failure ?? applied.failure
            ?? FailureInfo(reason: "SWCERR00203 Connection Failed", details: #"{"cause":"no usable copy"}"#, at: finished, originStatus: nil)
        return failureReply(failure, outcome: .failureMiss, now: finished, collapsed: collapsed, originStatus: applied.originStatus)
    }

    private func copyReply(_ entry: HostEntry, outcome: CacheOutcome, now: Double, collapsed: Bool = false,
                           originStatus: Int? = nil) -> EdgeReply? {
        guard let snapshot = entry.snapshot, let confirmed = entry.cache.state.copyConfirmedAt else { return nil }
        let ttl = Policy.ttlRemaining(confirmedAt: confirmed, now: now, configuration: cache)
        let status = outcome.cacheStatus(ttl: ttl, originStatus: originStatus, collapsed: collapsed,
                                         revalidating: Policy.isRevalidating(entry.cache.state, now: now, configuration: cache)) ?? ""
        return .copy(snapshot, age: Policy.age(since: confirmed, now: now), outcome: outcome, cacheStatus: status)
    }

    private func failureReply(_ failure: FailureInfo, outcome: CacheOutcome, now: Double, collapsed: Bool = false,
                              originStatus: Int? = nil) -> EdgeReply {
        let age = Policy.age(since: failure.at, now: now)
        let ttl = Int(cache.failureTTL) - age
        let status = outcome.cacheStatus(ttl: ttl, originStatus: originStatus ?? failure.originStatus, collapsed: collapsed) ?? ""
        return .failure(failure, age: age, outcome: outcome, cacheStatus: status)
    }

    /// `?mode=developer` / `managed`: the origin now, through an `--origin-concurrency` slot, with
    /// nothing stored, logged in the ledger or changed in memory (the state machine is not asked:
    /// this request is outside the cache).
    public func bypass(_ host: OriginHost) async -> EdgeReply {
        guard await originSlots.acquire(timeout: fetcher.timeout) else {
            metrics.shortage(.originSlots)
            return .unavailable(.originSlots, detail: "\(configuration.originConcurrency) origin fetches are in flight (--origin-concurrency)",
                                retryAfter: 1)
        }
        let result = await bypassFetcher.fetch(host, validators: nil, via: configuration.via)
        originSlots.release()
        let now = clock.now()
        let status = CacheOutcome.bypass.cacheStatus(ttl: 0) ?? ""
        logger.info("origin fetch (bypass: nothing stored)", metadata: ["host": "\(host.description)", "status": "\(result.status.map(String.init) ?? "none")"])
        switch result.outcome {
        case .fetched, .notModified:
            let snapshot = MemorySnapshot(version: 0, body: result.body, sha256: result.sha256 ?? SHA256.hex(result.body), originETag: nil,
                                          originLastModified: nil, appIDs: [], diagnostics: "[]")
            return .copy(snapshot, age: 0, outcome: .bypass, cacheStatus: status)
        case .failed(let failure):
            return .failure(FailureInfo(reason: failure.reason, details: failure.detailsJSON, at: now, originStatus: result.status),
                            age: 0, outcome: .bypass, cacheStatus: status)
        case .local(let problem):
            let shortage = LocalShortage(problem.resource)
            metrics.shortage(shortage)
            return .unavailable(shortage, detail: "\(problem); try again shortly", retryAfter: 5)
        case .loopDetected:
            return .loopDetected(upstreamVia: result.upstream?.via)
        }
    }

    // MARK: state

    /// The host's entry: from memory, else from the store (first request after a restart).
    func entry(_ host: OriginHost) async -> HostEntry {
        let key = host.description
        if let entry = entries.withLock({ $0.get(key) }) { return entry }
        var loaded = HostEntry.unknown
        // During a shared store's outage a miss is fetched and served without asking it.
        if shared?.isAvailable != false {
            do {
                if let (stored, snapshot) = try await store.host(key) { loaded = Self.entry(stored, snapshot) }
            } catch {
                logger.error("store read failed; serving from memory only", metadata: ["host": "\(key)", "error": "\(error)"])
            }
        }
        return entries.withLock { cache in
            if let existing = cache.get(key) { return existing }
            cache.set(key, loaded)
            return loaded
        }
    }

    static func entry(_ stored: StoredHost, _ snapshot: StoredSnapshot?) -> HostEntry {
        let purge = PurgeState(rawValue: stored.purge) ?? .none
        let memory = purge == .hard ? nil : snapshot.map {
            MemorySnapshot(version: $0.version, body: $0.body, sha256: $0.sha256, originETag: $0.etag,
                           originLastModified: $0.lastModified, appIDs: $0.appIDs, diagnostics: $0.diagnostics, upstream: stored.upstream)
        }
        let failure = stored.failure.map {
            FailureInfo(reason: $0.reason, details: $0.details, at: $0.at, originStatus: OriginFailure.statusCode(inReason: $0.reason),
                        upstream: $0.upstream)
        }
        // Whether a copy exists is the store's fact, not whether its body is loaded: the admin
        // views build entries without bodies.
        let hasCopy = purge != .hard && stored.currentVersion != nil
        return HostEntry(snapshot: memory,
                         cache: HostCache(state: CacheState(copyConfirmedAt: hasCopy ? stored.confirmedAt : nil, failedAt: failure?.at, purge: purge)),
                         failure: failure, storedVersion: stored.currentVersion)
    }

    // MARK: origin fetches

    /// One origin fetch per host at a time: a caller joins the fetch in flight, if any.
    /// Returns what the fetch did and whether this caller joined someone else's fetch.
    /// `via`: the client request's `Via`, for a parent edge (the first caller's, when several join).
    func sharedFetch(_ host: OriginHost, trigger: String, via: String? = nil) async -> (AppliedFetch, collapsed: Bool) {
        // Fetches clients wait for are shared across edges on a shared store; refreshes, refetches
        // and releases are this edge's own (they join a local fetch in flight all the same).
        let flight: any SingleFlight<AppliedFetch> = trigger == "request" ? clientFetches : fetches
        let (applied, joined) = await flight.run(host.description) { await self.fetchAndApply(host, trigger: trigger, via: via) }
        let collapsed = joined || applied.remote
        if collapsed { metrics.coalesced() }
        return (applied, collapsed)
    }

    /// The one background refetch the state machine asked for (it asks again only after
    /// `.refreshFinished`), behind `--refetch-concurrency`.
    private func refreshInBackground(_ host: OriginHost) {
        let key = host.description
        Task {
            _ = await limiter.run { await self.sharedFetch(host, trigger: "background") }
            entries.withLock { memory in _ = memory.modify(key) { _ = $0.cache.handle(.refreshFinished, configuration: self.cache) } }
        }
    }

    private func fetchAndApply(_ host: OriginHost, trigger: String, via: String?) async -> AppliedFetch {
        let before = await entry(host)
        let validators = before.snapshot.map { Validators(etag: $0.originETag, lastModified: $0.originLastModified) }
        let started = ContinuousClock.now
        let startedWall = clock.now()
        // Fetches clients wait for share `--origin-concurrency` slots; refreshes and releases
        // have `--refetch-concurrency` of their own.
        let needsSlot = trigger == "request"
        if needsSlot {
            guard await originSlots.acquire(timeout: fetcher.timeout) else {
                let detail = "\(configuration.originConcurrency) origin fetches are in flight (--origin-concurrency); none ended within --origin-timeout"
                logger.warning("no origin-fetch slot; answered 503", metadata: ["host": "\(host.description)", "limit": "\(configuration.originConcurrency)"])
                return AppliedFetch(end: .unavailable, change: "unavailable", version: before.snapshot?.version, previousVersion: nil,
                                    failure: nil, durationMs: 0, originStatus: nil, shortage: (.originSlots, detail), entry: nil)
            }
        }
        let result = await fetcher.fetch(host, validators: validators, via: via.map { $0 + ", " + configuration.via } ?? configuration.via)
        if needsSlot { originSlots.release() }
        let elapsed = ContinuousClock.now - started
        let durationMs = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
        let fetchedAt = clock.now()
        // When the answer was current: behind a parent, its Age is time the copy already spent
        // in the tiers above, and TTLs (and the Age served) count from there.
        let now = fetchedAt - result.upstreamAge
        let record = FetchRecord(at: fetchedAt, status: result.status, durationMs: durationMs, trigger: trigger,
                                 expiresAt: now + cache.ttl, failureUntil: now + cache.failureTTL, confirmedAt: now,
                                 upstream: result.upstream)
        let key = host.description
        let applied: AppliedFetch
        switch result.outcome {
        case .fetched:
            let file = AASAFile.read(result.body)
            let diagnostics = JSONWriter.string(.array(file.diagnostics.map(\.json)))
            let appIDs = file.document?.allAppIDs ?? []
            let recorded = await write(key) { [store] in
                try await store.recordSuccess(host: key, body: result.body, sha256: result.sha256 ?? "", etag: result.etag,
                                              lastModified: result.lastModified, contentType: result.contentType,
                                              cacheControl: result.cacheControl, valid: file.isValid, diagnostics: diagnostics,
                                              appIDs: appIDs, fetch: record)
            }
            let previous = before.snapshot?.version ?? before.storedVersion
            let sameBytes = before.snapshot?.sha256 == result.sha256
            let version = recorded?.version ?? (sameBytes ? before.snapshot!.version : (previous ?? 0) + 1)
            let snapshot = MemorySnapshot(version: version, body: result.body, sha256: result.sha256 ?? "", originETag: result.etag,
                                          originLastModified: result.lastModified, appIDs: appIDs, diagnostics: diagnostics,
                                          upstream: result.upstream)
            let change = recorded?.change.rawValue ?? (sameBytes ? "unchanged" : "updated")
            let entry = entries.withLock { memory -> HostEntry in
                var entry = memory.get(key) ?? before
                entry.snapshot = snapshot
                entry.failure = nil
                entry.storedVersion = version
                _ = entry.cache.handle(.fetchFinished(change == "updated" ? .updated : .confirmed, purgesAtStart: before.cache.purges, now: now),
                                       configuration: cache)
                memory.set(key, entry)
                return entry
            }
            applied = AppliedFetch(end: change == "updated" ? .updated : .confirmed, change: change, version: version,
                                   previousVersion: previous, failure: nil, durationMs: durationMs, originStatus: result.status,
                                   entry: entry)
        case .notModified:
            _ = await write(key) { [store] in try await store.recordNotModified(host: key, fetch: record, startedAt: startedWall) }
            // Waiters of this fetch are answered from the copy it confirmed, even when a hard
            // purge has dropped it from memory meanwhile.
            var confirmed = before
            _ = confirmed.cache.handle(.fetchFinished(.notModified, purgesAtStart: before.cache.purges, now: now), configuration: cache)
            confirmed.failure = nil
            entries.withLock { memory in
                var entry = memory.get(key) ?? before
                _ = entry.cache.handle(.fetchFinished(.notModified, purgesAtStart: before.cache.purges, now: now), configuration: cache)
                if entry.cache.state.failedAt == nil { entry.failure = nil }
                memory.set(key, entry)
            }
            let version = before.snapshot?.version
            applied = AppliedFetch(end: .notModified, change: "unchanged", version: version, previousVersion: version,
                                   failure: nil, durationMs: durationMs, originStatus: result.status, entry: confirmed)
        case .local(let problem):
            // The edge's own trouble: nothing about the origin is recorded, cached or logged as its failure.
            logger.error("origin fetch not attempted: \(problem)", metadata: ["host": "\(key)", "trigger": "\(trigger)"])
            return AppliedFetch(end: .unavailable, change: "unavailable", version: before.snapshot?.version, previousVersion: nil,
                                failure: nil, durationMs: durationMs, originStatus: nil,
                                shortage: (LocalShortage(problem.resource), "\(problem); try again shortly"), entry: nil)
        case .loopDetected:
            logger.error("the parent edge answered 508 Loop Detected: the tiers form a circle (see --parent)",
                         metadata: ["host": "\(key)", "via": "\(result.upstream?.via ?? "")"])
            var applied = AppliedFetch(end: .unavailable, change: "unavailable", version: before.snapshot?.version, previousVersion: nil,
                                       failure: nil, durationMs: durationMs, originStatus: result.status, entry: nil)
            applied.loop = ParentLoop(via: result.upstream?.via)
            return applied
        case .failed(let originFailure):
            let failure = FailureInfo(reason: originFailure.reason, details: originFailure.detailsJSON, at: now, originStatus: result.status,
                                      upstream: result.upstream)
            _ = await write(key) { [store] in try await store.recordFailure(host: key, reason: failure.reason, details: failure.details, fetch: record) }
            entries.withLock { memory in
                var entry = memory.get(key) ?? before
                _ = entry.cache.handle(.fetchFinished(.failed, purgesAtStart: before.cache.purges, now: now), configuration: cache)
                entry.failure = failure
                memory.set(key, entry)
            }
            let version = before.snapshot?.version
            applied = AppliedFetch(end: .failed, change: "failed", version: version, previousVersion: version,
                                   failure: failure, durationMs: durationMs, originStatus: result.status, entry: nil)
        }
        metrics.originFetch(change: applied.change, failureReason: applied.failure?.reason, durationMs: durationMs)
        var metadata: Logger.Metadata = [
            "host": "\(key)", "trigger": "\(trigger)", "outcome": "\(applied.change)",
            "duration_ms": "\(String(format: "%.1f", durationMs))",
        ]
        if let status = result.status { metadata["status"] = "\(status)" }
        if let version = applied.version { metadata["version"] = "\(version)" }
        if let failure = applied.failure {
            metadata["reason"] = "\(failure.reason)"
            logger.warning("origin fetch failed", metadata: metadata)
        } else {
            logger.info("origin fetch", metadata: metadata)
        }
        return applied
    }

    /// Records a fetch result in the store; nil when the store refused it (the edge goes on from
    /// memory). A shared store's missed write is kept for when it is back; an embedded store's
    /// failure is local trouble, with nothing to wait for.
    private func write(_ host: String, _ record: @escaping @Sendable () async throws -> RecordedFetch) async -> RecordedFetch? {
        do {
            return try await record()
        } catch {
            logger.error("store write failed; memory goes on without it", metadata: ["host": "\(host)", "error": "\(error)"])
            metrics.storeWriteError()
            if shared != nil { pending.add(host: host) { _ = try await record() } }
            return nil
        }
    }

    // MARK: admin operations

    /// Fetches from the origin now (joining a fetch in flight).
    public func refetch(_ host: OriginHost, trigger: String = "refetch") async -> RefetchResult {
        metrics.refetch()
        let (applied, _) = await sharedFetch(host, trigger: trigger)
        return RefetchResult(host: host, outcome: applied.change, version: applied.version, previousVersion: applied.previousVersion,
                             failure: applied.failure, durationMs: applied.durationMs)
    }

    /// Purges a host; nil when the edge has never seen it.
    public func purge(_ host: OriginHost, soft: Bool) async -> Bool? {
        let key = host.description
        _ = await entry(host)
        let known: Bool
        do {
            known = try await store.purge(host: key, hard: !soft, at: clock.now())
        } catch {
            logger.error("store write failed", metadata: ["host": "\(key)", "error": "\(error)"])
            metrics.storeWriteError()
            known = entries.withLock { $0.entries[key]?.snapshot != nil || $0.entries[key]?.storedVersion != nil }
        }
        guard known else { return nil }
        applyPurge(key, soft: soft)
        logger.notice("purge", metadata: ["host": "\(key)", "mode": "\(soft ? "soft" : "hard")"])
        metrics.purge(soft: soft)
        return true
    }

    /// The purge event through the host's state machine (a local purge, or one another edge announced).
    func applyPurge(_ key: String, soft: Bool) {
        entries.withLock { memory in
            _ = memory.modify(key) { entry in
                if entry.cache.handle(.purge(soft: soft), configuration: cache).contains(.forgetCopy) {
                    entry.snapshot = nil
                    entry.failure = nil
                }
            }
        }
    }

    /// Models an App Store release: refetches every host whose current snapshot names one of
    /// `appIDs` (team prefix compared upper-cased), plus `hosts`, `refetchConcurrency` at a time.
    /// Stored hosts outside `--allow-domain` are not fetched: they are listed in `skipped`.
    public func release(appIDs: [String], hosts: [OriginHost]) async -> (results: [RefetchResult], skipped: [String]) {
        let wanted = Set(appIDs.map(AppID.canonical))
        var targets: [OriginHost] = []
        var skipped: [String] = []
        var seen = Set<String>()
        if !wanted.isEmpty {
            let stored = (try? await store.hosts()) ?? []
            let memory = entries.withLock { $0.entries }
            for host in stored {
                let ids = memory[host.name]?.snapshot?.appIDs ?? host.appIDs
                guard ids.contains(where: wanted.contains), let origin = try? OriginHost(host.name), seen.insert(origin.description).inserted else {
                    continue
                }
                if configuration.isAllowed(origin) {
                    targets.append(origin)
                } else {
                    skipped.append(origin.description)
                }
            }
        }
        for host in hosts where seen.insert(host.description).inserted { targets.append(host) }
        logger.notice("release", metadata: ["appIDs": "\(appIDs)", "hosts": "\(targets.count)"])
        metrics.release()
        let results = await withTaskGroup(of: (Int, RefetchResult).self) { group in
            for (index, host) in targets.enumerated() {
                group.addTask { (index, await self.limiter.run { await self.refetch(host, trigger: "release") }) }
            }
            var results = [RefetchResult?](repeating: nil, count: targets.count)
            for await (index, result) in group { results[index] = result }
            return results.compactMap { $0 }
        }
        return (results, skipped)
    }

    /// The admin view of every host the edge knows, sorted by name.
    public func domains() async -> [DomainStatus] {
        await domainPage(limit: .max).domains
    }

    /// One page of the admin list: hosts after `after` (by name), with the admin `state` given
    /// and whose name contains `query`, at most `limit`; `next` is the name to continue after
    /// when more match. The store gives hosts in name order a batch at a time, so a page costs
    /// about its own size (times log n), not the whole list. Hosts known only in memory (their
    /// store write failed) are listed when the store has none left to give.
    public func domainPage(limit: Int, after: String? = nil, state: String? = nil, query: String? = nil) async
        -> (domains: [DomainStatus], next: String?) {
        let memory = entries.withLock { $0.entries }
        let now = clock.now()
        var page: [DomainStatus] = []
        var cursor = after
        let batch = limit >= 10_000 ? 10_000 : max(limit + 1, 256)
        var listed = Set<String>()
        func consider(_ name: String, _ entry: HostEntry) -> Bool {
            let status = status(name, entry, now: now)
            if let state, status.state != state { return true }
            if page.count == limit { return false }  // one more matches: there is a next page
            page.append(status)
            return true
        }
        while true {
            let rows = (try? await store.hosts(after: cursor, containing: query, limit: batch)) ?? []
            for row in rows {
                listed.insert(row.name)
                guard consider(row.name, memory[row.name] ?? Self.entry(row, nil)) else { return (page, page.last?.domain) }
            }
            guard rows.count == batch, let last = rows.last?.name else { break }
            cursor = last
        }
        let memoryOnly = memory.filter { name, entry in
            !listed.contains(name) && (entry.storedVersion != nil || entry.failure != nil)
                && (after.map { name > $0 } ?? true) && (query.map { $0.isEmpty || name.contains($0) } ?? true)
        }.keys.sorted()
        for name in memoryOnly {
            guard consider(name, memory[name]!) else { return (page, page.last?.domain) }
        }
        return (page, nil)
    }

    /// The admin view of one host, with its snapshot's app IDs and diagnostics; nil when unknown.
    public func domain(_ host: OriginHost) async -> DomainStatus? {
        let entry = await self.entry(host)
        guard entry.snapshot != nil || entry.storedVersion != nil || entry.failure != nil else { return nil }
        var status = status(host.description, entry, now: clock.now())
        if status.appIDs == nil, let version = entry.storedVersion,
           let (_, snapshot) = try? await store.host(host.description), let snapshot, snapshot.version == version {
            status.appIDs = snapshot.appIDs
            status.diagnostics = snapshot.diagnostics
        }
        return status
    }

    private func status(_ name: String, _ entry: HostEntry, now: Double) -> DomainStatus {
        let confirmed = entry.cache.state.copyConfirmedAt
        return DomainStatus(domain: name, state: entry.cache.adminState(now: now, configuration: cache),
                            serving: entry.cache.serving(now: now, configuration: cache),
                            version: entry.snapshot?.version ?? entry.storedVersion, fetchedAt: confirmed,
                            expiresAt: confirmed.map { $0 + cache.ttl }, lastFailure: entry.failure,
                            appIDs: entry.snapshot?.appIDs, diagnostics: entry.snapshot?.diagnostics)
    }
}

public struct DomainStatus: Sendable {
    public let domain: String
    public let state: String
    /// What a client asking now is given: `fresh`, `stale`, `failure` or `none`.
    public let serving: String
    public let version: Int?
    public let fetchedAt: Double?
    public let expiresAt: Double?
    public let lastFailure: FailureInfo?
    public var appIDs: [String]?
    /// JSON text (an array of diagnostics).
    public var diagnostics: String?
}
