import Testing
import TestSupport
@testable import CachePolicy

/// The host state machine against a small reference model written from the contract's outcome
/// table and purge rules, over seeded random event sequences — with "restarts" that rebuild the
/// machine from what a store keeps (copy time, failure time, purge state, purge time).
@Suite struct HostCacheTests {
    static let c = CacheConfiguration(ttl: 100, failureTTL: 30, staleIfError: 500)
    /// The same with a stale-while-revalidate window.
    static let revalidating = CacheConfiguration(ttl: 100, failureTTL: 30, staleIfError: 500, staleWhileRevalidate: 200)

    /// The contract, written plainly.
    struct Reference {
        var c = HostCacheTests.c
        var copyAt: Double?        // nil: no copy held
        var failedAt: Double?
        var purge = PurgeState.none
        /// Times of the purges since the (re)start.
        var purgeTimes: [Double] = []
        var refreshing = false

        /// What a request is answered with.
        mutating func request(_ now: Double) -> [HostCache.Action] {
            let failureCached = failedAt != nil && now - failedAt! < c.failureTTL
            if let copyAt, purge != .hard {
                if purge == .soft {
                    if failureCached || refreshing { return [.serveCopy(.hitStale)] }
                    refreshing = true
                    return [.serveCopy(.hitStale), .refreshInBackground]
                }
                if now - copyAt < c.ttl { return [.serveCopy(.hitFresh)] }
                if now - copyAt < c.ttl + c.staleWhileRevalidate {
                    // Past expiry, within the window: stale at once, one refresh in the background.
                    if failureCached || refreshing { return [.serveCopy(.hitStale)] }
                    refreshing = true
                    return [.serveCopy(.hitStale), .refreshInBackground]
                }
                if failureCached {
                    return now - copyAt < c.ttl + c.staleIfError ? [.serveCopy(.hitStale)] : [.serveFailure(.failureHit)]
                }
                return [.fetch(HostCache.Waiting(before: state))]
            }
            return failureCached ? [.serveFailure(.failureHit)] : [.fetch(HostCache.Waiting(before: state))]
        }

        var state: CacheState {
            CacheState(copyConfirmedAt: purge == .hard ? nil : copyAt, failedAt: failedAt, purge: purge)
        }

        mutating func fetched(_ end: FetchEnd, startedAt: Double, now: Double) {
            switch end {
            case .updated, .confirmed:
                (copyAt, failedAt, purge) = (now, nil, .none)
            case .notModified:
                guard copyAt != nil, purge != .hard else { return }
                // A purge asked for after the fetch began (one at the same instant came first).
                let purgedSince = purgeTimes.contains { $0 > startedAt }
                (copyAt, failedAt) = (now, nil)
                if !purgedSince { purge = .none }
            case .failed:
                failedAt = now
            case .unavailable:
                break
            }
        }

        mutating func purge(soft: Bool, _ now: Double) -> [HostCache.Action] {
            purgeTimes.append(now)
            if soft {
                if purge != .hard { purge = .soft }
                return []
            }
            (purge, copyAt, failedAt) = (.hard, nil, nil)
            return [.forgetCopy]
        }
    }

    @Test(arguments: Array(UInt64(1)...UInt64(40)), [false, true])
    func randomEventsMatchTheReference(seed: UInt64, withRevalidation: Bool) {
        let c = withRevalidation ? Self.revalidating : Self.c
        var rng = SeededGenerator(seed: seed)
        var machine = HostCache()
        var model = Reference(c: c)
        var now = 1_000.0
        var started = now
        var trail: [String] = []
        for _ in 0..<200 {
            now += [0, 1, 10, 40, 120, 700][Int.random(in: 0..<6, using: &rng)]
            switch Int.random(in: 0..<100, using: &rng) {
            case 0..<40:
                let actions = machine.handle(.request(now: now), configuration: c)
                let expected = model.request(now)
                trail.append("request@\(now)")
                #expect(actions == expected, "seed \(seed): \(actions) vs model \(expected); \(trail.suffix(12))")
                #expect(machine.answerFromMemory(now: now, configuration: c) == nil || !actions.contains(.refreshInBackground))
            case 40..<65:
                let end: FetchEnd = [.updated, .confirmed, .notModified, .failed, .unavailable][Int.random(in: 0..<5, using: &rng)]
                // A fetch that began since the last (re)start; the machine knows it by its purge count then.
                let startedAt = max(started, now - [0, 1, 5][Int.random(in: 0..<3, using: &rng)])
                // A 304 only answers a conditional request: one made while a copy was held.
                if end == .notModified, model.copyAt == nil { continue }
                let purgesAtStart = model.purgeTimes.filter { $0 <= startedAt }.count
                _ = machine.handle(.fetchFinished(end, purgesAtStart: purgesAtStart, now: now), configuration: c)
                model.fetched(end, startedAt: startedAt, now: now)
                trail.append("\(end)@\(now) from \(startedAt)")
            case 65..<75:
                let soft = Bool.random(using: &rng)
                let actions = machine.handle(.purge(soft: soft), configuration: c)
                #expect(actions == model.purge(soft: soft, now), "seed \(seed): purge actions")
                trail.append(soft ? "soft purge@\(now)" : "hard purge@\(now)")
            case 75..<85:
                _ = machine.handle(.refreshFinished, configuration: c)
                model.refreshing = false
                trail.append("refresh finished")
            default:
                // Restart: rebuilt from what the store keeps.
                machine = HostCache(state: CacheState(copyConfirmedAt: machine.state.copyConfirmedAt, failedAt: machine.state.failedAt,
                                                      purge: machine.state.purge))
                model.refreshing = false
                model.purgeTimes = []
                started = now
                trail.append("restart")
            }
            #expect(machine.state == model.state, "seed \(seed): state \(machine.state) vs model \(model.state); \(trail.suffix(12))")
            #expect(machine.adminState(now: now, configuration: c) == Policy.adminState(model.state, now: now, configuration: c))
        }
    }

    /// The rules the reference cannot get wrong by construction, spelled out.
    @Test func purgeRules() {
        var cache = HostCache(state: CacheState(copyConfirmedAt: 10))
        #expect(cache.handle(.purge(soft: false), configuration: Self.c) == [.forgetCopy])
        _ = cache.handle(.purge(soft: true), configuration: Self.c)
        #expect(cache.state.purge == .hard, "a soft purge undid a hard one")
        // A 304 to a revalidation begun before a purge does not undo it.
        var revalidating = HostCache(state: CacheState(copyConfirmedAt: 10))
        let atStart = revalidating.purges
        _ = revalidating.handle(.purge(soft: true), configuration: Self.c)
        _ = revalidating.handle(.fetchFinished(.notModified, purgesAtStart: atStart, now: 31), configuration: Self.c)
        #expect(revalidating.state.purge == .soft && revalidating.state.copyConfirmedAt == 31)
        _ = revalidating.handle(.fetchFinished(.notModified, purgesAtStart: revalidating.purges, now: 33), configuration: Self.c)
        #expect(revalidating.state.purge == .none)
        // One background refresh until it is reported finished.
        var soft = HostCache(state: CacheState(copyConfirmedAt: 10, purge: .soft))
        #expect(soft.handle(.request(now: 11), configuration: Self.c) == [.serveCopy(.hitStale), .refreshInBackground])
        #expect(soft.handle(.request(now: 12), configuration: Self.c) == [.serveCopy(.hitStale)])
        _ = soft.handle(.refreshFinished, configuration: Self.c)
        #expect(soft.handle(.request(now: 13), configuration: Self.c) == [.serveCopy(.hitStale), .refreshInBackground])
    }
}
