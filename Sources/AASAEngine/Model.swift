/// The parsed content of an AASA file, as a device reads it.
///
/// Every field is what swcd would use after its own fallbacks: `appIDs` over `appID`,
/// `components` over `paths`, defaults merged into each rule, invalid values dropped.
public struct AASADocument: Sendable {
    public let root: JSONObject
    /// `applinks`, when it is an object.
    public let appLinks: AppLinks?
    /// `webcredentials`, `appclips` and `activitycontinuation` (and any other service with an
    /// `apps` array), in file order.
    public let appLists: [ServiceAppList]

    /// App IDs named anywhere in the file (any service), canonical (team prefix upper-cased),
    /// in first-seen order.
    public var allAppIDs: [String] {
        var seen = Set<String>()
        var out: [String] = []
        for id in (appLinks?.details.flatMap(\.appIDs) ?? []) + appLists.flatMap(\.appIDs) {
            let canonical = AppID.canonical(id)
            if seen.insert(canonical).inserted { out.append(canonical) }
        }
        return out
    }
}

public struct ServiceAppList: Sendable, Equatable {
    public let service: String
    public let appIDs: [String]
}

public struct AppLinks: Sendable {
    /// `applinks.defaults`, when it is an object.
    public let defaults: JSONObject?
    public let substitutionVariables: [SubstitutionVariable]
    public let details: [AppLinksDetail]
    /// The legacy form: `details` as an object keyed by app ID.
    public let detailsIsDictionary: Bool
}

public struct SubstitutionVariable: Sendable, Equatable {
    public let name: String
    /// Usable values: strings that do not reference another variable.
    public let values: [String]
}

public enum RuleSource: String, Sendable {
    case components, paths
}

public struct AppLinksDetail: Sendable {
    public let pointer: JSONPointer
    /// App IDs as written (strings only).
    public let appIDs: [String]
    /// The details-level `defaults` merged over `applinks.defaults`.
    public let defaults: JSONObject
    /// `components` (or, failing that, `paths`) turned into rules; nil when the detail has neither
    /// array, in which case devices match every URL for its apps.
    public let rules: [Rule]?
    public let ruleSource: RuleSource?
}

/// How a rule constrains the query.
public enum QueryRule: Sendable, Equatable {
    case any
    case string(String)
    /// Name → pattern. Every listed name must match; every occurrence of a repeated name must match.
    case dictionary([JSONMember])
    /// A dictionary with a non-string value: swcd ignores it entirely, so it matches any query.
    case voided
}

/// One entry of `components` or `paths`, with the defaults applied: what swcd evaluates.
public struct Rule: Sendable, Equatable {
    public let pointer: JSONPointer
    /// Position within its `components` or `paths` array.
    public let index: Int
    /// The entry as written.
    public let source: JSONValue
    /// Path pattern before normalisation; nil = any path.
    public let path: String?
    public let fragment: String?
    public let query: QueryRule
    public let exclude: Bool
    public let caseSensitive: Bool
    public let percentEncoded: Bool
    /// Undocumented: the rule applies only to a caller holding this entitlement.
    public let requiredEntitlement: String?

    /// Builds the rule the way swcd does: each key comes from the component, or from the merged
    /// defaults when the component lacks it; values of the wrong type are ignored.
    init(component: JSONValue, defaults: JSONObject, pointer: JSONPointer, index: Int, writtenAs: JSONValue? = nil) {
        self.pointer = pointer
        self.index = index
        self.source = writtenAs ?? component
        guard let object = component.objectValue else {
            // swcd builds an empty pattern for a non-dictionary entry: it matches every URL.
            path = nil; fragment = nil; query = .any; exclude = false; caseSensitive = true
            percentEncoded = true; requiredEntitlement = nil
            return
        }
        func value(_ key: String) -> JSONValue? { object[key] ?? defaults[key] }
        path = value("/")?.stringValue
        fragment = value("#")?.stringValue
        switch value("?") {
        case .string(let s)?: query = .string(s)
        case .object(let dictionary)?:
            let members = dictionary.uniqueMembers
            query = members.allSatisfy({ $0.value.stringValue != nil }) ? .dictionary(members) : .voided
        default: query = .any
        }
        requiredEntitlement = value("requiredEntitlement")?.stringValue
        exclude = value("exclude").map { Rule.boolValue($0) ?? false } ?? false
        caseSensitive = value("caseSensitive").map { Rule.boolValue($0) ?? false } ?? true
        percentEncoded = value("percentEncoded").map { Rule.boolValue($0) ?? false } ?? true
    }

    /// A legacy `paths` entry: `NOT ` (any case) makes an always case-sensitive exclusion.
    init(legacyPath entry: JSONValue, defaults: JSONObject, pointer: JSONPointer, index: Int) {
        var component = JSONObject()
        if case .string(let text) = entry {
            if text.utf8.count >= 4, text.prefix(4).uppercased() == "NOT " {
                component.members.append(JSONMember("exclude", true))
                component.members.append(JSONMember("caseSensitive", true))
                component.members.append(JSONMember("/", .string(String(text.dropFirst(4)))))
            } else {
                component.members.append(JSONMember("/", .string(text)))
            }
        }
        self.init(component: .object(component), defaults: defaults, pointer: pointer, index: index, writtenAs: entry)
    }

    /// `-[NSObject boolValue]` as swcd applies it: booleans and numbers as expected, strings the
    /// way NSString reads them, nil for values that have no boolValue (null, arrays, objects).
    static func boolValue(_ value: JSONValue) -> Bool? {
        switch value {
        case .bool(let b): return b
        case .number(let n): return n.doubleValue != 0
        case .string(let s):
            // NSString.boolValue: skip leading whitespace, an optional sign and leading zeros,
            // then Y/y/T/t or a digit 1-9 means true.
            var rest = Substring(s).drop(while: { $0 == " " || $0 == "\t" || $0 == "\n" })
            if let first = rest.first, first == "+" || first == "-" { rest = rest.dropFirst() }
            rest = rest.drop(while: { $0 == "0" })
            guard let c = rest.first else { return false }
            return "YyTt123456789".contains(c)
        case .null, .array, .object: return nil
        }
    }

    /// True when the rule matches every URL (so later rules can never be reached).
    public var isUnconditional: Bool {
        guard requiredEntitlement == nil else { return false }
        let pathAny = path == nil || path == "*"
        let fragmentAny = fragment == nil || fragment == "*"
        let queryAny: Bool
        switch query {
        case .any, .voided: queryAny = true
        case .string(let s): queryAny = s == "*"
        case .dictionary(let members): queryAny = members.isEmpty
        }
        return pathAny && fragmentAny && queryAny
    }
}
