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

/// At most `limit` holders at once; a caller beyond waits for a freed slot (the longest waiter
/// first), with or without a deadline: `--origin-concurrency` (waited for up to `--origin-timeout`)
/// and `--refetch-concurrency` (waited for as long as it takes).
final class SlotLimiter: Sendable {
    private struct Waiter {
        let id: UInt64
        let continuation: CheckedContinuation<Bool, Never>
        /// Ends the wait at its deadline; cancelled when a slot comes first.
        var timer: Task<Void, Never>?
    }

    private struct State {
        var available: Int
        var waiters: [Waiter] = []
        var nextID: UInt64 = 0
    }

    private let state: Locked<State>

    init(limit: Int) { state = Locked(State(available: max(1, limit))) }

    /// Takes a slot, waiting up to `timeout` seconds (nil: no deadline); false when none was freed in time.
    func acquire(timeout: Double?) async -> Bool {
        await withCheckedContinuation { continuation in
            let id = state.withLock { s -> UInt64? in
                if s.available > 0 {
                    s.available -= 1
                    return nil
                }
                s.nextID &+= 1
                s.waiters.append(Waiter(id: s.nextID, continuation: continuation))
                return s.nextID
            }
            guard let id else { return continuation.resume(returning: true) }
            guard let timeout else { return }
            let timer = Task {
                try? await Task.sleep(nanoseconds: UInt64(max(0, timeout) * 1e9))
                if !Task.isCancelled { self.expire(id) }
            }
            // The slot may have come already; then the timer has nothing to end.
            let stillWaiting = state.withLock { s -> Bool in
                guard let i = s.waiters.firstIndex(where: { $0.id == id }) else { return false }
                s.waiters[i].timer = timer
                return true
            }
            if !stillWaiting { timer.cancel() }
        }
    }

    private func expire(_ id: UInt64) {
        let expired = state.withLock { s in s.waiters.firstIndex { $0.id == id }.map { s.waiters.remove(at: $0).continuation } }
        expired?.resume(returning: false)
    }

    func release() {
        let next = state.withLock { s -> Waiter? in
            if s.waiters.isEmpty {
                s.available += 1
                return nil
            }
            return s.waiters.removeFirst()
        }
        next?.timer?.cancel()
        next?.continuation.resume(returning: true)
    }

    /// Runs `operation` in a slot, waiting for one as long as it takes.
    func run<T: Sendable>(_ operation: @Sendable () async -> T) async -> T {
        _ = await acquire(timeout: nil)
        defer { release() }
        return await operation()
    }
}
