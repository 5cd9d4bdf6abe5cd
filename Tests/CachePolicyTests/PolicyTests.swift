import Testing
@testable import CachePolicy

@Suite struct PolicyTests {
    let c = CacheConfiguration(ttl: 100, failureTTL: 30, staleIfError: 1000)

    @Test func noCopyMeansFetchOrCachedFailure() {
        #expect(Policy.decide(CacheState(), now: 0, configuration: c) == .fetch)
        #expect(Policy.decide(CacheState(failedAt: 10), now: 39, configuration: c) == .serveFailure)
        #expect(Policy.decide(CacheState(failedAt: 10), now: 40, configuration: c) == .fetch)
    }

    @Test func freshThenExpired() {
        let s = CacheState(copyConfirmedAt: 1000)
        #expect(Policy.decide(s, now: 1000, configuration: c) == .serveCopy(.hitFresh, refreshInBackground: false))
        #expect(Policy.decide(s, now: 1099.9, configuration: c) == .serveCopy(.hitFresh, refreshInBackground: false))
        #expect(Policy.decide(s, now: 1100, configuration: c) == .fetch)
    }

    @Test func staleIfErrorWhileTheFailureIsCached() {
        let s = CacheState(copyConfirmedAt: 1000, failedAt: 1150)
        #expect(Policy.decide(s, now: 1160, configuration: c) == .serveCopy(.hitStale, refreshInBackground: false))
        #expect(Policy.decide(s, now: 1180, configuration: c) == .fetch)  // failure expired: try again
        let old = CacheState(copyConfirmedAt: 1000, failedAt: 2095)
        #expect(Policy.decide(old, now: 2110, configuration: c) == .serveFailure)  // past stale-if-error
    }

    @Test func purges() {
        #expect(Policy.decide(CacheState(copyConfirmedAt: 1000, purge: .soft), now: 1001, configuration: c) == .serveCopy(.hitStale, refreshInBackground: true))
        #expect(Policy.decide(CacheState(copyConfirmedAt: 1000, failedAt: 1002, purge: .soft), now: 1003, configuration: c)
            == .serveCopy(.hitStale, refreshInBackground: false))
        #expect(Policy.decide(CacheState(copyConfirmedAt: 1000, purge: .hard), now: 1001, configuration: c) == .fetch)
        #expect(!CacheState(copyConfirmedAt: 1000, purge: .hard).hasCopy)
    }

    @Test func outcomesAfterAFetch() {
        let none = CacheState()
        let expired = CacheState(copyConfirmedAt: 1000)
        #expect(Policy.outcome(after: .updated, before: expired, now: 1200, configuration: c) == .miss)
        #expect(Policy.outcome(after: .confirmed, before: expired, now: 1200, configuration: c) == .revalidated)
        #expect(Policy.outcome(after: .confirmed, before: none, now: 1200, configuration: c) == .miss)
        #expect(Policy.outcome(after: .failed, before: expired, now: 1200, configuration: c) == .hitStale)
        #expect(Policy.outcome(after: .failed, before: expired, now: 2100, configuration: c) == .failureMiss)
        #expect(Policy.outcome(after: .failed, before: none, now: 1, configuration: c) == .failureMiss)
    }

    @Test func headersOfEveryOutcome() {
        #expect(CacheOutcome.hitFresh.xCache == "hit-fresh" && CacheOutcome.hitFresh.cacheStatus(ttl: 1200) == "aasa-edge; hit; ttl=1200")
        #expect(CacheOutcome.hitStale.xCache == "hit-stale" && CacheOutcome.hitStale.cacheStatus(ttl: -40) == "aasa-edge; hit; ttl=-40")
        #expect(CacheOutcome.miss.xCache == "miss" && CacheOutcome.miss.cacheStatus(ttl: 0) == "aasa-edge; fwd=uri-miss; stored")
        #expect(CacheOutcome.miss.cacheStatus(ttl: 0, collapsed: true) == "aasa-edge; fwd=uri-miss; stored; collapsed")
        #expect(CacheOutcome.revalidated.xCache == "hit-fresh")
        #expect(CacheOutcome.revalidated.cacheStatus(ttl: 3600, originStatus: 304) == "aasa-edge; fwd=stale; fwd-status=304; ttl=3600")
        #expect(CacheOutcome.failureHit.xCache == "hit-fresh" && CacheOutcome.failureHit.cacheStatus(ttl: 900) == "aasa-edge; hit; ttl=900; detail=failure")
        #expect(CacheOutcome.failureMiss.xCache == "miss" && CacheOutcome.failureMiss.cacheStatus(ttl: 0, originStatus: 404) == "aasa-edge; fwd=uri-miss; fwd-status=404")
        #expect(CacheOutcome.rejected.xCache == nil && CacheOutcome.rejected.cacheStatus(ttl: 0) == nil)
    }

    @Test func ageAndAdminState() {
        #expect(Policy.age(since: 1000, now: 1999.9) == 999)
        #expect(Policy.age(since: 1000, now: 900) == 0)
        #expect(Policy.ttlRemaining(confirmedAt: 1000, now: 1140, configuration: c) == -40)
        #expect(Policy.adminState(CacheState(copyConfirmedAt: 1000, purge: .soft), now: 1000, configuration: c) == "purged")
        #expect(Policy.adminState(CacheState(copyConfirmedAt: 1000, failedAt: 1001), now: 1002, configuration: c) == "failing")
        #expect(Policy.adminState(CacheState(copyConfirmedAt: 1000), now: 1200, configuration: c) == "stale")
        #expect(Policy.adminState(CacheState(copyConfirmedAt: 1000), now: 1050, configuration: c) == "fresh")
        #expect(Policy.adminState(CacheState(), now: 0, configuration: c) == "stale")
    }

    /// `serving` beside `state`: a failing host may still serve its copy ("failing · serving v3 (stale)").
    @Test func servingSaysWhatAClientGetsNow() {
        #expect(Policy.serving(CacheState(copyConfirmedAt: 1000), now: 1050, configuration: c) == "fresh")
        let failing = CacheState(copyConfirmedAt: 1000, failedAt: 1150)
        #expect(Policy.adminState(failing, now: 1160, configuration: c) == "failing")
        #expect(Policy.serving(failing, now: 1160, configuration: c) == "stale", "within stale-if-error")
        #expect(Policy.serving(CacheState(copyConfirmedAt: 1000, failedAt: 2150), now: 2160, configuration: c) == "failure",
                "past stale-if-error the failure form")
        #expect(Policy.serving(CacheState(copyConfirmedAt: 1000, purge: .soft), now: 1010, configuration: c) == "stale")
        #expect(Policy.serving(CacheState(copyConfirmedAt: 1000, purge: .hard), now: 1010, configuration: c) == "none")
        #expect(Policy.serving(CacheState(failedAt: 10), now: 20, configuration: c) == "failure")
        #expect(Policy.serving(CacheState(copyConfirmedAt: 1000), now: 1200, configuration: c) == "stale", "expired, refreshed before it is served")
    }
}
