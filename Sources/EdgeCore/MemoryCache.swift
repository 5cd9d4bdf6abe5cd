/// The hosts held in memory, bounded by what their entries hold: each counts its body, the strings
/// kept with it and a fixed allowance for the entry's own slots, so hosts with no copy (a cached
/// failure, an unknown name looked up in the store) count too. Over the budget, the least recently
/// used hosts leave memory (down to 90 % of it); the store still has them, and the next request for
/// one reads it back.
struct MemoryCache {
    private(set) var entries: [String: HostEntry] = [:]
    private var lastUse: [String: UInt64] = [:]
    private var tick: UInt64 = 0
    private(set) var bytes = 0
    /// Entries evicted since the last `takeEvictions()`.
    private var evicted = 0
    let budget: Int

    init(budget: Int) { self.budget = budget }

    mutating func get(_ key: String) -> HostEntry? {
        guard let entry = entries[key] else { return nil }
        tick += 1
        lastUse[key] = tick
        return entry
    }

    /// Changes the entry in place (its cost recomputed); nil when it is not in memory.
    mutating func modify<T>(_ key: String, _ body: (inout HostEntry) -> T) -> T? {
        guard var entry = get(key) else { return nil }
        let result = body(&entry)
        set(key, entry)
        return result
    }

    mutating func set(_ key: String, _ entry: HostEntry) {
        if let old = entries[key] { bytes -= Self.cost(key, old) }
        bytes += Self.cost(key, entry)
        entries[key] = entry
        tick += 1
        lastUse[key] = tick
        if bytes > budget { evict(keeping: key) }
    }

    /// Forgets every host (they are read back from the store when next asked for).
    mutating func removeAll() {
        entries.removeAll()
        lastUse.removeAll()
        bytes = 0
    }

    /// The number of entries evicted since the last call.
    mutating func takeEvictions() -> Int {
        defer { evicted = 0 }
        return evicted
    }

    /// What an entry holds in memory, in bytes (approximately: string storage, not allocator slack).
    static func cost(_ key: String, _ entry: HostEntry) -> Int {
        // The entry's slot in `entries` and in `lastUse` (at their load factor), and the key.
        var cost = 448 + key.utf8.count
        if let snapshot = entry.snapshot {
            cost += snapshot.body.count + snapshot.sha256.utf8.count + snapshot.etag.utf8.count + snapshot.diagnostics.utf8.count
                + (snapshot.originETag?.utf8.count ?? 0) + (snapshot.originLastModified?.utf8.count ?? 0)
                + snapshot.appIDs.reduce(32) { $0 + 16 + $1.utf8.count }
        }
        if let failure = entry.failure { cost += failure.reason.utf8.count + failure.details.utf8.count }
        return cost
    }

    private mutating func evict(keeping key: String) {
        let target = budget / 10 * 9
        for (candidate, _) in lastUse.sorted(by: { $0.value < $1.value }) where candidate != key {
            if let removed = entries.removeValue(forKey: candidate) { bytes -= Self.cost(candidate, removed) }
            lastUse[candidate] = nil
            evicted += 1
            if bytes <= target { break }
        }
    }
}
