import EdgeModel
import Foundation
import Logging
import PostgresStore
import SnapshotStore
import TestOrigin
import Testing

/// The two stores behind `SnapshotStoring`: the embedded SQLite one and PostgreSQL (a real server
/// on loopback, a database per test).
enum StoreKind: String, CaseIterable, CustomTestStringConvertible {
    case sqlite, postgres
    var testDescription: String { rawValue }

    func make(node: String = "test-node") async throws -> any SnapshotStoring {
        switch self {
        case .sqlite:
            let path = FileManager.default.temporaryDirectory.appendingPathComponent("suite-\(UUID().uuidString)/edge.sqlite").path
            return try SnapshotStore(path: path)
        case .postgres:
            return try await PostgresFixture.store(url: try TestPostgres.server().database(), node: node)
        }
    }
}

enum PostgresFixture {
    static let logger = Logger(label: "test")

    static func store(url: String, node: String, listen: Bool = true) async throws -> PostgresStore {
        let store = try PostgresStore(location: try PostgresLocation(url: url), password: nil, node: node, maxConnections: 4, logger: logger)
        try await store.start(waitingUpTo: 10, listen: listen)
        return store
    }
}

func fetch(at: Double, status: Int? = 200, trigger: String = "test", expiresAt: Double? = nil) -> FetchRecord {
    FetchRecord(at: at, status: status, durationMs: 1, trigger: trigger, expiresAt: expiresAt)
}

@discardableResult
func success(_ store: any SnapshotStoring, _ body: String, at: Double, host: String = "a.test",
             appIDs: [String] = ["ABCDE12345.com.a"]) async throws -> RecordedFetch {
    try await store.recordSuccess(host: host, body: Array(body.utf8), sha256: "sha-" + body, etag: "\"e\"", lastModified: nil,
                                  contentType: "application/json", cacheControl: nil, valid: true, diagnostics: "[]",
                                  appIDs: appIDs, fetch: fetch(at: at))
}

/// One suite, both stores: what the edge relies on from any `SnapshotStoring`.
@Suite struct SharedStoreSuite {
    @Test(arguments: StoreKind.allCases)
    func versionsAreConsecutiveAndContentAddressed(_ kind: StoreKind) async throws {
        let store = try await kind.make()
        #expect(try await success(store, "one", at: 1) == RecordedFetch(change: .updated, version: 1, previousVersion: nil))
        #expect(try await success(store, "one", at: 2) == RecordedFetch(change: .unchanged, version: 1, previousVersion: 1))
        #expect(try await success(store, "two", at: 3) == RecordedFetch(change: .updated, version: 2, previousVersion: 1))
        #expect(try await success(store, "one", at: 4) == RecordedFetch(change: .updated, version: 1, previousVersion: 2))
        #expect(try await store.versions(host: "a.test") == [1, 2])
        let (host, snapshot) = try #require(try await store.host("a.test"))
        #expect(host.currentVersion == 1 && host.confirmedAt == 4 && host.appIDs == ["ABCDE12345.com.a"])
        #expect(snapshot?.body == Array("one".utf8) && snapshot?.firstFetchedAt == 1 && snapshot?.lastConfirmedAt == 4)
        #expect(try await store.fetches(host: "a.test", limit: 100).map(\.outcome) == ["updated", "updated", "unchanged", "updated"])
        #expect(try await store.fetches(host: "a.test", limit: 1).map(\.version) == [1])
        #expect(try await store.snapshots(host: "a.test").map(\.version) == [2, 1])
        #expect(try await store.snapshot(host: "a.test", version: 2)?.body == Array("two".utf8))
        #expect(try await store.snapshot(host: "a.test", version: 3) == nil)
        #expect(try await store.versionCount() == 2)
        #expect(try await store.host("never.test") == nil)
    }

    @Test(arguments: StoreKind.allCases)
    func bodiesKeepEveryByte(_ kind: StoreKind) async throws {
        let store = try await kind.make()
        let bytes: [UInt8] = Array(0...255) + [0, 0, 0xFF]
        _ = try await store.recordSuccess(host: "bin.test", body: bytes, sha256: "sha-bin", etag: nil, lastModified: "Mon, 01 Jan 2024 00:00:00 GMT",
                                          contentType: nil, cacheControl: "max-age=60", valid: false, diagnostics: #"[{"code":"X"}]"#,
                                          appIDs: [], fetch: fetch(at: 1))
        let snapshot = try #require(try await store.snapshot(host: "bin.test", version: 1))
        #expect(snapshot.body == bytes && snapshot.etag == nil && snapshot.lastModified == "Mon, 01 Jan 2024 00:00:00 GMT")
        #expect(snapshot.valid == false && snapshot.diagnostics == #"[{"code":"X"}]"# && snapshot.cacheControl == "max-age=60")
    }

    @Test(arguments: StoreKind.allCases)
    func failureNeverReplacesTheGoodSnapshot(_ kind: StoreKind) async throws {
        let store = try await kind.make()
        try await success(store, "good", at: 1)
        let failed = try await store.recordFailure(host: "a.test", reason: "SWCERR00301 Timeout", details: #"{"cause":"x"}"#,
                                                   fetch: FetchRecord(at: 2, status: nil, durationMs: 5000, trigger: "test"))
        #expect(failed == RecordedFetch(change: .failed, version: 1, previousVersion: 1))
        let (host, snapshot) = try #require(try await store.host("a.test"))
        #expect(snapshot?.body == Array("good".utf8))
        #expect(host.failure == StoredFailure(reason: "SWCERR00301 Timeout", details: #"{"cause":"x"}"#, at: 2))
        _ = try await store.recordNotModified(host: "a.test", fetch: fetch(at: 3, status: 304), startedAt: 2.9)
        #expect(try await store.host("a.test")?.0.failure == nil)
        #expect(try await store.host("a.test")?.0.confirmedAt == 3)
        // A failure of a host never fetched: a host row without a version.
        _ = try await store.recordFailure(host: "new.test", reason: "SWCERR00201 DNS Failure", details: "{}", fetch: fetch(at: 4, status: nil))
        let (fresh, none) = try #require(try await store.host("new.test"))
        #expect(fresh.currentVersion == nil && none == nil && fresh.failure?.reason == "SWCERR00201 DNS Failure")
    }

    @Test(arguments: StoreKind.allCases)
    func purgeStatesAndRevalidationsThatBeganBefore(_ kind: StoreKind) async throws {
        let store = try await kind.make()
        #expect(try await store.purge(host: "unknown.test", hard: true, at: 1) == false)
        try await success(store, "x", at: 1)
        #expect(try await store.purge(host: "a.test", hard: false, at: 2) == true)
        #expect(try await store.host("a.test")?.0.purge == "soft")
        // A 304 to a question asked before the purge does not undo it; one asked after does.
        _ = try await store.recordNotModified(host: "a.test", fetch: fetch(at: 3, status: 304), startedAt: 1.5)
        #expect(try await store.host("a.test")?.0.purge == "soft")
        _ = try await store.recordNotModified(host: "a.test", fetch: fetch(at: 4, status: 304), startedAt: 3.5)
        #expect(try await store.host("a.test")?.0.purge == "none")
        #expect(try await store.purge(host: "a.test", hard: true, at: 5) == true)
        #expect(try await store.purge(host: "a.test", hard: false, at: 6) == true)
        #expect(try await store.host("a.test")?.0.purge == "hard", "a soft purge never undoes a hard one")
        try await success(store, "x", at: 7)
        #expect(try await store.host("a.test")?.0.purge == "none")
    }

    @Test(arguments: StoreKind.allCases)
    func hostPagesFollowBytewiseNameOrder(_ kind: StoreKind) async throws {
        let store = try await kind.make()
        // Punctuation and digits sort bytewise ('-' < '.' < '0' < 'a'), whatever the server's locale.
        let names = ["b.test", "a-b.test", "a.test", "a0.test", "ab.test", "x.a-b.test"]
        for (i, name) in names.enumerated() { try await success(store, "v\(i)", at: Double(i), host: name) }
        let all = try await store.hosts().map(\.name)
        #expect(all == names.sorted())
        var paged: [String] = []
        var cursor: String?
        while true {
            let page = try await store.hosts(after: cursor, containing: nil, limit: 2)
            paged += page.map(\.name)
            guard page.count == 2 else { break }
            cursor = page.last?.name
        }
        #expect(paged == all)
        #expect(try await store.hosts(after: nil, containing: "a-b", limit: 10).map(\.name) == ["a-b.test", "x.a-b.test"])
        #expect(try await store.hosts(after: "a-b.test", containing: "a-b", limit: 10).map(\.name) == ["x.a-b.test"])
    }

    @Test(arguments: StoreKind.allCases)
    func ledgerFoldsClientsBeyondTheBound(_ kind: StoreKind) async throws {
        let store = try await kind.make()
        let events = (0..<5).map { ServedEvent(host: "a.test", version: 1, at: Double($0), client: "c\($0)") }
            + [ServedEvent(host: "a.test", version: 1, at: 10, client: "c4"), ServedEvent(host: "a.test", version: 1, at: 0.5, client: "c4")]
        try await store.recordServed(events, maxClients: 3)
        let served = try await store.served(host: "a.test")
        #expect(Set(served.map(\.client)) == ["c2", "c3", "c4"], "the two least recently seen are folded")
        #expect(served.filter { $0.client == "c4" }.map(\.at) == [0.5, 10], "first and last answer of a client")
        #expect(try await store.servedOthers(host: "a.test") == [1: 2])
        try await store.recordServed([ServedEvent(host: "a.test", version: 1, at: 11, client: "c9")], maxClients: 3)
        #expect(try await store.servedOthers(host: "a.test") == [1: 3])
        #expect(try await store.pruneServed(before: 3.5) == 1)  // c3 (last seen at 3)
        #expect(Set(try await store.served(host: "a.test").map(\.client)) == ["c4", "c9"])
    }

    @Test(arguments: StoreKind.allCases)
    func readinessIsAWrite(_ kind: StoreKind) async throws {
        let store = try await kind.make()
        try await store.checkWritable(at: 1)
        try await store.checkWritable(at: 2)
    }
}
