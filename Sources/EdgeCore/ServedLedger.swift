import CachePolicy
import Foundation
import Logging
import EdgeModel
import SnapshotStore

/// Which version was served, when, to which client: recorded for the propagation ledger without
/// slowing the hot path. Requests append to a bounded buffer; a background task writes it to the
/// store in one transaction about once a second.
///
/// A client asking again for the version it was last given is recorded at most once per
/// `repeatInterval`: the propagation views need when each client first and last got each version,
/// not every hit (a busy host would otherwise write tens of thousands of rows a second).
final class ServedLedger: Sendable {
    /// Events beyond this many unwritten ones are dropped (and counted) rather than growing memory.
    static let capacity = 100_000
    /// Seconds within which a repeat of the same (host, client, version) is not recorded again.
    static let repeatInterval = 60.0
    /// Bound of the repeat filter (forgotten wholesale when reached: at worst an extra row).
    static let filterLimit = 16_384

    private struct ClientKey: Hashable {
        let host: String
        let client: String
    }

    private let store: any SnapshotStoring
    private let logger: Logger
    private struct Pending {
        var events: [ServedEvent] = []
        var dropped = 0
        /// The repeat filter: the last version recorded per (host, client), and when.
        var lastRecorded: [ClientKey: (version: Int, at: Double)] = [:]
    }
    private let buffer = Locked(Pending())
    private let writer = Locked<Task<Void, Never>?>(nil)

    /// Clients last served longer ago than this many seconds are deleted (checked every ten minutes).
    private let retention: Double
    /// Per host and version, clients kept (the least recently seen beyond are folded into a count).
    private let maxClients: Int

    /// - Parameter everySecond: other housekeeping, run after each second's flush.
    init(store: any SnapshotStoring, logger: Logger, retention: Double, maxClients: Int = 10_000, clock: any WallClock,
         everySecond: @escaping @Sendable () -> Void = {}) {
        self.maxClients = maxClients
        self.store = store
        self.logger = logger
        self.retention = retention
        let task = Task { [weak self] in
            var ticks = 0
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                await self?.flush()
                everySecond()
                ticks += 1
                if ticks % 600 == 1 { await self?.prune(now: clock.now()) }
            }
        }
        writer.withLock { $0 = task }
    }

    func record(host: String, version: Int, at: Double, client: String) {
        buffer.withLock { state in
            let key = ClientKey(host: host, client: client)
            if let previous = state.lastRecorded[key], previous.version == version, at - previous.at < Self.repeatInterval { return }
            if state.lastRecorded.count >= Self.filterLimit { state.lastRecorded.removeAll(keepingCapacity: true) }
            state.lastRecorded[key] = (version, at)
            if state.events.count < Self.capacity {
                state.events.append(ServedEvent(host: host, version: version, at: at, client: client))
            } else {
                state.dropped += 1
            }
        }
    }

    /// Writes the buffered events now.
    func flush() async {
        let (events, dropped) = buffer.withLock { state -> ([ServedEvent], Int) in
            defer { (state.events, state.dropped) = ([], 0) }
            return (state.events, state.dropped)
        }
        if dropped > 0 { logger.warning("served-event buffer full; events dropped", metadata: ["dropped": "\(dropped)"]) }
        guard !events.isEmpty else { return }
        do {
            try await store.recordServed(events, maxClients: maxClients)
        } catch {
            logger.error("store write failed; served events lost", metadata: ["events": "\(events.count)", "error": "\(error)"])
        }
    }

    func prune(now: Double) async {
        do {
            let removed = try await store.pruneServed(before: now - retention)
            if removed > 0 { logger.info("ledger retention", metadata: ["removed": "\(removed)"]) }
        } catch {
            logger.error("ledger retention failed", metadata: ["error": "\(error)"])
        }
    }

    func close() async {
        writer.withLock { $0?.cancel() }
        await flush()
    }
}

/// Who a client is, for the propagation ledger: its `X-Client-ID` when that is 1–128 bytes of
/// printable ASCII, else its address and User-Agent (the User-Agent cut to 128 bytes, anything
/// outside printable ASCII shown as `?`). So no client can make a ledger entry larger than that.
public enum ClientIdentity {
    public static let maximumIDLength = 128

    public static func isUsableID(_ id: some Collection<UInt8>) -> Bool {
        (1...maximumIDLength).contains(id.count) && id.allSatisfy { (0x20...0x7E).contains($0) }
    }

    /// - Parameters:
    ///   - clientID: the `X-Client-ID` bytes, if the header was sent.
    ///   - address: the peer's address.
    public static func make(clientID: (some Collection<UInt8>)?, address: String, userAgent: some Collection<UInt8>) -> String {
        if let clientID, isUsableID(clientID) { return String(decoding: clientID, as: UTF8.self) }
        let agent = userAgent.prefix(maximumIDLength).map { (0x20...0x7E).contains($0) ? $0 : UInt8(ascii: "?") }
        return address + " " + String(decoding: agent, as: UTF8.self)
    }
}
