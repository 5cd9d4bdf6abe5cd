/// A semantic diff of two AASA documents: what changes for devices, not for the bytes.
///
/// Rules are compared by what they do (path normalised, defaults applied, dictionary order
/// ignored), in order, since order decides which rule wins. Reformatting, key order, or moving a
/// flag from every component into `defaults` produce no difference.
public struct AASADiff: Sendable, Equatable {
    public enum Change: String, Sendable {
        case added, removed, changed
    }

    public struct RuleChange: Sendable, Equatable {
        public let change: Change
        public let oldIndex: Int?
        public let newIndex: Int?
        public let old: JSONValue?
        public let new: JSONValue?
    }

    public struct AppRules: Sendable, Equatable {
        public let appID: String
        public let changes: [RuleChange]
    }

    public struct ValueChange: Sendable, Equatable {
        public let key: String
        public let change: Change
        public let old: JSONValue?
        public let new: JSONValue?
    }

    public struct AppDefaults: Sendable, Equatable {
        public let appID: String
        public let changes: [ValueChange]
    }

    public struct ServiceApps: Sendable, Equatable {
        public let service: String
        public let added: [String]
        public let removed: [String]
    }

    public let appsAdded: [String]
    public let appsRemoved: [String]
    public let rules: [AppRules]
    public let defaults: [ValueChange]
    public let appDefaults: [AppDefaults]
    public let substitutionVariables: [ValueChange]
    public let services: [ServiceApps]

    public var isEmpty: Bool {
        appsAdded.isEmpty && appsRemoved.isEmpty && rules.isEmpty && defaults.isEmpty && appDefaults.isEmpty
            && substitutionVariables.isEmpty && services.isEmpty
    }

    public init(old: AASADocument, new: AASADocument) {
        let oldApps = Self.applinksEntries(old)
        let newApps = Self.applinksEntries(new)
        let oldByID = Dictionary(oldApps.map { ($0.appID, $0) }, uniquingKeysWith: { first, _ in first })
        let newIDs = Set(newApps.map(\.appID))
        appsAdded = newApps.map(\.appID).filter { oldByID[$0] == nil }
        appsRemoved = oldApps.map(\.appID).filter { !newIDs.contains($0) }

        // Apps listed in the same details entry share its rules: each pair of entries is compared
        // once, however many apps name it.
        struct EntryPair: Hashable {
            let old: Int
            let new: Int
        }
        var compared: [EntryPair: (rules: [RuleChange], defaults: [ValueChange])] = [:]
        var rules: [AppRules] = []
        var appDefaults: [AppDefaults] = []
        for entry in newApps {
            guard let before = oldByID[entry.appID] else { continue }
            let pair = EntryPair(old: before.index, new: entry.index)
            let result = compared[pair] ?? {
                let result = (Self.diffRules(before.detail, entry.detail), Self.diffObjects(before.detail.defaults, entry.detail.defaults))
                compared[pair] = result
                return result
            }()
            if !result.rules.isEmpty { rules.append(AppRules(appID: entry.appID, changes: result.rules)) }
            if !result.defaults.isEmpty { appDefaults.append(AppDefaults(appID: entry.appID, changes: result.defaults)) }
        }
        self.rules = rules
        self.appDefaults = appDefaults
        defaults = Self.diffObjects(old.appLinks?.defaults ?? JSONObject(), new.appLinks?.defaults ?? JSONObject())

        func variables(_ document: AASADocument) -> JSONObject {
            JSONObject((document.appLinks?.substitutionVariables ?? []).map {
                JSONMember($0.name, .array($0.values.map { .string($0) }))
            })
        }
        substitutionVariables = Self.diffObjects(variables(old), variables(new))

        var services: [ServiceApps] = []
        var names: [String] = []
        for list in old.appLists + new.appLists where !names.contains(list.service) { names.append(list.service) }
        for name in names {
            let before = Self.canonicalApps(old.appLists.filter { $0.service == name }.flatMap(\.appIDs))
            let after = Self.canonicalApps(new.appLists.filter { $0.service == name }.flatMap(\.appIDs))
            let beforeSet = Set(before)
            let afterSet = Set(after)
            let added = after.filter { !beforeSet.contains($0) }
            let removed = before.filter { !afterSet.contains($0) }
            if !added.isEmpty || !removed.isEmpty { services.append(ServiceApps(service: name, added: added, removed: removed)) }
        }
        self.services = services
    }

    // MARK: pieces

    private struct AppEntry {
        let appID: String
        let detail: AppLinksDetail
        /// The entry's position in `details`.
        let index: Int
    }

    /// The details entry each app gets on a device (the first one naming it).
    private static func applinksEntries(_ document: AASADocument) -> [AppEntry] {
        var seen = Set<String>()
        var out: [AppEntry] = []
        for (index, detail) in (document.appLinks?.details ?? []).enumerated() {
            for id in detail.appIDs where seen.insert(AppID.canonical(id)).inserted {
                out.append(AppEntry(appID: AppID.canonical(id), detail: detail, index: index))
            }
        }
        return out
    }

    private static func canonicalApps(_ ids: [String]) -> [String] {
        var seen = Set<String>()
        return ids.map(AppID.canonical).filter { seen.insert($0).inserted }
    }

    /// What a rule does, as a comparable value.
    static func fingerprint(_ rule: Rule) -> String {
        var parts: [String] = []
        parts.append("path=" + (rule.path.map(PathNormalization.normalize) ?? "*"))
        parts.append("fragment=" + (rule.fragment ?? "*"))
        switch rule.query {
        case .any, .voided: parts.append("query=*")
        case .string(let s): parts.append("query=" + JSONWriter.string(.string(s)))
        case .dictionary(let members):
            parts.append("query=" + JSONWriter.string(.object(JSONObject(members)), sortedKeys: true))
        }
        parts.append("exclude=\(rule.exclude)")
        parts.append("caseSensitive=\(rule.caseSensitive)")
        parts.append("percentEncoded=\(rule.percentEncoded)")
        parts.append("entitlement=" + (rule.requiredEntitlement ?? ""))
        return parts.joined(separator: "\u{1}")
    }

    private static let everyURL: JSONValue = "(no components or paths: every URL matches)"

    private static func diffRules(_ old: AppLinksDetail, _ new: AppLinksDetail) -> [RuleChange] {
        // A detail without patterns matches everything: compare it as one unconditional rule.
        func items(_ detail: AppLinksDetail) -> [(key: String, source: JSONValue)] {
            guard let rules = detail.rules else { return [("every-url", everyURL)] }
            return rules.map { (fingerprint($0), $0.source) }
        }
        let a = items(old)
        let b = items(new)
        let operations = SequenceDiff.operations(a.map(\.key), b.map(\.key))
        var changes: [RuleChange] = []
        var removed: [Int] = []
        var added: [Int] = []
        func flush() {
            let paired = min(removed.count, added.count)
            for k in 0..<paired {
                changes.append(RuleChange(change: .changed, oldIndex: removed[k], newIndex: added[k], old: a[removed[k]].source, new: b[added[k]].source))
            }
            for i in removed.dropFirst(paired) {
                changes.append(RuleChange(change: .removed, oldIndex: i, newIndex: nil, old: a[i].source, new: nil))
            }
            for j in added.dropFirst(paired) {
                changes.append(RuleChange(change: .added, oldIndex: nil, newIndex: j, old: nil, new: b[j].source))
            }
            removed.removeAll()
            added.removeAll()
        }
        for operation in operations {
            switch operation {
            case .keep: flush()
            case .delete(let i): removed.append(i)
            case .insert(let j): added.append(j)
            }
        }
        flush()
        return changes
    }

    static func diffObjects(_ old: JSONObject, _ new: JSONObject) -> [ValueChange] {
        var changes: [ValueChange] = []
        for key in old.keys {
            let before = old[key]!
            if let after = new[key] {
                if JSONWriter.string(before, sortedKeys: true) != JSONWriter.string(after, sortedKeys: true) {
                    changes.append(ValueChange(key: key, change: .changed, old: before, new: after))
                }
            } else {
                changes.append(ValueChange(key: key, change: .removed, old: before, new: nil))
            }
        }
        for key in new.keys where old[key] == nil {
            changes.append(ValueChange(key: key, change: .added, old: nil, new: new[key]))
        }
        return changes
    }

    // MARK: output

    public var json: JSONValue {
        func strings(_ list: [String]) -> JSONValue { .array(list.map { .string($0) }) }
        func valueChanges(_ list: [ValueChange], keyName: String) -> JSONValue {
            .array(list.map {
                .object(JSONObject([
                    JSONMember(keyName, .string($0.key)), JSONMember("change", .string($0.change.rawValue)),
                    JSONMember("old", $0.old ?? .null), JSONMember("new", $0.new ?? .null),
                ]))
            })
        }
        func index(_ i: Int?) -> JSONValue { i.map { .number(JSONNumber(String($0))) } ?? .null }
        return .object(JSONObject([
            JSONMember("identical", .bool(isEmpty)),
            JSONMember("apps", .object(JSONObject([JSONMember("added", strings(appsAdded)), JSONMember("removed", strings(appsRemoved))]))),
            JSONMember("rules", .array(rules.map { app in
                .object(JSONObject([
                    JSONMember("appID", .string(app.appID)),
                    JSONMember("changes", .array(app.changes.map {
                        .object(JSONObject([
                            JSONMember("change", .string($0.change.rawValue)),
                            JSONMember("oldIndex", index($0.oldIndex)), JSONMember("newIndex", index($0.newIndex)),
                            JSONMember("old", $0.old ?? .null), JSONMember("new", $0.new ?? .null),
                        ]))
                    })),
                ]))
            })),
            JSONMember("defaults", valueChanges(defaults, keyName: "key")),
            JSONMember("appDefaults", .array(appDefaults.map {
                .object(JSONObject([JSONMember("appID", .string($0.appID)), JSONMember("changes", valueChanges($0.changes, keyName: "key"))]))
            })),
            JSONMember("substitutionVariables", valueChanges(substitutionVariables, keyName: "name")),
            JSONMember("services", .array(services.map {
                .object(JSONObject([JSONMember("service", .string($0.service)), JSONMember("added", strings($0.added)), JSONMember("removed", strings($0.removed))]))
            })),
        ]))
    }

    /// Human-readable lines; empty when the documents are equivalent.
    public var lines: [String] {
        func compact(_ value: JSONValue?) -> String { value.map { JSONWriter.string($0) } ?? "" }
        func mark(_ change: Change) -> String {
            switch change {
            case .added: return "+"
            case .removed: return "-"
            case .changed: return "~"
            }
        }
        var out: [String] = []
        for id in appsAdded { out.append("+ applinks app \(id)") }
        for id in appsRemoved { out.append("- applinks app \(id)") }
        for app in rules {
            out.append("~ rules of \(app.appID):")
            for c in app.changes {
                switch c.change {
                case .added: out.append("    + rule \(c.newIndex!) \(compact(c.new))")
                case .removed: out.append("    - rule \(c.oldIndex!) \(compact(c.old))")
                case .changed: out.append("    ~ rule \(c.oldIndex!) \(compact(c.old)) -> rule \(c.newIndex!) \(compact(c.new))")
                }
            }
        }
        for c in defaults { out.append("\(mark(c.change)) applinks defaults \(c.key): \(compact(c.old))\(c.change == .changed ? " -> " : "")\(compact(c.new))") }
        for app in appDefaults {
            for c in app.changes { out.append("\(mark(c.change)) defaults of \(app.appID) \(c.key): \(compact(c.old))\(c.change == .changed ? " -> " : "")\(compact(c.new))") }
        }
        for c in substitutionVariables { out.append("\(mark(c.change)) $(\(c.key)): \(compact(c.old))\(c.change == .changed ? " -> " : "")\(compact(c.new))") }
        for s in services {
            for id in s.added { out.append("+ \(s.service) app \(id)") }
            for id in s.removed { out.append("- \(s.service) app \(id)") }
        }
        return out
    }
}

/// Longest-common-subsequence alignment of two sequences.
enum SequenceDiff {
    enum Operation: Equatable {
        case keep(Int, Int)
        case delete(Int)
        case insert(Int)
    }

    /// Cells of the LCS table above which the middle part is compared position by position
    /// instead (keeps memory bounded for two maximal files with thousands of rules).
    static let tableLimit = 4_000_000

    static func operations<T: Equatable>(_ a: [T], _ b: [T]) -> [Operation] {
        var prefix = 0
        while prefix < a.count && prefix < b.count && a[prefix] == b[prefix] { prefix += 1 }
        var suffix = 0
        while suffix < a.count - prefix && suffix < b.count - prefix
            && a[a.count - 1 - suffix] == b[b.count - 1 - suffix] { suffix += 1 }
        var out = (0..<prefix).map { Operation.keep($0, $0) }
        let midA = Array(a[prefix..<(a.count - suffix)])
        let midB = Array(b[prefix..<(b.count - suffix)])
        out += middle(midA, midB).map {
            switch $0 {
            case .keep(let i, let j): return .keep(i + prefix, j + prefix)
            case .delete(let i): return .delete(i + prefix)
            case .insert(let j): return .insert(j + prefix)
            }
        }
        out += (0..<suffix).map { .keep(a.count - suffix + $0, b.count - suffix + $0) }
        return out
    }

    private static func middle<T: Equatable>(_ a: [T], _ b: [T]) -> [Operation] {
        let n = a.count
        let m = b.count
        if (n + 1) * (m + 1) > tableLimit {
            return (0..<n).map { .delete($0) } + (0..<m).map { .insert($0) }
        }
        // lengths[i][j] = LCS length of a[i...] and b[j...]
        var lengths = [[Int]](repeating: [Int](repeating: 0, count: m + 1), count: n + 1)
        if n > 0 && m > 0 {
            for i in stride(from: n - 1, through: 0, by: -1) {
                for j in stride(from: m - 1, through: 0, by: -1) {
                    lengths[i][j] = a[i] == b[j] ? lengths[i + 1][j + 1] + 1 : max(lengths[i + 1][j], lengths[i][j + 1])
                }
            }
        }
        var out: [Operation] = []
        var i = 0
        var j = 0
        while i < n || j < m {
            if i < n && j < m && a[i] == b[j] {
                out.append(.keep(i, j))
                i += 1
                j += 1
            } else if j < m && (i == n || lengths[i][j + 1] >= lengths[i + 1][j]) {
                out.append(.insert(j))
                j += 1
            } else {
                out.append(.delete(i))
                i += 1
            }
        }
        return out
    }
}
