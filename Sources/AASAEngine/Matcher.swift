public enum Decision: String, Sendable, CaseIterable {
    case match
    case exclude
    case noMatch = "no_match"
}

/// Why a URL got its decision.
public enum MatchReason: String, Sendable {
    /// A rule matched (`match`) or a matching rule excludes (`exclude`).
    case rule
    /// The app's rules were all tried and none matched.
    case noRuleMatched = "no-rule-matched"
    /// The app's details entry has neither `components` nor `paths`: devices match everything.
    case detailWithoutPatterns = "detail-without-patterns"
    /// The file does not list the app under `applinks`.
    case appNotListed = "app-not-listed"
    /// The URL's host is not the domain the file is served for.
    case hostMismatch = "host-mismatch"
}

public struct MatchResult: Sendable, Equatable {
    public let decision: Decision
    public let reason: MatchReason
    /// The details entry that was consulted.
    public let detail: JSONPointer?
    /// The rule that decided (for `.rule`).
    public let rule: JSONPointer?
    /// The deciding rule as written in the file.
    public let ruleSource: JSONValue?
}

/// An AASA document compiled for matching: patterns normalised and turned into bytes once.
/// Immutable and thread-safe; `match` allocates little (the normalised URL path).
public struct CompiledAASA: Sendable {
    let variables: VariableTable
    let details: [CompiledDetail]
    /// Canonical app ID → index in `details` (the first entry naming the app wins).
    let entryByApp: [String: Int]

    public init(_ document: AASADocument) {
        let appLinks = document.appLinks
        variables = VariableTable(appLinks?.substitutionVariables ?? [])
        var details: [CompiledDetail] = []
        var entryByApp: [String: Int] = [:]
        for detail in appLinks?.details ?? [] {
            details.append(CompiledDetail(detail))
            for id in detail.appIDs where entryByApp[AppID.canonical(id)] == nil {
                entryByApp[AppID.canonical(id)] = details.count - 1
            }
        }
        self.details = details
        self.entryByApp = entryByApp
    }

    /// Decides `url` for `appID`. With a non-empty `domain`, a URL whose host differs
    /// (case-insensitively) is `no_match`.
    public func match(_ url: MatchURL, appID: String, domain: String? = nil) -> MatchResult {
        if let domain, !domain.isEmpty, !url.hostEquals(domain) {
            return MatchResult(decision: .noMatch, reason: .hostMismatch, detail: nil, rule: nil, ruleSource: nil)
        }
        guard let index = entryByApp[appID] ?? entryByApp[AppID.canonical(appID)] else {
            return MatchResult(decision: .noMatch, reason: .appNotListed, detail: nil, rule: nil, ruleSource: nil)
        }
        let detail = details[index]
        guard let rules = detail.rules else {
            return MatchResult(decision: .match, reason: .detailWithoutPatterns, detail: detail.pointer, rule: nil, ruleSource: nil)
        }
        var input = MatchInput(url)
        for rule in rules {
            switch rule.evaluate(&input, variables) {
            case .noMatch: continue
            case .match:
                return MatchResult(decision: .match, reason: .rule, detail: detail.pointer, rule: rule.rule.pointer, ruleSource: rule.rule.source)
            case .blocked:
                return MatchResult(decision: .exclude, reason: .rule, detail: detail.pointer, rule: rule.rule.pointer, ruleSource: rule.rule.source)
            }
        }
        return MatchResult(decision: .noMatch, reason: .noRuleMatched, detail: detail.pointer, rule: nil, ruleSource: nil)
    }
}

final class CompiledDetail: Sendable {
    let pointer: JSONPointer
    let rules: [CompiledRule]?

    init(_ detail: AppLinksDetail) {
        pointer = detail.pointer
        rules = detail.rules?.map(CompiledRule.init)
    }
}

/// A pattern string as swcd stores it: cut at a NUL, path patterns normalised.
struct CompiledPattern: Sendable {
    let bytes: [UInt8]
    /// No wildcard, variable or escape: a byte comparison decides (when case-sensitive).
    let isLiteral: Bool

    init(_ pattern: String, isPath: Bool) {
        var bytes = Array(pattern.utf8)
        if let nul = bytes.firstIndex(of: 0) { bytes.removeSubrange(nul...) }
        if isPath { bytes = PathNormalization.normalize(bytes) }
        self.bytes = bytes
        isLiteral = !bytes.contains { $0 == UInt8(ascii: "*") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "$") || $0 == UInt8(ascii: "\\") }
    }

    func matches(_ component: ArraySlice<UInt8>, _ variables: VariableTable, caseInsensitive: Bool) -> Bool {
        if isLiteral && !caseInsensitive { return bytes.elementsEqual(component) }
        return bytes.withUnsafeBufferPointer { p in
            component.withUnsafeBufferPointer { s in
                Wildcard.matches(pattern: p, component: s, variables: variables, caseInsensitive: caseInsensitive)
            }
        }
    }

    func matches(_ component: [UInt8], _ variables: VariableTable, caseInsensitive: Bool) -> Bool {
        matches(component[...], variables, caseInsensitive: caseInsensitive)
    }
}

enum RuleOutcome {
    case noMatch, match, blocked
}

/// A reference type so that the per-decision loop over rules costs one retain, not a copy of
/// every field.
final class CompiledRule: Sendable {
    enum Query: Sendable {
        case any
        case string(CompiledPattern)
        case dictionary([(name: [UInt8], pattern: CompiledPattern)])
    }

    let rule: Rule
    let path: CompiledPattern?
    let fragment: CompiledPattern?
    let query: Query
    let caseInsensitive: Bool
    let percentEncoded: Bool
    let exclude: Bool
    let needsEntitlement: Bool

    init(_ rule: Rule) {
        self.rule = rule
        caseInsensitive = !rule.caseSensitive
        percentEncoded = rule.percentEncoded
        exclude = rule.exclude
        needsEntitlement = rule.requiredEntitlement != nil
        path = rule.path.map { CompiledPattern($0, isPath: true) }
        fragment = rule.fragment.map { CompiledPattern($0, isPath: false) }
        switch rule.query {
        case .any, .voided: query = .any
        case .string(let s): query = .string(CompiledPattern(s, isPath: false))
        case .dictionary(let members):
            query = .dictionary(members.map { (Array($0.key.utf8), CompiledPattern($0.value.stringValue ?? "", isPath: false)) })
        }
    }

    /// `SWCPatternStorage::evaluate`: every specified part must match; then `exclude` decides
    /// between a match and a block.
    func evaluate(_ input: inout MatchInput, _ variables: VariableTable) -> RuleOutcome {
        if needsEntitlement { return .noMatch }
        let fold = caseInsensitive
        let encoded = percentEncoded
        if let path, !path.matches(input.path(encoded: encoded), variables, caseInsensitive: fold) { return .noMatch }
        if let fragment, !fragment.matches(input.fragment(encoded: encoded), variables, caseInsensitive: fold) { return .noMatch }
        switch query {
        case .any: break
        case .string(let pattern):
            if !pattern.matches(input.query(encoded: encoded), variables, caseInsensitive: fold) { return .noMatch }
        case .dictionary(let predicates):
            // Every occurrence of a listed name must match; a listed name that is absent is
            // matched as the empty string. Names are looked up exactly, whatever the case setting.
            let items = input.queryItems(encoded: encoded)
            for item in items {
                for predicate in predicates where predicate.name.elementsEqual(item.name) {
                    if !predicate.pattern.matches(item.value ?? [], variables, caseInsensitive: fold) { return .noMatch }
                }
            }
            for predicate in predicates where !items.contains(where: { $0.name.elementsEqual(predicate.name) }) {
                if !predicate.pattern.matches([], variables, caseInsensitive: fold) { return .noMatch }
            }
        }
        return exclude ? .blocked : .match
    }
}

/// The URL parts one decision needs, each computed at most once.
struct MatchInput {
    let url: MatchURL.Parts
    private var encodedPath: [UInt8]?
    private var decodedPath: [UInt8]?
    private var decodedItems: [MatchURL.QueryItem]?

    init(_ url: MatchURL) { self.url = url.parts }

    mutating func path(encoded: Bool) -> [UInt8] {
        if encoded {
            if let encodedPath { return encodedPath }
            let normalized = PathNormalization.normalize(url.path)
            encodedPath = normalized
            return normalized
        }
        if let decodedPath { return decodedPath }
        let normalized = PathNormalization.normalize(MatchURL.decoded(url.path))
        decodedPath = normalized
        return normalized
    }

    func fragment(encoded: Bool) -> [UInt8] {
        guard let fragment = url.fragment else { return [] }
        return encoded ? fragment : MatchURL.decoded(fragment)
    }

    func query(encoded: Bool) -> [UInt8] {
        guard let query = url.query else { return [] }
        return encoded ? query : MatchURL.decoded(query)
    }

    mutating func queryItems(encoded: Bool) -> [MatchURL.QueryItem] {
        if encoded { return url.queryItems }
        if let decodedItems { return decodedItems }
        let decoded = url.queryItems.map { MatchURL.QueryItem(name: MatchURL.decoded($0.name)[...], value: $0.value.map { MatchURL.decoded($0)[...] }) }
        decodedItems = decoded
        return decoded
    }
}
