import CachePolicy
import Foundation

/// A value behind a lock, for state shared by request handlers (held only for a few instructions).
final class Locked<Value>: @unchecked Sendable {
    private var value: Value
    private let lock = NSLock()

    init(_ value: Value) { self.value = value }

    func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}

/// At most `limit` operations at once (`--refetch-concurrency`).
actor AsyncLimiter {
    private let limit: Int
    private var running = 0
    private var waiters: [CheckedContinuation<Void, Never>] = []

    init(limit: Int) { self.limit = max(1, limit) }

    func run<T: Sendable>(_ operation: @Sendable () async -> T) async -> T {
        if running >= limit {
            await withCheckedContinuation { waiters.append($0) }
        } else {
            running += 1
        }
        let result = await operation()
        if waiters.isEmpty {
            running -= 1
        } else {
            waiters.removeFirst().resume()  // the slot passes straight to the next waiter
        }
        return result
    }
}

/// Slots that a caller waits for with a deadline (`--origin-concurrency`, waited for up to
/// `--origin-timeout`): a freed slot passes to the longest waiter.
final class SlotLimiter: Sendable {
    private struct State {
        var available: Int
        var waiters: [(id: UInt64, continuation: CheckedContinuation<Bool, Never>)] = []
        var nextID: UInt64 = 0
    }

    private let state: Locked<State>

    init(limit: Int) { state = Locked(State(available: max(1, limit))) }

    /// Takes a slot, waiting up to `timeout` seconds; false when none was freed in time.
    func acquire(timeout: Double) async -> Bool {
        if state.withLock({ s in s.available > 0 ? { s.available -= 1; return true }() : false }) { return true }
        return await withCheckedContinuation { continuation in
            let id = state.withLock { s -> UInt64? in
                if s.available > 0 {
                    s.available -= 1
                    return nil
                }
                s.nextID &+= 1
                s.waiters.append((s.nextID, continuation))
                return s.nextID
            }
            guard let id else { return continuation.resume(returning: true) }
            Task {
                try? await Task.sleep(nanoseconds: UInt64(max(0, timeout) * 1e9))
                self.expire(id)
            }
        }
    }

    private func expire(_ id: UInt64) {
        let expired = state.withLock { s in s.waiters.firstIndex { $0.id == id }.map { s.waiters.remove(at: $0).continuation } }
        expired?.resume(returning: false)
    }

    func release() {
        let next = state.withLock { s -> CheckedContinuation<Bool, Never>? in
            if s.waiters.isEmpty {
                s.available += 1
                return nil
            }
            return s.waiters.removeFirst().continuation
        }
        next?.resume(returning: true)
    }

    /// Slots free right now (tests).
    var available: Int { state.withLock { $0.available } }
}
