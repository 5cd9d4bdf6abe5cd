import CachePolicy
@testable import EdgeCore
import Testing

@Suite struct MemoryCacheTests {
    func entry(bytes: Int) -> HostEntry {
        let snapshot = MemorySnapshot(version: 1, body: [UInt8](repeating: 0x20, count: bytes), sha256: String(repeating: "a", count: 64),
                                      originETag: nil, originLastModified: nil, appIDs: [], diagnostics: "[]")
        return HostEntry(snapshot: snapshot, state: CacheState(copyConfirmedAt: 1), failure: nil, storedVersion: 1)
    }

    @Test func leastRecentlyUsedHostsLeaveFirst() {
        var cache = MemoryCache(budget: 1000)
        cache.set("a", entry(bytes: 300))
        cache.set("b", entry(bytes: 300))
        cache.set("c", entry(bytes: 300))
        _ = cache.get("a")  // a is now more recent than b
        cache.set("d", entry(bytes: 300))  // 1200 > 1000: evict down to 900
        #expect(cache.entries["b"] == nil)
        #expect(cache.entries["a"] != nil && cache.entries["c"] != nil && cache.entries["d"] != nil)
        #expect(cache.bytes == 900)
    }

    @Test func replacingAnEntryAdjustsTheTotal() {
        var cache = MemoryCache(budget: 1000)
        cache.set("a", entry(bytes: 300))
        cache.set("a", entry(bytes: 100))
        #expect(cache.bytes == 100)
        cache.set("big", entry(bytes: 5000))  // never evicts the entry just written
        #expect(cache.entries["big"] != nil && cache.entries["a"] == nil)
    }
}
