import EdgeModel
import AASAEngine
import CachePolicy
import EdgeCore
import Foundation
import Logging
import OriginFetcher
import SnapshotStore
import Testing

/// The edge's behaviour in-process, against a fake origin and a test clock (no sleeps, no
/// sockets): outcomes, revalidation, stale-if-error, the failure TTL, purges, coalescing,
/// releases and restarts. Every test runs twice: on the in-memory store and on SQLite.
@Suite struct EdgeBehaviourTests {
    enum StoreKind: String, CaseIterable, Sendable {
        case memory, sqlite

        func make() throws -> any SnapshotStoring {
            switch self {
            case .memory: return InMemoryStore()
            case .sqlite:
                let path = FileManager.default.temporaryDirectory.appendingPathComponent("edge-core-\(UUID().uuidString)/store.sqlite").path
                return try SnapshotStore(path: path)
            }
        }
    }

    static let ttl = CacheConfiguration(ttl: 100, failureTTL: 30, staleIfError: 500)
    static let app = "ABCDE12345.com.example.app"
    static func body(_ path: String) -> String { #"{"applinks":{"details":[{"appIDs":["\#(app)"],"components":[{"/":"\#(path)"}]}]}}"# }

    struct Harness {
        let store: any SnapshotStoring
        let origin = FakeOrigin()
        let clock = TestClock()
        var edge: Edge

        init(_ kind: StoreKind) throws {
            store = try kind.make()
            edge = Self.edge(store: store, origin: origin, clock: clock)
        }

        static func edge(store: any SnapshotStoring, origin: FakeOrigin, clock: TestClock) -> Edge {
            Edge(configuration: EdgeConfiguration(cache: EdgeBehaviourTests.ttl), store: store, fetcher: origin, clock: clock,
                 logger: Logger(label: "test"))
        }

        /// A new edge on the same store: memory is gone, the store is not.
        mutating func restart() async {
            await edge.close()
            edge = Self.edge(store: store, origin: origin, clock: clock)
        }

        func get(_ name: String) async -> (outcome: CacheOutcome, version: Int?, status: String) {
            switch await edge.serve(try! OriginHost(name)) {
            case .copy(let snapshot, _, let outcome, let cacheStatus): return (outcome, snapshot.version, cacheStatus)
            case .failure(let failure, _, let outcome, _): return (outcome, nil, failure.reason)
            case .unavailable: return (.unavailable, nil, "")
            case .loopDetected: return (.rejected, nil, "508")
            }
        }
    }

    @Test(arguments: StoreKind.allCases)
    func missHitRevalidateUpdate(kind: StoreKind) async throws {
        var h = try Harness(kind)
        h.origin.set("a.test", .body(Self.body("/one/*"), etag: "\"e1\""))
        #expect(await h.get("a.test").outcome == .miss)
        #expect(await h.get("a.test") == (.hitFresh, 1, "aasa-edge; hit; ttl=100"))
        h.clock.advance(100)
        let revalidated = await h.get("a.test")
        #expect(revalidated.outcome == .revalidated && revalidated.version == 1)
        #expect(h.origin.validators("a.test")?.etag == "\"e1\"", "the revalidation was not conditional")
        h.origin.set("a.test", .body(Self.body("/two/*"), etag: "\"e2\""))
        h.clock.advance(100)
        #expect(await h.get("a.test") == (.miss, 2, "aasa-edge; fwd=uri-miss; stored"))
        #expect(h.origin.count("a.test") == 3)
        await h.restart()
        #expect(await h.get("a.test").version == 2, "the copy was not read back from the store")
        await h.edge.close()
    }

    @Test(arguments: StoreKind.allCases)
    func staleIfErrorAndTheFailureTTL(kind: StoreKind) async throws {
        let h = try Harness(kind)
        h.origin.set("b.test", .body(Self.body("/x"), etag: nil))
        _ = await h.get("b.test")
        h.clock.advance(150)
        h.origin.set("b.test", .status(500))
        #expect(await h.get("b.test").outcome == .hitStale)  // the origin failed: the last good copy
        #expect(await h.get("b.test").outcome == .hitStale)  // the failure is cached: no fetch
        #expect(h.origin.count("b.test") == 2)
        h.clock.advance(31)
        #expect(await h.get("b.test").outcome == .hitStale)  // failure expired: asked again, still failing
        #expect(h.origin.count("b.test") == 3)
        h.clock.advance(600)  // past ttl + stale-if-error
        let failed = await h.get("b.test")
        #expect(failed.outcome == .failureMiss && failed.status.hasPrefix("SWCERR00101"))
        #expect(await h.get("b.test").outcome == .failureHit)
        // A host that never had a copy: the failure, then the cached failure.
        #expect(await h.get("c.test").outcome == .failureMiss)
        #expect(await h.get("c.test").outcome == .failureHit)
        #expect(h.origin.count("c.test") == 1)
        await h.edge.close()
    }

    @Test(arguments: StoreKind.allCases)
    func hardAndSoftPurges(kind: StoreKind) async throws {
        var h = try Harness(kind)
        h.origin.set("p.test", .body(Self.body("/x"), etag: "\"p\""))
        _ = await h.get("p.test")
        #expect(await h.edge.purge(try OriginHost("p.test"), soft: false) == true)
        #expect(await h.get("p.test").outcome == .miss, "a hard purge must make the next request a miss")
        #expect(h.origin.validators("p.test") == nil, "after a hard purge the fetch must not be conditional")
        // Soft: served stale at once, refreshed once in the background however many ask.
        #expect(await h.edge.purge(try OriginHost("p.test"), soft: true) == true)
        h.origin.hold()
        for _ in 0..<20 { #expect(await h.get("p.test").outcome == .hitStale) }
        for _ in 0..<200 where h.origin.held == 0 { await Task.yield(); try await Task.sleep(nanoseconds: 1_000_000) }
        #expect(h.origin.held == 1, "one background refresh expected, \(h.origin.held) in flight")
        h.origin.release()
        for _ in 0..<500 where await h.edge.domain(try OriginHost("p.test"))?.state == "purged" { try await Task.sleep(nanoseconds: 1_000_000) }
        #expect(await h.get("p.test").outcome == .hitFresh)
        #expect(h.origin.count("p.test") == 3)
        // A hard purge survives a restart; a soft purge after it does not undo it.
        #expect(await h.edge.purge(try OriginHost("p.test"), soft: false) == true)
        #expect(await h.edge.purge(try OriginHost("p.test"), soft: true) == true)
        await h.restart()
        h.origin.set("p.test", .status(503))
        #expect(await h.get("p.test").outcome == .failureMiss, "the hard-purged copy came back after a restart")
        #expect(await h.edge.purge(try OriginHost("unknown.test"), soft: false) == nil)
        await h.edge.close()
    }

    @Test(arguments: StoreKind.allCases)
    func concurrentColdRequestsShareOneFetch(kind: StoreKind) async throws {
        let h = try Harness(kind)
        h.origin.set("c.test", .body(Self.body("/x"), etag: nil))
        h.origin.hold()
        let edge = h.edge
        async let answers = withTaskGroup(of: CacheOutcome.self) { group in
            for _ in 0..<50 {
                group.addTask {
                    if case .copy(_, _, let outcome, _) = await edge.serve(try! OriginHost("c.test")) { return outcome }
                    return .rejected
                }
            }
            return await group.reduce(into: [CacheOutcome]()) { $0.append($1) }
        }
        for _ in 0..<500 where h.origin.held == 0 { try await Task.sleep(nanoseconds: 1_000_000) }
        try await Task.sleep(nanoseconds: 20_000_000)
        h.origin.release()
        let outcomes = await answers
        #expect(outcomes.count == 50 && outcomes.allSatisfy { $0 == .miss })
        #expect(h.origin.count("c.test") == 1, "\(h.origin.count("c.test")) fetches for 50 concurrent requests")
        await h.edge.close()
    }

    @Test(arguments: StoreKind.allCases)
    func releaseRefetchesTheHostsNamingTheApp(kind: StoreKind) async throws {
        let h = try Harness(kind)
        for name in ["r1.test", "r2.test"] { h.origin.set(name, .body(Self.body("/v1/*"), etag: nil)) }
        h.origin.set("other.test", .body(#"{"webcredentials":{"apps":["ZZZZZ99999.com.other"]}}"#, etag: nil))
        for name in ["r1.test", "r2.test", "other.test"] { _ = await h.get(name) }
        h.origin.set("r1.test", .body(Self.body("/v2/*"), etag: nil))
        let (results, skipped) = await h.edge.release(appIDs: ["abcde12345.com.example.app"], hosts: [])
        #expect(skipped.isEmpty)
        #expect(Dictionary(uniqueKeysWithValues: results.map { ($0.host.description, $0.outcome) }) == ["r1.test": "updated", "r2.test": "unchanged"])
        #expect(h.origin.count("other.test") == 1)
        #expect(await h.get("r1.test").version == 2)
        await h.edge.close()
    }

    /// Behind a parent edge (tiers): the parent's Age counts against this edge's TTL (its copy is
    /// as old as the parent says, here and after a restart), and the parent's X-Cache and Via
    /// stay with the copy.
    @Test(arguments: StoreKind.allCases)
    func aParentsAgeCountsAgainstTheTTL(kind: StoreKind) async throws {
        var h = try Harness(kind)
        h.origin.set("t.test", .parentCopy(Self.body("/x"), age: 60, xCache: "hit-fresh", via: "1.1 top (aasa-edge/test)"))
        guard case .copy(let snapshot, let age, .miss, _) = await h.edge.serve(try OriginHost("t.test")) else {
            Issue.record("not a miss")
            return
        }
        #expect(age == 60)
        #expect(snapshot.upstream == UpstreamHeaders(xCache: "hit-fresh", via: "1.1 top (aasa-edge/test)"))
        #expect(await h.get("t.test") == (.hitFresh, 1, "aasa-edge; hit; ttl=40"), "100 s TTL less the parent's 60 s")
        await h.restart()
        guard case .copy(let restored, let restoredAge, .hitFresh, _) = await h.edge.serve(try OriginHost("t.test")) else {
            Issue.record("not a hit after the restart")
            return
        }
        #expect(restoredAge == 60 && restored.upstream?.xCache == "hit-fresh")
        h.clock.advance(40)
        #expect(await h.get("t.test").outcome == .revalidated, "expired 40 s later: asked again")
        #expect(h.origin.count("t.test") == 2)
        await h.edge.close()
    }
}
