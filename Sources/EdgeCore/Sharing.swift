import CachePolicy
import EdgeModel
import Foundation
import Logging

/// Requests waiting for another edge's fetch of a host: a ticket is taken before asking for the
/// fetch lease (so a change landing meanwhile is not missed) and fires on the host's next change.
final class ChangeWaiters: Sendable {
    private struct Ticket {
        var fired = false
        var continuation: CheckedContinuation<Bool, Never>?
    }
    private let state = Locked<(next: Int, tickets: [String: [Int: Ticket]])>((0, [:]))

    func register(_ key: String) -> Int {
        state.withLock { state in
            state.next += 1
            state.tickets[key, default: [:]][state.next] = Ticket()
            return state.next
        }
    }

    /// True when the host changed (now or since `register`), false after `timeout` seconds.
    func wait(_ key: String, ticket: Int, timeout: Double) async -> Bool {
        let timer = Task {
            try? await Task.sleep(for: .milliseconds(Int(timeout * 1000)))
            self.finish(key, ticket: ticket, changed: false)
        }
        defer { timer.cancel() }
        return await withCheckedContinuation { continuation in
            let firedAlready = state.withLock { state -> Bool? in
                guard var entry = state.tickets[key]?[ticket] else { return false }  // timed out already
                if entry.fired {
                    state.tickets[key]?[ticket] = nil
                    return true
                }
                entry.continuation = continuation
                state.tickets[key]?[ticket] = entry
                return nil
            }
            if let firedAlready { continuation.resume(returning: firedAlready) }
        }
    }

    func cancel(_ key: String, ticket: Int) {
        state.withLock { state in
            state.tickets[key]?[ticket] = nil
            if state.tickets[key]?.isEmpty == true { state.tickets[key] = nil }
        }
    }

    /// The host changed: every ticket fires.
    func fire(_ key: String) {
        let waiting = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            guard let tickets = state.tickets[key] else { return [] }
            var resumed: [CheckedContinuation<Bool, Never>] = []
            for (id, var ticket) in tickets {
                if let continuation = ticket.continuation {
                    resumed.append(continuation)
                    state.tickets[key]?[id] = nil
                } else {
                    ticket.fired = true
                    state.tickets[key]?[id] = ticket
                }
            }
            if state.tickets[key]?.isEmpty == true { state.tickets[key] = nil }
            return resumed
        }
        for continuation in waiting { continuation.resume(returning: true) }
    }

    private func finish(_ key: String, ticket: Int, changed: Bool) {
        let continuation = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            guard let entry = state.tickets[key]?[ticket] else { return nil }
            state.tickets[key]?[ticket] = nil
            if state.tickets[key]?.isEmpty == true { state.tickets[key] = nil }
            return entry.continuation
        }
        continuation?.resume(returning: changed)
    }
}

/// One edge's view of the others sharing its store.
public struct NodeStatus: Sendable, Equatable {
    public let node: String
    public let startedAt: Double
    public let lastSeenAt: Double
    public let version: String
}

extension Edge {
    /// Whether the store takes writes now (a shared store can be unreachable; admin writes then
    /// answer `503`).
    public var storeAvailable: Bool { shared?.isAvailable ?? true }

    /// Whether the store is shared with other edges (PostgreSQL).
    public var isShared: Bool { shared != nil }

    /// Hosts whose entries are in memory now.
    public var hostsInMemory: Int { entries.withLock { $0.entries.count } }

    /// `--origin-timeout`.
    public var originTimeout: Double { fetcher.timeout }

    /// `--parent`: the edge this one fills its cache from (tiers), or nil.
    public var parentURL: String? { (fetcher as? ParentEdge)?.base }

    /// `/admin/v1/nodes`: every edge seen in the last 60 s (this one alone on an embedded store).
    public func nodes() async throws -> [NodeStatus] {
        let now = clock.now()
        guard let shared else {
            return [NodeStatus(node: configuration.node, startedAt: startedAt, lastSeenAt: now, version: configuration.version)]
        }
        return try await shared.nodes(seenSince: now - 60).map {
            NodeStatus(node: $0.node, startedAt: $0.startedAt, lastSeenAt: $0.lastSeenAt, version: $0.version)
        }
    }

    /// Background work of an edge on a shared store: applies the changes other edges announce,
    /// keeps this edge's heartbeat, and writes what waited for the store once it is back.
    func startSharing(_ shared: any SharedStoring) -> [Task<Void, Never>] {
        let changes = Task {
            for await change in shared.changes { await self.applyChange(change) }
        }
        let heartbeat = Task {
            while !Task.isCancelled {
                do {
                    try await shared.heartbeat(startedAt: self.startedAt, at: self.clock.now(), version: self.configuration.version)
                    for host in Set(await self.pending.replay(logger: self.logger)) { _ = await self.reload(host) }
                } catch {}
                try? await Task.sleep(for: .seconds(1))
            }
        }
        return [changes, heartbeat]
    }

    /// A change committed by an edge (this one included): memory follows the store. Purges are
    /// the same events as a local purge; a fetch result is read back from the store.
    func applyChange(_ change: StoreChange) async {
        if change.kind == .resync {
            let dropped = entries.withLock { memory -> Int in
                defer { memory.removeAll() }
                return memory.entries.count
            }
            logger.notice("resync with the shared store: memory dropped, hosts are read back on their next request",
                          metadata: ["hosts": "\(dropped)"])
            return
        }
        let key = change.host
        defer { waiters.fire(key) }
        let mine = change.node == configuration.node
        let held = entries.withLock { $0.entries[key] != nil }
        guard held, !mine else { return }
        switch change.kind {
        case .purgeHard, .purgeSoft:
            applyPurge(key, soft: change.kind == .purgeSoft)
        case .fetched:
            _ = await reload(key)
        case .resync:
            break  // handled above
        }
    }

    /// Reads the host back from the store into memory (its state machine takes the store's
    /// state); nil when the store cannot say.
    func reload(_ key: String) async -> HostEntry? {
        guard let (stored, snapshot) = try? await store.host(key) else { return nil }
        let fresh = Self.entry(stored, snapshot)
        return entries.withLock { memory -> HostEntry in
            var entry = memory.get(key) ?? fresh
            _ = entry.cache.handle(.restored(fresh.cache.state), configuration: cache)
            entry.snapshot = fresh.snapshot
            entry.failure = fresh.failure
            entry.storedVersion = fresh.storedVersion
            memory.set(key, entry)
            return entry
        }
    }

    /// The result another edge recorded for `host` since `since`, applied here: what a request
    /// that waited for that edge's fetch is answered from. Nil when the store holds no such result.
    func takeRemoteFetch(_ host: OriginHost, before: HostEntry, since: Double, started: ContinuousClock.Instant) async -> AppliedFetch? {
        let key = host.description
        guard let entry = await reload(key) else { return nil }
        let elapsed = ContinuousClock.now - started
        let durationMs = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
        let previous = before.snapshot?.version ?? before.storedVersion
        if let failure = entry.failure, failure.at >= since {
            return AppliedFetch(end: .failed, change: "failed", version: entry.storedVersion, previousVersion: previous, failure: failure,
                                durationMs: durationMs, originStatus: failure.originStatus, entry: nil, remote: true)
        }
        guard entry.snapshot != nil, let confirmed = entry.cache.state.copyConfirmedAt, confirmed >= since else { return nil }
        let updated = entry.storedVersion != previous
        return AppliedFetch(end: updated ? .updated : .confirmed, change: updated ? "updated" : "unchanged", version: entry.storedVersion,
                            previousVersion: previous, failure: nil, durationMs: durationMs, originStatus: nil, entry: entry, remote: true)
    }

    /// The single flight of fetches clients wait for: this process's own, and on a shared store
    /// one edge's for all (the others take its result).
    var clientFetches: any SingleFlight<AppliedFetch> {
        guard let shared else { return fetches }
        return SharedSingleFlight(local: fetches, elsewhere: { [self] key in
            guard let host = try? OriginHost(key) else { return nil }
            let since = clock.now()
            guard let remote = await fetchedElsewhere(host, before: await entry(host), since: since) else { return nil }
            logger.info("origin fetch made by another edge", metadata: ["host": "\(key)", "outcome": "\(remote.change)"])
            return remote
        }, finished: { key in
            Task { try? await shared.endFetch(host: key) }
        })
    }

    /// Before a client-triggered fetch on a shared store: one edge fetches, the others wait for its
    /// change (up to `--origin-timeout`) and take its result. Nil: this edge fetches itself.
    func fetchedElsewhere(_ host: OriginHost, before: HostEntry, since: Double) async -> AppliedFetch? {
        guard let shared, shared.isAvailable else { return nil }
        let key = host.description
        let started = ContinuousClock.now
        let ticket = waiters.register(key)
        let claim: FetchClaim
        do {
            claim = try await shared.claimFetch(host: key, since: since, until: since + fetcher.timeout + 1)
        } catch {
            waiters.cancel(key, ticket: ticket)
            return nil
        }
        switch claim {
        case .claimed:
            waiters.cancel(key, ticket: ticket)
            return nil
        case .done:
            waiters.cancel(key, ticket: ticket)
            return await takeRemoteFetch(host, before: before, since: since, started: started)
        case .busy:
            guard await waiters.wait(key, ticket: ticket, timeout: fetcher.timeout) else {
                logger.warning("the edge fetching this host gave no result within --origin-timeout; fetching here",
                               metadata: ["host": "\(key)"])
                return nil
            }
            return await takeRemoteFetch(host, before: before, since: since, started: started)
        }
    }
}

/// Store writes that failed while a shared store was unreachable, written once it is back
/// (oldest first). Bounded (`--store-backlog`): past `limit` the oldest are dropped, and counted.
final class PendingWrites: Sendable {
    typealias Write = @Sendable () async throws -> Void
    private struct Pending {
        let id: Int
        let host: String
        let write: Write
    }
    private let state = Locked<(writes: [Pending], next: Int, dropped: Int)>(([], 0, 0))
    let limit: Int

    init(limit: Int) { self.limit = max(1, limit) }

    func add(host: String, _ write: @escaping Write) {
        state.withLock { state in
            if state.writes.count >= limit {
                state.writes.removeFirst()
                state.dropped += 1
            }
            state.next += 1
            state.writes.append(Pending(id: state.next, host: host, write: write))
        }
    }

    /// Writes what waits, oldest first; stops at the first failure (the store is down again).
    /// Returns the hosts written.
    @discardableResult
    func replay(logger: Logger) async -> [String] {
        var written: [String] = []
        while let pending = state.withLock({ $0.writes.first }) {
            do { try await pending.write() } catch { break }
            // By id: `add` may have dropped the oldest while this one was being written.
            state.withLock { state in if state.writes.first?.id == pending.id { state.writes.removeFirst() } }
            written.append(pending.host)
        }
        let dropped = state.withLock { state -> Int in
            defer { state.dropped = 0 }
            return state.dropped
        }
        if !written.isEmpty || dropped > 0 {
            logger.notice("store back: wrote what waited for it", metadata: ["writes": "\(written.count)", "dropped": "\(dropped)"])
        }
        return written
    }
}
