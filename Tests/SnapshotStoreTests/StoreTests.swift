import EdgeModel
import Foundation
import GRDB
@testable import SnapshotStore
import Testing

@Suite struct StoreTests {
    func temporaryStore() throws -> (SnapshotStore, String) {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("store-\(UUID().uuidString)/nested/edge.sqlite").path
        return (try SnapshotStore(path: path), path)
    }

    func success(_ store: SnapshotStore, _ body: String, at: Double, host: String = "a.test") async throws -> RecordedFetch {
        try await store.recordSuccess(host: host, body: Array(body.utf8), sha256: "sha-" + body, etag: "\"e\"", lastModified: nil,
                                      contentType: "application/json", cacheControl: nil, valid: true, diagnostics: "[]",
                                      appIDs: ["ABCDE12345.com.a"], fetch: FetchRecord(at: at, status: 200, durationMs: 1, trigger: "test"))
    }

    @Test func versionsAreConsecutiveAndContentAddressed() async throws {
        let (store, _) = try temporaryStore()
        #expect(try await success(store, "one", at: 1) == RecordedFetch(change: .updated, version: 1, previousVersion: nil))
        #expect(try await success(store, "one", at: 2) == RecordedFetch(change: .unchanged, version: 1, previousVersion: 1))
        #expect(try await success(store, "two", at: 3) == RecordedFetch(change: .updated, version: 2, previousVersion: 1))
        // Back to earlier bytes: that version is current again, no new version.
        #expect(try await success(store, "one", at: 4) == RecordedFetch(change: .updated, version: 1, previousVersion: 2))
        #expect(try store.versions(host: "a.test") == [1, 2])
        let (host, snapshot) = try #require(try store.host("a.test"))
        #expect(host.currentVersion == 1 && host.confirmedAt == 4)
        #expect(snapshot?.body == Array("one".utf8) && snapshot?.firstFetchedAt == 1 && snapshot?.lastConfirmedAt == 4)
        #expect(try store.fetches(host: "a.test").map(\.outcome) == ["updated", "updated", "unchanged", "updated"])
        #expect(try store.fetches(host: "a.test", limit: 1).map(\.version) == [1])
        #expect(try store.snapshots(host: "a.test").map(\.version) == [2, 1])
        #expect(try store.snapshot(host: "a.test", version: 2)?.body == Array("two".utf8))
        #expect(try store.snapshot(host: "a.test", version: 3) == nil)
    }

    @Test func failureNeverReplacesTheGoodSnapshot() async throws {
        let (store, _) = try temporaryStore()
        _ = try await success(store, "good", at: 1)
        let failed = try await store.recordFailure(host: "a.test", reason: "SWCERR00301 Timeout", details: #"{"cause":"x"}"#,
                                             fetch: FetchRecord(at: 2, status: nil, durationMs: 5000, trigger: "test", failureUntil: 32))
        #expect(try store.ttlMetadata(host: "a.test").failureUntil == 32)
        #expect(failed == RecordedFetch(change: .failed, version: 1, previousVersion: 1))
        let (host, snapshot) = try #require(try store.host("a.test"))
        #expect(snapshot?.body == Array("good".utf8))
        #expect(host.failure == StoredFailure(reason: "SWCERR00301 Timeout", details: #"{"cause":"x"}"#, at: 2))
        _ = try await store.recordNotModified(host: "a.test", fetch: FetchRecord(at: 3, status: 304, durationMs: 1, trigger: "test", expiresAt: 63),
                                        startedAt: 2.9)
        #expect(try store.host("a.test")?.0.failure == nil)
        #expect(try store.ttlMetadata(host: "a.test").expiresAt == 63)
        #expect(try store.ttlMetadata(host: "a.test").failureUntil == nil)
    }

    @Test func purgeAndReopen() async throws {
        let (store, path) = try temporaryStore()
        #expect(try store.purge(host: "unknown.test", hard: true) == false)
        _ = try await success(store, "x", at: 1)
        #expect(try store.purge(host: "a.test", hard: false, at: 2) == true)
        #expect(try store.host("a.test")?.0.purge == "soft")
        _ = try await store.recordNotModified(host: "a.test", fetch: FetchRecord(at: 9, status: 304, durationMs: 1, trigger: "test"), startedAt: 8)
        #expect(try store.host("a.test")?.0.purge == "none")
        #expect(try store.host("a.test")?.0.confirmedAt == 9)
        let reopened = try SnapshotStore(path: path)
        #expect(try reopened.host("a.test")?.1?.version == 1)
        #expect(try reopened.hosts().map(\.appIDs) == [["ABCDE12345.com.a"]])
        #expect(try reopened.integrityCheck())
    }

    /// A 304 to a revalidation that began before a purge does not undo the purge in the store
    /// (before, it reset the purge to none, and a restart served the purged copy again).
    @Test func purgeDuringARevalidationStands() async throws {
        let (store, path) = try temporaryStore()
        _ = try await success(store, "x", at: 1)
        #expect(try store.purge(host: "a.test", hard: true, at: 5) == true)
        _ = try await store.recordNotModified(host: "a.test", fetch: FetchRecord(at: 6, status: 304, durationMs: 2000, trigger: "test"), startedAt: 4)
        #expect(try SnapshotStore(path: path).host("a.test")?.0.purge == "hard")
        _ = try await store.recordNotModified(host: "a.test", fetch: FetchRecord(at: 8, status: 304, durationMs: 1, trigger: "test"), startedAt: 5)
        #expect(try SnapshotStore(path: path).host("a.test")?.0.purge == "none")
    }

    /// The store file, and the WAL files SQLite makes beside it, are readable by their owner only.
    @Test func storeFilesAreOwnerOnly() async throws {
        let (store, path) = try temporaryStore()
        _ = try await success(store, "x", at: 1)
        for file in [path, path + "-wal", path + "-shm"] {
            let mode = try #require(try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int)
            #expect(mode & 0o077 == 0, "\(file) has mode \(String(mode, radix: 8))")
        }
    }

    /// Fetch records that arrive together share transactions (group commit), each is durable once
    /// its caller resumes, and one write that fails leaves the others of its batch committed.
    @Test func concurrentRecordsShareTransactionsAndFailAlone() async throws {
        let (store, path) = try temporaryStore()
        let writes = 300
        let results = try await withThrowingTaskGroup(of: RecordedFetch.self) { group in
            for index in 0..<writes {
                group.addTask { try await success(store, "body-\(index)", at: Double(index), host: "h\(index).test") }
            }
            for index in 0..<20 {
                group.addTask {
                    do {
                        _ = try await store.commits.write { db -> RecordedFetch in
                            try db.execute(sql: "INSERT INTO host (name) VALUES ('doomed\(index).test')")
                            try db.execute(sql: "INSERT INTO no_such_table VALUES (1)")
                            return RecordedFetch(change: .updated, version: nil, previousVersion: nil)
                        }
                        Issue.record("a write into a missing table succeeded")
                    } catch {}
                    return RecordedFetch(change: .failed, version: nil, previousVersion: nil)
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        let recorded = results.filter { $0.change == .updated && $0.version == 1 }
        #expect(recorded.count == writes)
        #expect(store.commits.transactions < writes, "\(store.commits.transactions) transactions for \(writes) writes")
        // What the callers were told is on disk, for a new reader: every record, none of the failed writes.
        let reopened = try SnapshotStore(path: path)
        for index in [0, writes / 2, writes - 1] {
            #expect(try reopened.host("h\(index).test")?.0.currentVersion == 1)
        }
        #expect(try reopened.host("doomed0.test") == nil)
    }
}

/// Several openers of one new store at once (an edge and probes started together): each one
/// opens it (no "database is locked" from the switch to WAL, no "table already exists" from two
/// migrators) and finds the whole schema.
@Suite struct ConcurrentOpenTests {
    @Test func openersOfANewStoreAllSucceed() throws {
        for round in 0..<10 {
            let path = FileManager.default.temporaryDirectory.appendingPathComponent("open-race-\(UUID().uuidString)/s.sqlite").path
            let errors = NSLock()
            nonisolated(unsafe) var failures: [String] = []
            DispatchQueue.concurrentPerform(iterations: 4) { _ in
                do {
                    let store = try SnapshotStore(path: path)
                    _ = try store.probeRunList(limit: 1)
                } catch {
                    errors.withLock { failures.append("\(error)") }
                }
            }
            #expect(failures.isEmpty, "round \(round): \(failures)")
        }
    }

}
