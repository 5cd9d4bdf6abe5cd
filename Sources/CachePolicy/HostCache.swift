/// One host's cache as a state machine: a value type that takes events and answers with the
/// actions the edge must carry out. No I/O and no clock of its own (every event brings the time).
/// Every rule of the contract's outcome table and purge semantics is decided here, once; the edge
/// only executes the actions (serve, fetch, refresh, forget) over its store and fetcher.
public struct HostCache: Sendable, Equatable {
    /// What the policy sees: the copy's confirmation time, the last failure, the purge state.
    public private(set) var state: CacheState
    /// Purges seen by this machine: a fetch notes the count when it begins, and a revalidation
    /// that began before a purge does not undo it (exact, where equal clock readings are not).
    public private(set) var purges = 0
    /// A background refresh is queued or running: a request flood adds no second one.
    public private(set) var refreshing = false

    public init(state: CacheState = CacheState()) {
        self.state = state
    }

    public enum Event: Sendable, Equatable {
        /// A client asks for the host.
        case request(now: Double)
        /// An origin fetch ended (`now`); `purgesAtStart` is `purges` when it began.
        case fetchFinished(FetchEnd, purgesAtStart: Int, now: Double)
        /// The background refresh asked for by `.refreshInBackground` is over, however it ended.
        case refreshFinished
        case purge(soft: Bool)
        /// Another edge sharing the store changed the host (it fetched it): memory takes the
        /// store's state. Purges announced by others come as `.purge`.
        case restored(CacheState)
    }

    public enum Action: Sendable, Equatable {
        /// Serve the held copy with this outcome.
        case serveCopy(CacheOutcome)
        /// Serve the cached failure (the 404 form).
        case serveFailure(CacheOutcome)
        /// Ask the origin now (joining a fetch in flight); when it ends, answer the request with
        /// `HostCache.answer(_:after:now:configuration:)`.
        case fetch(Waiting)
        /// Start one background refetch; `.refreshFinished` reports its end.
        case refreshInBackground
        /// Drop the copy from memory (hard purge); the store keeps its versions.
        case forgetCopy
    }

    /// A request waiting for a fetch: the state it saw.
    public struct Waiting: Sendable, Equatable {
        public let before: CacheState
        public init(before: CacheState) { self.before = before }
    }

    public mutating func handle(_ event: Event, configuration: CacheConfiguration) -> [Action] {
        switch event {
        case .request(let now):
            switch Policy.decide(state, now: now, configuration: configuration) {
            case .serveCopy(let outcome, let refresh):
                guard refresh, !refreshing else { return [.serveCopy(outcome)] }
                refreshing = true
                return [.serveCopy(outcome), .refreshInBackground]
            case .serveFailure:
                return [.serveFailure(.failureHit)]
            case .fetch:
                return [.fetch(Waiting(before: state))]
            }
        case .fetchFinished(let end, let purgesAtStart, let now):
            switch end {
            case .updated, .confirmed:
                // A 200: the copy held now is the one just fetched, whatever happened meanwhile.
                state = CacheState(copyConfirmedAt: now)
            case .notModified:
                // A 304 confirms the copy the fetch asked about. After a hard purge there is none;
                // a purge asked for since the fetch began stands (soft: it still wants a refresh).
                guard state.hasCopy else { return [] }
                let purgedSince = purges > purgesAtStart
                state = CacheState(copyConfirmedAt: now, purge: purgedSince ? state.purge : .none)
            case .failed:
                state.failedAt = now
            case .unavailable:
                break  // the edge's own shortage: nothing is known about the origin
            }
            return []
        case .refreshFinished:
            refreshing = false
            return []
        case .purge(let soft):
            purges += 1
            if soft {
                // A soft purge does not undo a hard one: the copy stays forgotten until a fetch.
                if state.purge != .hard { state.purge = .soft }
                return []
            }
            state = CacheState(purge: .hard)
            return [.forgetCopy]
        case .restored(let stored):
            let hadCopy = state.hasCopy
            state = stored
            return hadCopy && !stored.hasCopy ? [.forgetCopy] : []
        }
    }

    /// The outcome for a request that waited for a fetch.
    public static func answer(_ waiting: Waiting, after end: FetchEnd, now: Double, configuration: CacheConfiguration) -> CacheOutcome {
        Policy.outcome(after: end, before: waiting.before, now: now, configuration: configuration)
    }

    /// What a request would be answered from memory alone, without changing anything: the copy
    /// or the cached failure, or nil when it needs the full path (a fetch, a refresh).
    public func answerFromMemory(now: Double, configuration: CacheConfiguration) -> Action? {
        switch Policy.decide(state, now: now, configuration: configuration) {
        case .serveCopy(let outcome, false): return .serveCopy(outcome)
        case .serveFailure: return .serveFailure(.failureHit)
        case .serveCopy, .fetch: return nil
        }
    }

    /// The admin view: `purged`, `failing`, `stale` or `fresh`.
    /// The admin view's `serving`: what a client asking now is given.
    public func serving(now: Double, configuration: CacheConfiguration) -> String {
        Policy.serving(state, now: now, configuration: configuration)
    }

    public func adminState(now: Double, configuration: CacheConfiguration) -> String {
        Policy.adminState(state, now: now, configuration: configuration)
    }
}
