import CachePolicy
import Foundation
import Logging
import SnapshotStore

/// Which version was served, when, to which client: recorded for the propagation ledger without
/// slowing the hot path. Requests append to a bounded buffer; a background task writes it to the
/// store in one transaction about once a second.
final class ServedLedger: Sendable {
    /// Events beyond this many unwritten ones are dropped (and counted) rather than growing memory.
    static let capacity = 100_000

    private let store: SnapshotStore
    private let logger: Logger
    private let buffer = Locked<(events: [ServedEvent], dropped: Int)>(([], 0))
    private let writer = Locked<Task<Void, Never>?>(nil)

    /// Served events older than this many seconds are deleted (checked every ten minutes).
    private let retention: Double

    init(store: SnapshotStore, logger: Logger, retention: Double, clock: any WallClock) {
        self.store = store
        self.logger = logger
        self.retention = retention
        let task = Task { [weak self] in
            var ticks = 0
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                self?.flush()
                ticks += 1
                if ticks % 600 == 1 { self?.prune(now: clock.now()) }
            }
        }
        writer.withLock { $0 = task }
    }

    func record(host: String, version: Int, at: Double, client: String) {
        buffer.withLock { state in
            if state.events.count < Self.capacity {
                state.events.append(ServedEvent(host: host, version: version, at: at, client: client))
            } else {
                state.dropped += 1
            }
        }
    }

    /// Writes the buffered events now.
    func flush() {
        let (events, dropped) = buffer.withLock { state -> ([ServedEvent], Int) in
            defer { state = ([], 0) }
            return state
        }
        if dropped > 0 { logger.warning("served-event buffer full; events dropped", metadata: ["dropped": "\(dropped)"]) }
        guard !events.isEmpty else { return }
        do {
            try store.recordServed(events)
        } catch {
            logger.error("store write failed; served events lost", metadata: ["events": "\(events.count)", "error": "\(error)"])
        }
    }

    func prune(now: Double) {
        do {
            let removed = try store.pruneServed(before: now - retention)
            if removed > 0 { logger.info("ledger retention", metadata: ["removed": "\(removed)"]) }
        } catch {
            logger.error("ledger retention failed", metadata: ["error": "\(error)"])
        }
    }

    func close() async {
        writer.withLock { $0?.cancel() }
        flush()
    }
}
