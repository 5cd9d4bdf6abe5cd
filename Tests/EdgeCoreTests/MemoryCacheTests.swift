import CachePolicy
@testable import EdgeCore
import Testing

@Suite struct MemoryCacheTests {
    func entry(bytes: Int) -> HostEntry {
        let snapshot = MemorySnapshot(version: 1, body: [UInt8](repeating: 0x20, count: bytes), sha256: String(repeating: "a", count: 64),
                                      originETag: nil, originLastModified: nil, appIDs: [], diagnostics: "[]")
        return HostEntry(snapshot: snapshot, cache: HostCache(state: CacheState(copyConfirmedAt: 1)), failure: nil, storedVersion: 1)
    }

    @Test func leastRecentlyUsedHostsLeaveFirst() {
        let each = MemoryCache.cost("a", entry(bytes: 300))
        var cache = MemoryCache(budget: each * 3 + each / 2)
        cache.set("a", entry(bytes: 300))
        cache.set("b", entry(bytes: 300))
        cache.set("c", entry(bytes: 300))
        _ = cache.get("a")  // a is now more recent than b
        #expect(cache.takeEvictions() == 0)
        cache.set("d", entry(bytes: 300))  // four entries are over the budget: evict down to 90 % of it
        #expect(cache.entries["b"] == nil)
        #expect(cache.entries["a"] != nil && cache.entries["c"] != nil && cache.entries["d"] != nil)
        #expect(cache.bytes == each * 3)
        #expect(cache.takeEvictions() == 1 && cache.takeEvictions() == 0)
    }

    @Test func replacingAnEntryAdjustsTheTotal() {
        var cache = MemoryCache(budget: 10_000)
        cache.set("a", entry(bytes: 300))
        cache.set("a", entry(bytes: 100))
        #expect(cache.bytes == MemoryCache.cost("a", entry(bytes: 100)))
        cache.set("big", entry(bytes: 50_000))  // never evicts the entry just written
        #expect(cache.entries["big"] != nil && cache.entries["a"] == nil)
    }

    @Test func theCostCountsTheBodyTheStringsAndTheEntry() {
        let small = MemoryCache.cost("a.test", entry(bytes: 0))
        #expect(MemoryCache.cost("a.test", entry(bytes: 2048)) == small + 2048)
        #expect(small > 64 + 2)  // the SHA-256 and the diagnostics at least
        let none = HostEntry(snapshot: nil, cache: HostCache(state: CacheState()), failure: nil, storedVersion: nil)
        #expect(MemoryCache.cost("a.test", none) > 0)
    }

    /// Hosts with no copy (names looked up and not found, cached failures) hold memory too: a
    /// client asking for endless distinct names must not grow the cache past its budget.
    @Test func hostsWithoutACopyAreBoundedToo() {
        var cache = MemoryCache(budget: 100_000)
        let failure = FailureInfo(reason: "SWCERR00301 Timeout", details: #"{"cause":"dns"}"#, at: 1, originStatus: nil)
        for i in 0..<20_000 {
            cache.set("h\(i).test", HostEntry(snapshot: nil, cache: HostCache(state: CacheState()), failure: i.isMultiple(of: 2) ? failure : nil, storedVersion: nil))
        }
        #expect(cache.bytes <= 100_000)
        #expect(cache.entries.count < 250)
        #expect(cache.entries["h19999.test"] != nil)
    }
}
