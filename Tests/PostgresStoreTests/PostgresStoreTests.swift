import EdgeModel
import Foundation
import PostgresStore
import SnapshotStore
import TestOrigin
import Testing

/// Takes changes from a store's feed until `count` arrived or `seconds` passed.
func changes(_ store: PostgresStore, count: Int, within seconds: Double = 10) async -> [StoreChange] {
    await withTaskGroup(of: [StoreChange].self) { group in
        group.addTask {
            var seen: [StoreChange] = []
            for await change in store.changes {
                seen.append(change)
                if seen.count == count { break }
            }
            return seen
        }
        group.addTask {
            try? await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
            return []
        }
        var result: [StoreChange] = []
        for await part in group {
            result = part
            group.cancelAll()
            break
        }
        return result
    }
}

@Suite struct PostgresLocationTests {
    @Test func parsesTheContractForm() throws {
        let location = try PostgresLocation(url: "postgres://edge@db.lab:6543/aasa?sslmode=disable")
        #expect(location.user == "edge" && location.host == "db.lab" && location.port == 6543 && location.database == "aasa")
        #expect(location.tls == .disable)
        #expect(try PostgresLocation(url: "postgresql://u@[::1]/d").host == "::1")
        #expect(try PostgresLocation(url: "postgres://u@h/d").port == 5432)
        #expect(try PostgresLocation(url: "postgres://u@h/d").description == "postgres://u@h:5432/d")
    }

    @Test func refusesPasswordsAndIncompleteURLs() {
        for bad in ["postgres://u:secret@h/d", "postgres://h/d", "postgres://u@h/", "postgres://u@h/d?x=1", "postgres://u@h/d?sslmode=maybe",
                    "mysql://u@h/d"] {
            #expect(throws: PostgresLocation.Invalid.self, "\(bad)") { try PostgresLocation(url: bad) }
        }
        do {
            _ = try PostgresLocation(url: "postgres://u:secret@h/d")
        } catch {
            #expect(!error.description.contains("secret"), "the password never appears in the error")
        }
    }
}

@Suite struct PostgresStoreTests {
    @Test func everyCommittedChangeIsAnnouncedToEveryEdge() async throws {
        let url = try TestPostgres.server().database()
        let a = try await PostgresFixture.store(url: url, node: "a")
        let b = try await PostgresFixture.store(url: url, node: "b")
        defer { Task { await a.close(); await b.close() } }
        try await success(a, "one", at: 1, host: "x.test")
        #expect(try await a.purge(host: "x.test", hard: false, at: 2))
        #expect(try await a.purge(host: "x.test", hard: true, at: 3))
        _ = try await a.recordFailure(host: "x.test", reason: "SWCERR00301 Timeout", details: "{}", fetch: fetch(at: 4, status: nil))
        let seen = await changes(b, count: 4)
        #expect(seen.map(\.kind) == [.fetched, .purgeSoft, .purgeHard, .fetched])
        #expect(seen.allSatisfy { $0.host == "x.test" && $0.node == "a" })
        #expect(seen.map(\.id) == seen.map(\.id).sorted())
        // A purge of an unknown host changes nothing and announces nothing.
        #expect(try await a.purge(host: "unknown.test", hard: true, at: 5) == false)
    }

    @Test func changesMissedWhileDisconnectedAreDeliveredOnReconnection() async throws {
        // A server of its own: this test stops it.
        let server = try TestPostgres()
        let url = try server.database()
        let database = TestPostgres.name(ofURL: url)
        let listener = try await PostgresFixture.store(url: url, node: "listener")
        defer { Task { await listener.close() } }
        try await success(listener, "one", at: 1, host: "x.test")
        #expect(await changes(listener, count: 1).count == 1)

        server.stop()
        #expect(await eventuallyAsync { !listener.isAvailable }, "the listener notices the outage")
        await #expect(throws: (any Error).self, "calls fail at once while the store is down") { try await listener.host("x.test") }
        try await Task.sleep(for: .milliseconds(3300))  // its next reconnection is ~3 s away (backoff 0.1, 0.2, … 3.2 s)
        try server.start()
        // Another edge commits a purge while this one is still waiting to reconnect: the
        // notification goes to nobody, and the listener must read it from the change log.
        try server.psql("""
            WITH c AS (INSERT INTO change (host, kind, node, at) VALUES ('x.test', 'purge-hard', 'writer', 2) RETURNING id)
            SELECT pg_notify('aasa_edge', c.id::TEXT || ' purge-hard writer x.test') FROM c
            """, database: database)
        let missedLive = !listener.isAvailable
        let seen = await changes(listener, count: 1)
        #expect(seen.map(\.kind) == [.purgeHard] && seen.first?.node == "writer", "the purge committed during the outage arrives: \(seen)")
        #expect(missedLive, "the commit landed while the listener was away (so it came from the change log)")
        #expect(await eventuallyAsync { listener.isAvailable })
    }

    @Test func anEdgeThatMissedPrunedChangesIsToldToResync() async throws {
        let server = try TestPostgres()  // of its own: this test stops it
        let url = try server.database()
        let listener = try await PostgresFixture.store(url: url, node: "listener")
        defer { Task { await listener.close() } }
        try await success(listener, "one", at: 1, host: "x.test")
        #expect(await changes(listener, count: 1).map(\.kind) == [.fetched])
        server.stop()
        #expect(await eventuallyAsync { !listener.isAvailable })
        try await Task.sleep(for: .milliseconds(3300))  // its next reconnection is ~3 s away (backoff 0.1, 0.2, … 3.2 s)
        try server.start()
        // While it was away, changes newer than the last it heard were pruned from the log.
        try server.psql("UPDATE change_pruned SET upto = (SELECT MAX(id) FROM change) + 10", database: TestPostgres.name(ofURL: url))
        let seen = await changes(listener, count: 1)
        #expect(seen.map(\.kind) == [.resync], "it cannot know what it missed: it must drop what it holds")
    }

    @Test func oneEdgeAtATimeClaimsAFetch() async throws {
        let url = try TestPostgres.server().database()
        let a = try await PostgresFixture.store(url: url, node: "a", listen: false)
        let b = try await PostgresFixture.store(url: url, node: "b", listen: false)
        defer { Task { await a.close(); await b.close() } }
        #expect(try await a.claimFetch(host: "x.test", since: 10, until: 20) == .claimed)
        #expect(try await b.claimFetch(host: "x.test", since: 10, until: 20) == .busy)
        #expect(try await a.claimFetch(host: "x.test", since: 10, until: 20) == .claimed, "a claim is renewed by its holder")
        // The holder records its result, then ends its claim: a later claimer finds it done.
        try await success(a, "one", at: 11, host: "x.test")
        #expect(try await b.claimFetch(host: "x.test", since: 10, until: 20) == .done, "recorded since b looked, even while a still holds it")
        try await a.endFetch(host: "x.test")
        #expect(try await b.claimFetch(host: "x.test", since: 10, until: 20) == .done)
        #expect(try await b.claimFetch(host: "x.test", since: 12, until: 22) == .claimed, "nothing newer than b's look: b fetches")
        // An expired claim (its holder died) can be taken over.
        #expect(try await a.claimFetch(host: "y.test", since: 30, until: 31) == .claimed)
        #expect(try await b.claimFetch(host: "y.test", since: 32, until: 40) == .claimed)
    }

    @Test func nodesAreListedOncePerName() async throws {
        let url = try TestPostgres.server().database()
        let a = try await PostgresFixture.store(url: url, node: "a", listen: false)
        let b = try await PostgresFixture.store(url: url, node: "b", listen: false)
        defer { Task { await a.close(); await b.close() } }
        try await a.heartbeat(startedAt: 100, at: 100, version: "1.0")
        try await b.heartbeat(startedAt: 50, at: 60, version: "1.0")
        try await a.heartbeat(startedAt: 200, at: 200, version: "1.1")  // restarted
        #expect(try await a.nodes(seenSince: 0) == [NodeRecord(node: "a", startedAt: 200, lastSeenAt: 200, version: "1.1"),
                                                    NodeRecord(node: "b", startedAt: 50, lastSeenAt: 60, version: "1.0")])
        #expect(try await a.nodes(seenSince: 100).map(\.node) == ["a"])
    }

    @Test func copyFromSQLiteIsIdempotentAndStopsOnConflict() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("copy-\(UUID().uuidString)/edge.sqlite").path
        let source = try SnapshotStore(path: path)
        try await success(source, "one", at: 1, host: "a.test")
        try await success(source, "two", at: 2, host: "a.test")
        _ = try await source.recordFailure(host: "b.test", reason: "SWCERR00201 DNS Failure", details: "{}", fetch: fetch(at: 3, status: nil))
        try source.recordServed([ServedEvent(host: "a.test", version: 2, at: 4, client: "phone")])
        let run = try source.startProbeRun(host: "a.test", cdnURL: "https://cdn/a/v1/a.test", interval: 5, at: 5)
        try source.recordProbeObservation(run: run, ProbeRecord(at: 6, source: "origin", status: 200, sha256: "s", canonicalSha256: "c", age: nil,
                                                                cacheControl: nil, xCache: nil, failureReason: nil, failureDetails: nil,
                                                                error: nil, durationMs: 3))
        try source.endProbeRun(run, at: 7, state: "converged")
        let running = try source.startProbeRun(host: "b.test", cdnURL: "https://cdn/a/v1/b.test", interval: 5, at: 8)
        let url = try TestPostgres.server().database()
        let target = try await PostgresFixture.store(url: url, node: "copy", listen: false)
        defer { Task { await target.close() } }

        func copyAll() async throws -> CopyCounts {
            var counts = CopyCounts()
            for host in try source.hosts() { counts += try await target.importHost(try #require(try source.export(host: host.name))) }
            for run in try source.probeRuns() where try await target.importProbeRun(run) { counts.probes += 1 }
            return counts
        }
        let first = try await copyAll()
        #expect(first.hosts == 2 && first.versions == 2 && first.fetches == 3 && first.ledger == 1 && first.probes == 2)
        // A run keeps how it ended (before: every copied run read as "finished", with no end).
        let copied = try await target.probeRunList(limit: 10).sorted { $0.startedAt < $1.startedAt }
        #expect(copied.map(\.state) == ["converged", "running"] && copied.map(\.endedAt) == [7, nil], "\(copied) (source run \(running))")
        #expect(try await copyAll() == CopyCounts(), "a second run adds nothing")
        let (host, snapshot) = try #require(try await target.host("a.test"))
        #expect(host.currentVersion == 2 && snapshot?.body == Array("two".utf8))
        #expect(try await target.host("b.test")?.0.failure?.reason == "SWCERR00201 DNS Failure")
        #expect(try await target.served(host: "a.test").map(\.client) == ["phone"])
        #expect(try await target.fetches(host: "a.test", limit: 10).map(\.at) == [2, 1])

        // New rows in the source are added; a version with other bytes in the target stops the copy.
        try await success(source, "three", at: 7, host: "a.test")
        #expect(try await copyAll().versions == 1)
        try await success(target, "other", at: 8, host: "c.test")
        try await success(source, "mine", at: 9, host: "c.test")
        await #expect(throws: PostgresStoreError.conflict(host: "c.test", version: 1)) { _ = try await copyAll() }
    }
}

func eventuallyAsync(_ seconds: Double = 10, _ condition: () async -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    while ContinuousClock.now < deadline {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(50))
    }
    return await condition()
}
