import Foundation

/// The edge's TTLs (seconds).
public struct CacheConfiguration: Sendable, Equatable {
    /// A successful fetch stays fresh this long.
    public var ttl: Double
    /// A failed fetch is cached this long before the origin is tried again.
    public var failureTTL: Double
    /// Past expiry, the last good copy may still be served this long when the origin fails.
    public var staleIfError: Double
    /// Past expiry, the copy is served at once (`hit-stale`) this long while one background
    /// refetch runs; 0: a request past expiry waits for the origin.
    public var staleWhileRevalidate: Double

    public init(ttl: Double = 3600, failureTTL: Double = 1800, staleIfError: Double = 604_800, staleWhileRevalidate: Double = 0) {
        self.ttl = ttl
        self.failureTTL = failureTTL
        self.staleIfError = staleIfError
        self.staleWhileRevalidate = staleWhileRevalidate
    }
}

public enum PurgeState: String, Sendable, Equatable {
    case none, soft, hard
}

/// What the policy needs to know about a host. Times are wall-clock Unix seconds.
public struct CacheState: Sendable, Equatable {
    /// When the copy the edge would serve was last fetched or confirmed by the origin; nil when
    /// there is no copy (never fetched, or hard-purged).
    public var copyConfirmedAt: Double?
    /// When the last origin fetch failed, if the last fetch failed.
    public var failedAt: Double?
    public var purge: PurgeState

    public init(copyConfirmedAt: Double? = nil, failedAt: Double? = nil, purge: PurgeState = .none) {
        self.copyConfirmedAt = copyConfirmedAt
        self.failedAt = failedAt
        self.purge = purge
    }

    public var hasCopy: Bool { copyConfirmedAt != nil && purge != .hard }
}

/// What to do with a request, before any origin fetch.
public enum RequestDecision: Sendable, Equatable {
    /// Serve the copy. `refreshInBackground`: also start one background refetch (soft purge).
    case serveCopy(CacheOutcome, refreshInBackground: Bool)
    /// Serve the cached failure (404 form).
    case serveFailure
    /// Ask the origin now; the request waits (and shares the fetch with concurrent requests).
    case fetch
}

/// How an origin fetch that a request waited for ended.
public enum FetchEnd: Sendable, Equatable {
    /// New bytes were stored.
    case updated
    /// The origin sent the same bytes again (a 200).
    case confirmed
    /// The origin answered 304 to a conditional request: the copy asked about is current.
    case notModified
    case failed
    /// The fetch never reached the origin: the edge itself ran short (file descriptors, memory,
    /// no origin-fetch slot in time). Nothing is recorded about the origin.
    case unavailable
}

/// The cache policy: pure functions of state, clock and configuration (no I/O, no time source
/// of its own).
public enum Policy {
    public static func decide(_ state: CacheState, now: Double, configuration c: CacheConfiguration) -> RequestDecision {
        let failureCached = state.failedAt.map { now - $0 < c.failureTTL } ?? false
        guard state.hasCopy, let confirmed = state.copyConfirmedAt else {
            return failureCached ? .serveFailure : .fetch
        }
        let age = now - confirmed
        if state.purge == .soft {
            // Marked stale by a soft purge: serve it, refresh once in the background (unless the
            // origin just failed, in which case the failure is cached).
            return .serveCopy(.hitStale, refreshInBackground: !failureCached)
        }
        if age < c.ttl { return .serveCopy(.hitFresh, refreshInBackground: false) }
        if isRevalidating(state, now: now, configuration: c) {
            // Within --stale-while-revalidate: the copy at once, one refetch in the background
            // (none while a failure of that refetch is cached; stale-if-error follows the window).
            return .serveCopy(.hitStale, refreshInBackground: !failureCached)
        }
        if failureCached {
            // The origin failed recently: the last good copy while stale-if-error allows, else
            // the cached failure. Either way the origin is left alone until the failure expires.
            return age < c.ttl + c.staleIfError ? .serveCopy(.hitStale, refreshInBackground: false) : .serveFailure
        }
        return .fetch
    }

    /// The outcome of a request that waited for an origin fetch. `hadCopy`: a usable copy existed
    /// before the fetch (with `state` as it was then).
    public static func outcome(after end: FetchEnd, before state: CacheState, now: Double,
                               configuration c: CacheConfiguration) -> CacheOutcome {
        switch end {
        case .updated: return .miss
        case .confirmed, .notModified: return state.hasCopy ? .revalidated : .miss
        case .failed:
            if state.hasCopy, let confirmed = state.copyConfirmedAt, now - confirmed < c.ttl + c.staleIfError {
                return .hitStale
            }
            return .failureMiss
        case .unavailable:
            // The last good copy while stale-if-error would allow it, else a 503.
            if state.hasCopy, let confirmed = state.copyConfirmedAt, now - confirmed < c.ttl + c.staleIfError {
                return .hitStale
            }
            return .unavailable
        }
    }

    /// Whether a copy past expiry is within the stale-while-revalidate window (not soft-purged).
    public static func isRevalidating(_ state: CacheState, now: Double, configuration c: CacheConfiguration) -> Bool {
        guard state.hasCopy, state.purge == .none, let confirmed = state.copyConfirmedAt else { return false }
        let age = now - confirmed
        return age >= c.ttl && age < c.ttl + c.staleWhileRevalidate
    }

    /// Seconds of freshness left for a copy (negative when stale).
    public static func ttlRemaining(confirmedAt: Double, now: Double, configuration c: CacheConfiguration) -> Int {
        Int((c.ttl - (now - confirmedAt)).rounded(.down))
    }

    /// Whole seconds since `time` (the `Age` header); never negative.
    public static func age(since time: Double, now: Double) -> Int {
        max(0, Int((now - time).rounded(.down)))
    }

    /// What a client asking now is given (the admin view's `serving`): `fresh` (the copy within
    /// its TTL), `stale` (a kept copy: soft-purged, within stale-while-revalidate or
    /// stale-if-error, or past its TTL and refreshed before it is served again), `failure` (the
    /// 404 failure form), `none` (no copy and no cached failure: purged, not fetched again).
    public static func serving(_ state: CacheState, now: Double, configuration c: CacheConfiguration) -> String {
        switch decide(state, now: now, configuration: c) {
        case .serveCopy(.hitFresh, _): return "fresh"
        case .serveCopy: return "stale"
        case .serveFailure: return "failure"
        case .fetch: return state.hasCopy ? "stale" : "none"
        }
    }

    /// The admin view of a host: `purged`, `failing`, `stale` or `fresh`, by that precedence.
    public static func adminState(_ state: CacheState, now: Double, configuration c: CacheConfiguration) -> String {
        if state.purge != .none { return "purged" }
        if state.failedAt != nil { return "failing" }
        guard let confirmed = state.copyConfirmedAt, now - confirmed < c.ttl else { return "stale" }
        return "fresh"
    }
}

/// The wall clock, injected so that TTL logic is tested without sleeping.
public protocol WallClock: Sendable {
    /// Unix seconds.
    func now() -> Double
}

/// The system wall clock.
public struct SystemClock: WallClock {
    public init() {}
    public func now() -> Double { Date().timeIntervalSince1970 }
}

