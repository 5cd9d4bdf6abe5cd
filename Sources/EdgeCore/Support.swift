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

/// The system wall clock.
public struct SystemClock: WallClock {
    public init() {}
    public func now() -> Double { Date().timeIntervalSince1970 }
}

/// RFC 3339 times in UTC, as the contract's JSON and the CLI print them.
public enum RFC3339 {
    /// Whole seconds (truncated), UTC: `2026-11-21T06:04:08Z`.
    public static func string(_ unixSeconds: Double) -> String {
        var t = time_t(unixSeconds.rounded(.down))
        var c = tm()
        gmtime_r(&t, &c)
        return String(format: "%04d-%02d-%02dT%02d:%02d:%02dZ", c.tm_year + 1900, c.tm_mon + 1, c.tm_mday, c.tm_hour, c.tm_min, c.tm_sec)
    }

    /// With milliseconds: `2026-11-21T06:04:08.250Z` (for measurements finer than a second).
    public static func milliseconds(_ unixSeconds: Double) -> String {
        let whole = unixSeconds.rounded(.down)
        let millis = min(999, Int(((unixSeconds - whole) * 1000).rounded(.down)))
        return String(string(whole).dropLast()) + String(format: ".%03dZ", millis)
    }
}
