import CachePolicy
import EdgeModel
import OriginFetcher


/// How the edge asks an origin for its file (libcurl today; a parent edge later).
public protocol OriginFetching: Sendable {
    /// Never throws: every outcome, failures included, is a `FetchResult`.
    func fetch(_ host: OriginHost, validators: Validators?) async -> FetchResult
    /// Seconds one fetch may take (`--origin-timeout`): also how long a request waits for a slot.
    var timeout: Double { get }
}

extension OriginFetcher: OriginFetching {
    public var timeout: Double { configuration.timeout }
}

/// Single flight: at most one operation per key at a time; a caller arriving while one runs
/// waits for its result. In one process, `LocalSingleFlight`; across edges sharing a store, a
/// cross-node lock can stand behind the same protocol.
public protocol SingleFlight<Value>: Sendable {
    associatedtype Value: Sendable
    /// Runs `operation` for `key`, or joins the one in flight; `joined` says which.
    func run(_ key: String, _ operation: @escaping @Sendable () async -> Value) async -> (value: Value, joined: Bool)
}

/// `SingleFlight` within this process: a task per key in flight.
public final class LocalSingleFlight<Value: Sendable>: SingleFlight, Sendable {
    private let inflight = Locked<[String: Task<Value, Never>]>([:])

    public init() {}

    public func run(_ key: String, _ operation: @escaping @Sendable () async -> Value) async -> (value: Value, joined: Bool) {
        let (task, leader) = inflight.withLock { map -> (Task<Value, Never>, Bool) in
            if let running = map[key] { return (running, false) }
            let task = Task { await operation() }
            map[key] = task
            return (task, true)
        }
        let value = await task.value
        if leader { inflight.withLock { $0[key] = nil } }
        return (value, !leader)
    }
}
