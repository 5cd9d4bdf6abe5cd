import CachePolicy
import EdgeModel
import OriginFetcher


/// How the edge asks an origin for its file (libcurl today; a parent edge later).
public protocol OriginFetching: Sendable {
    /// Never throws: every outcome, failures included, is a `FetchResult`. `via`: the `Via`
    /// value to send on (the client's entries, then this edge's), read by a parent edge only.
    func fetch(_ host: OriginHost, validators: Validators?, via: String) async -> FetchResult
    /// Seconds one fetch may take (`--origin-timeout`): also how long a request waits for a slot.
    var timeout: Double { get }
}

extension OriginFetcher: OriginFetching {
    public var timeout: Double { configuration.timeout }

    public func fetch(_ host: OriginHost, validators: Validators?, via: String) async -> FetchResult {
        await fetch(host, validators: validators)
    }
}

/// A parent edge as the place a child edge fills its cache from (`--parent`, tiers).
public struct ParentEdge: OriginFetching {
    /// The parent's URL, without a trailing `/`.
    public let base: String
    let fetcher: OriginFetcher

    public init(base: String, fetcher: OriginFetcher) {
        self.base = base
        self.fetcher = fetcher
    }

    public var timeout: Double { fetcher.configuration.timeout }

    /// Unconditional (validators are not sent): the parent's `Age`, `X-Cache` and `Via` are
    /// wanted with every answer.
    public func fetch(_ host: OriginHost, validators: Validators?, via: String) async -> FetchResult {
        await fetcher.fetch(host, fromParent: base, via: via)
    }
}

/// Single flight: at most one operation per key at a time; a caller arriving while one runs
/// waits for its result. In one process, `LocalSingleFlight`; across edges sharing a store,
/// `SharedSingleFlight` (the store's fetch lease behind it).
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

/// `SingleFlight` across edges sharing a store. In this process the local single flight keeps
/// one caller per key; that caller then asks `elsewhere` whether another edge runs the operation
/// (a lease in the store): if so, `elsewhere` waits for that edge's result and returns it (the
/// value says it came from elsewhere, e.g. `AppliedFetch.remote`); if not, this edge runs the
/// operation and `finished` gives the lease back.
public struct SharedSingleFlight<Value: Sendable>: SingleFlight {
    let local: LocalSingleFlight<Value>
    let elsewhere: @Sendable (String) async -> Value?
    let finished: @Sendable (String) async -> Void

    public init(local: LocalSingleFlight<Value>, elsewhere: @escaping @Sendable (String) async -> Value?,
                finished: @escaping @Sendable (String) async -> Void) {
        self.local = local
        self.elsewhere = elsewhere
        self.finished = finished
    }

    public func run(_ key: String, _ operation: @escaping @Sendable () async -> Value) async -> (value: Value, joined: Bool) {
        await local.run(key) { [elsewhere, finished] in
            if let value = await elsewhere(key) { return value }
            let value = await operation()
            await finished(key)
            return value
        }
    }
}
