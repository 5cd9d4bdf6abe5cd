import Dispatch
import Foundation
import GRDB

/// Group commit for the fetch-record writes: the writes that arrive while a transaction runs wait
/// and are committed together in the next one, each inside its own savepoint (one write that fails
/// rolls back alone), on a thread of its own. A caller resumes only once its write is committed, so
/// what it is told is durable as before; a release that finishes many fetches at once pays for
/// one commit per batch instead of one per fetch, and no task of the cooperative pool waits on
/// SQLite's writer lock.
final class GroupCommit: @unchecked Sendable {
    /// Writes in one transaction at most (a long transaction holds readers of the WAL back).
    static let maximumBatch = 256

    private struct Job {
        /// Runs the write in the open transaction and keeps its result.
        let run: (Database) -> Void
        /// Resumes the caller: with the kept result, or with the commit's error.
        let finish: ((any Error)?) -> Void
    }

    private let pool: DatabasePool
    private let queue = DispatchQueue(label: "aasa-edge.store.group-commit")
    private let lock = NSLock()
    private var pending: [Job] = []
    private var draining = false
    private var committed = 0

    /// Transactions committed so far (tests read it).
    var transactions: Int { lock.withLock { committed } }

    init(pool: DatabasePool) {
        self.pool = pool
    }

    /// Runs `body` in a transaction shared with the writes pending beside it.
    func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            let outcome = Outcome<T>()
            let job = Job(run: { db in
                do {
                    var value: T?
                    try db.inSavepoint {
                        value = try body(db)
                        return .commit
                    }
                    outcome.result = value.map { .success($0) }
                } catch {
                    outcome.result = .failure(error)
                }
            }, finish: { commitError in
                if let commitError {
                    continuation.resume(throwing: commitError)
                } else {
                    continuation.resume(with: outcome.result ?? .failure(DatabaseError(message: "the write returned nothing")))
                }
            })
            lock.lock()
            pending.append(job)
            let start = !draining
            draining = true
            lock.unlock()
            if start { queue.async { self.drain() } }
        }
    }

    private func drain() {
        while true {
            lock.lock()
            let batch = Array(pending.prefix(Self.maximumBatch))
            pending.removeFirst(batch.count)
            if batch.isEmpty { draining = false }
            lock.unlock()
            guard !batch.isEmpty else { return }
            do {
                try pool.write { db in
                    for job in batch { job.run(db) }
                }
                lock.withLock { committed += 1 }
                for job in batch { job.finish(nil) }
            } catch {
                for job in batch { job.finish(error) }
            }
        }
    }

    /// A write's result, set on the writer's thread before the caller resumes.
    private final class Outcome<T>: @unchecked Sendable {
        var result: Result<T, any Error>?
    }
}
