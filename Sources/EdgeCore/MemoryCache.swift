/// The hosts held in memory, bounded by the bytes of their bodies. Over the budget, the least
/// recently used hosts leave memory (down to 90 % of it); the store still has them, and the next
/// request for one reads it back.
struct MemoryCache {
    private(set) var entries: [String: HostEntry] = [:]
    private var lastUse: [String: UInt64] = [:]
    private var tick: UInt64 = 0
    private(set) var bytes = 0
    let budget: Int

    init(budget: Int) { self.budget = budget }

    mutating func get(_ key: String) -> HostEntry? {
        guard let entry = entries[key] else { return nil }
        tick += 1
        lastUse[key] = tick
        return entry
    }

    mutating func set(_ key: String, _ entry: HostEntry) {
        bytes -= entries[key]?.snapshot?.body.count ?? 0
        bytes += entry.snapshot?.body.count ?? 0
        entries[key] = entry
        tick += 1
        lastUse[key] = tick
        if bytes > budget { evict(keeping: key) }
    }

    private mutating func evict(keeping key: String) {
        let target = budget / 10 * 9
        for (candidate, _) in lastUse.sorted(by: { $0.value < $1.value }) where candidate != key {
            bytes -= entries.removeValue(forKey: candidate)?.snapshot?.body.count ?? 0
            lastUse[candidate] = nil
            if bytes <= target { break }
        }
    }
}
