import AASAEngine
import EdgeModel
import Foundation
import Logging
import OriginFetcher

/// The probes a server runs itself (`POST /admin/v1/probes`): at most `limit` at once, each
/// recording into the edge's store like `aasa-edge probe` does, each stoppable by id.
public final class ProbeRunner: Sendable {
    public static let defaultLimit = 8

    public let limit: Int
    let fetcher: OriginFetcher
    let store: any SnapshotStoring
    let logger: Logger
    private let lock = NSLock()
    nonisolated(unsafe) private var running: [Int64: Probe] = [:]
    /// Slots taken by probes between their admission and their first store write.
    nonisolated(unsafe) private var starting = 0

    public init(fetcher: OriginFetcher, store: any SnapshotStoring, logger: Logger, limit: Int = defaultLimit) {
        self.fetcher = fetcher
        self.store = store
        self.logger = logger
        self.limit = limit
    }

    public enum StartError: Error {
        /// `limit` probes are running.
        case busy(limit: Int)
        /// The store did not record the run.
        case store(any Error)
    }

    /// Records a run and starts observing in the background; returns its id. Throws `StartError`.
    public func start(_ configuration: ProbeConfiguration) async throws -> Int64 {
        let admitted = lock.withLock { () -> Bool in
            guard running.count + starting < limit else { return false }
            starting += 1
            return true
        }
        guard admitted else { throw StartError.busy(limit: limit) }
        let probe = Probe(configuration: configuration, fetcher: fetcher, store: store)
        let begun: (run: Int64, startedAt: Double)
        do {
            begun = try await probe.begin()
        } catch {
            lock.withLock { starting -= 1 }
            throw StartError.store(error)
        }
        lock.withLock {
            starting -= 1
            running[begun.run] = probe
        }
        logger.notice("probe started", metadata: ["probe": "\(begun.run)", "host": "\(configuration.host)", "cdn": "\(configuration.cdnURL)"])
        Task {
            do {
                let report = try await probe.observe(run: begun.run, startedAt: begun.startedAt)
                logger.notice("probe ended", metadata: ["probe": "\(begun.run)", "converged": "\(ProbeAnalysis.converged(report.changes))"])
            } catch {
                logger.error("probe stopped: the store refused an observation", metadata: ["probe": "\(begun.run)", "error": "\(error)"])
            }
            self.lock.withLock { _ = self.running.removeValue(forKey: begun.run) }
        }
        return begun.run
    }

    /// Asks a running probe to stop after its current observation; false when it is not running here.
    public func stop(_ id: Int64) -> Bool {
        guard let probe = lock.withLock({ running[id] }) else { return false }
        probe.stop()
        return true
    }

    public func isRunning(_ id: Int64) -> Bool { lock.withLock { running[id] != nil } }

    /// Stops every probe (the server is shutting down).
    public func stopAll() {
        for probe in lock.withLock({ Array(running.values) }) { probe.stop() }
    }
}
