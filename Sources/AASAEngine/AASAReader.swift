/// The result of reading an AASA file: the document (when the bytes are a JSON object) and
/// every diagnostic, in document order.
public struct AASAFile: Sendable {
    public let document: AASADocument?
    public let diagnostics: [Diagnostic]
    public let byteCount: Int

    /// No `error` diagnostic.
    public var isValid: Bool { !diagnostics.contains { $0.severity == .error } }

    /// Devices refuse bodies larger than this (swcd, `NSURLErrorDomain` -1103).
    public static let maximumSize = 131_072

    public static func read(_ bytes: [UInt8]) -> AASAFile {
        bytes.withUnsafeBufferPointer { read(utf8: $0) }
    }

    public static func read(_ text: String) -> AASAFile { read(Array(text.utf8)) }

    /// A file too large to read at all (more than `count` bytes).
    public static func oversized(byteCountAtLeast count: Int) -> AASAFile {
        AASAFile(document: nil, diagnostics: [Diagnostic(.tooLarge, at: .root,
            "the file is larger than \(count) bytes; devices refuse anything over \(maximumSize) bytes")], byteCount: count)
    }

    public static func read(utf8 input: UnsafeBufferPointer<UInt8>) -> AASAFile {
        var diagnostics: [Diagnostic] = []
        if input.count > maximumSize {
            diagnostics.append(Diagnostic(.tooLarge, at: .root,
                "the file is \(input.count) bytes; devices refuse anything over \(maximumSize) bytes"))
        }
        var bytes = input
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) {
            bytes = UnsafeBufferPointer(rebasing: bytes[3...])
            diagnostics.append(Diagnostic(.byteOrderMark, at: .root,
                "the file starts with a UTF-8 byte-order mark; RFC 8259 §8.1 says not to send one, and while devices may accept it, many validators and servers do not: save the file without it"))
        }
        if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }) {
            diagnostics.append(Diagnostic(.empty, at: .root, "the file is empty"))
            return AASAFile(document: nil, diagnostics: diagnostics, byteCount: input.count)
        }
        if !JSONReader.isValidUTF8(bytes) {
            let offset = firstInvalidUTF8Offset(bytes)
            diagnostics.append(Diagnostic(.notUTF8, at: .root, "the file is not valid UTF-8 (first bad byte at offset \(offset))"))
            return AASAFile(document: nil, diagnostics: diagnostics, byteCount: input.count)
        }
        let value: JSONValue
        do {
            value = try JSONReader.parse(utf8: bytes)
        } catch {
            diagnostics.append(Diagnostic(.notJSON, at: .root, JSONErrorCause.describe(bytes, error)))
            return AASAFile(document: nil, diagnostics: diagnostics, byteCount: input.count)
        }
        guard case .object(let root) = value else {
            diagnostics.append(Diagnostic(.notObject, at: .root, "the top level is \(value.typeDescription), not an object"))
            return AASAFile(document: nil, diagnostics: diagnostics, byteCount: input.count)
        }
        var reader = DocumentReader()
        reader.reportDuplicateKeys(value, at: .root)
        let document = reader.read(root)
        return AASAFile(document: document, diagnostics: diagnostics + reader.allDiagnostics, byteCount: input.count)
    }

    private static func firstInvalidUTF8Offset(_ bytes: UnsafeBufferPointer<UInt8>) -> Int {
        var offset = 0
        while offset < bytes.count {
            let length = UTF8Scalars.length(lead: bytes[offset])
            let end = min(offset + length, bytes.count)
            if !JSONReader.isValidUTF8(UnsafeBufferPointer(rebasing: bytes[offset..<end])) || end - offset < length {
                return offset
            }
            offset = end
        }
        return offset
    }
}

/// Walks the JSON once, building the model exactly as swcd reads it and noting each problem
/// where it is found.
struct DocumentReader {
    var diagnostics: [Diagnostic] = []

    static let linkServices = ["applinks"]
    static let listServices = ["webcredentials", "appclips", "activitycontinuation"]
    /// Services swcd knows besides the four this tool checks.
    static let otherAppleServices = ["messagefilter", "classificationreport", "authsrv"]
    static let componentKeys: Set<String> = ["/", "?", "#", "exclude", "caseSensitive", "percentEncoded", "comment", "requiredEntitlement"]
    static let detailKeys: Set<String> = ["appID", "appIDs", "components", "paths", "defaults", "comment",
                                          "relativeOrder", "alwaysEnabled", "enabledByDefault"]

    /// Diagnostics listed one by one per code; beyond, they are counted (a hostile or generated
    /// file can repeat one problem thousands of times).
    static let listedPerCode = 5
    private var perCode: [DiagnosticCode: Int] = [:]
    /// Per code beyond the listed ones: where the first unlisted one is and how many there are.
    private var unlisted: [(code: DiagnosticCode, pointer: JSONPointer, count: Int)] = []

    /// The message is built only for a diagnostic that is listed (a file can repeat one problem
    /// thousands of times; its did-you-mean search is not free).
    mutating func note(_ code: DiagnosticCode, _ pointer: @autoclosure () -> JSONPointer, _ message: @autoclosure () -> String) {
        let seen = perCode[code, default: 0]
        perCode[code] = seen + 1
        if seen < Self.listedPerCode {
            diagnostics.append(Diagnostic(code, at: pointer(), message()))
        } else if let i = unlisted.firstIndex(where: { $0.code == code }) {
            unlisted[i].count += 1
        } else {
            unlisted.append((code, pointer(), 1))
        }
    }

    /// The diagnostics with one summary per code that had more than `listedPerCode`.
    var allDiagnostics: [Diagnostic] {
        diagnostics + unlisted.map { item in
            Diagnostic(item.code, at: item.pointer, "\(item.count) more like the \(Self.listedPerCode) above (not listed), the first here",
                       count: item.count)
        }
    }

    mutating func reportDuplicateKeys(_ value: JSONValue, at pointer: JSONPointer) {
        switch value {
        case .object(let object):
            var seen = Set<String>()
            for member in object.members {
                if !seen.insert(member.key).inserted {
                    note(.duplicateKey, pointer.appending(member.key),
                         "key '\(member.key)' appears more than once; devices use the last one")
                }
            }
            for key in object.keys { reportDuplicateKeys(object[key]!, at: pointer.appending(key)) }
        case .array(let elements):
            for (i, element) in elements.enumerated() { reportDuplicateKeys(element, at: pointer.appending(i)) }
        default: break
        }
    }

    mutating func read(_ root: JSONObject) -> AASADocument {
        let known = Self.linkServices + Self.listServices
        if !root.keys.contains(where: known.contains) {
            note(.noKnownService, .root, "no known service: expected at least one of \(known.joined(separator: ", "))")
        }
        var appLinks: AppLinks?
        var appLists: [ServiceAppList] = []
        for key in root.keys {
            let pointer = JSONPointer.root.appending(key)
            let value = root[key]!
            if key == "applinks" {
                guard let object = value.objectValue else {
                    note(.serviceNotObject, pointer, "applinks is \(value.typeDescription), not an object; devices ignore it")
                    continue
                }
                appLinks = readAppLinks(object, at: pointer)
            } else if Self.listServices.contains(key) || Self.otherAppleServices.contains(key) {
                guard let object = value.objectValue else {
                    note(.serviceNotObject, pointer, "\(key) is \(value.typeDescription), not an object; devices ignore it")
                    continue
                }
                appLists.append(ServiceAppList(service: key, appIDs: readAppList(object, service: key, at: pointer)))
            } else {
                note(.unknownTopLevelKey, pointer, "'\(key)' is not a service devices know; it is ignored"
                     + KeySuggestion.hint(key, among: known + Self.otherAppleServices))
            }
        }
        let document = AASADocument(root: root, appLinks: appLinks, appLists: appLists)
        return document
    }

    mutating func readAppList(_ object: JSONObject, service: String, at pointer: JSONPointer) -> [String] {
        for key in object.keys where key != "apps" {
            note(.unknownServiceKey, pointer.appending(key), "'\(key)' is not a key of \(service); it is ignored" + KeySuggestion.hint(key, among: ["apps"]))
        }
        guard let apps = object["apps"] else {
            note(.appsNotArray, pointer, "\(service) has no 'apps' array, so it names no app")
            return []
        }
        guard let elements = apps.arrayValue else {
            note(.appsNotArray, pointer.appending("apps"), "'apps' is \(apps.typeDescription), not an array; devices ignore it")
            return []
        }
        if elements.isEmpty { note(.emptyApps, pointer.appending("apps"), "'apps' is empty, so \(service) names no app") }
        var ids: [(String, JSONPointer)] = []
        for (i, element) in elements.enumerated() {
            guard let id = element.stringValue else {
                note(.appsEntryNotString, pointer.appending("apps").appending(i),
                     "an app ID must be a string, not \(element.typeDescription); devices skip it")
                continue
            }
            ids.append((id, pointer.appending("apps").appending(i)))
        }
        checkAppIDs(ids, in: "'apps'")
        return ids.map(\.0)
    }

    mutating func checkAppID(_ id: String, at pointer: JSONPointer) {
        if let problem = AppID.problem(id) { note(.malformedAppID, pointer, problem + "; devices ignore it") }
    }

    /// The app IDs of one list: an unusable one is an error when no usable one is beside it (the
    /// list names no app), else a warning naming it (the others still work).
    mutating func checkAppIDs(_ ids: [(String, JSONPointer)], in list: String) {
        let usable = ids.filter { AppID.problem($0.0) == nil }.count
        for (id, pointer) in ids {
            guard let problem = AppID.problem(id) else { continue }
            if usable == 0 {
                note(.malformedAppID, pointer, problem + "; no app ID of \(list) is usable, so it names no app")
            } else {
                note(.unusableAppID, pointer, problem + "; devices ignore this one, the other app IDs of \(list) still work")
            }
        }
    }

    // MARK: applinks

    mutating func readAppLinks(_ object: JSONObject, at pointer: JSONPointer) -> AppLinks {
        for key in object.keys where !["details", "defaults", "substitutionVariables", "apps"].contains(key) {
            note(.unknownAppLinksKey, pointer.appending(key), "'\(key)' is not a key of applinks; it is ignored"
                 + KeySuggestion.hint(key, among: ["details", "defaults", "substitutionVariables"]))
        }
        // The legacy `"apps": []` (Apple's older documentation required it) is accepted silently.
        if let apps = object["apps"], apps.arrayValue?.isEmpty != true {
            note(.legacyAppsKey, pointer.appending("apps"), "'apps' inside applinks is a legacy key that devices ignore (it was required to be an empty array)")
        }
        var domainDefaults = JSONObject()
        if let defaults = object["defaults"] {
            if let d = defaults.objectValue {
                checkDefaults(d, at: pointer.appending("defaults"))
                domainDefaults = d
            } else {
                note(.defaultsNotObject, pointer.appending("defaults"), "defaults is \(defaults.typeDescription), not an object; devices ignore it")
            }
        }
        let variables = readVariables(object["substitutionVariables"], at: pointer.appending("substitutionVariables"))
        let table = VariableTable(variables)
        var details: [AppLinksDetail] = []
        var isDictionary = false
        let detailsPointer = pointer.appending("details")
        switch object["details"] {
        case nil:
            note(.emptyDetails, pointer, "applinks has no 'details', so no app handles links")
        case .array(let entries)?:
            if entries.isEmpty { note(.emptyDetails, detailsPointer, "'details' is empty, so no app handles links") }
            for (i, entry) in entries.enumerated() {
                guard let detail = entry.objectValue else {
                    note(.detailNotObject, detailsPointer.appending(i), "a details entry must be an object, not \(entry.typeDescription); devices skip it")
                    continue
                }
                details.append(readDetail(detail, appIDsFromKey: nil, domainDefaults: domainDefaults, variables: table, at: detailsPointer.appending(i)))
            }
        case .object(let dictionary)?:
            isDictionary = true
            note(.legacyDetailsDictionary, detailsPointer, "'details' as an object keyed by app ID is the legacy form; the array form is current")
            if dictionary.isEmpty { note(.emptyDetails, detailsPointer, "'details' is empty, so no app handles links") }
            // An object has no defined order; evaluate keys sorted so results are reproducible.
            for key in dictionary.keys.sorted() {
                let entry = dictionary[key]!
                guard let detail = entry.objectValue else {
                    note(.detailNotObject, detailsPointer.appending(key), "a details entry must be an object, not \(entry.typeDescription); devices skip it")
                    continue
                }
                checkAppID(key, at: detailsPointer.appending(key))
                details.append(readDetail(detail, appIDsFromKey: key, domainDefaults: domainDefaults, variables: table, at: detailsPointer.appending(key)))
            }
        case let other?:
            note(.detailsWrongType, detailsPointer, "'details' is \(other.typeDescription); it must be an array of objects")
        }
        reportDuplicateApps(details)
        reportUnusedVariables(variables, details: details, domainDefaults: domainDefaults,
                              at: pointer.appending("substitutionVariables"))
        return AppLinks(defaults: object["defaults"]?.objectValue, substitutionVariables: variables,
                        details: details, detailsIsDictionary: isDictionary)
    }

    mutating func reportDuplicateApps(_ details: [AppLinksDetail]) {
        var firstSeen: [String: JSONPointer] = [:]
        for detail in details {
            for id in detail.appIDs {
                let canonical = AppID.canonical(id)
                if let first = firstSeen[canonical], first != detail.pointer {
                    note(.duplicateAppID, detail.pointer,
                         "app \(canonical) is already listed at \(first); devices use only that first entry for it")
                } else {
                    firstSeen[canonical] = detail.pointer
                }
            }
        }
    }

    mutating func readDetail(_ object: JSONObject, appIDsFromKey: String?, domainDefaults: JSONObject,
                             variables: VariableTable, at pointer: JSONPointer) -> AppLinksDetail {
        for key in object.keys where !Self.detailKeys.contains(key) {
            note(.unknownDetailKey, pointer.appending(key), "'\(key)' is not a key of a details entry; it is ignored"
                 + KeySuggestion.hint(key, among: Self.detailKeys.sorted()))
        }
        var appIDs: [String] = []
        if let key = appIDsFromKey {
            appIDs = [key]
        } else {
            appIDs = readDetailAppIDs(object, at: pointer)
        }
        var defaults = domainDefaults
        if let local = object["defaults"] {
            if let d = local.objectValue {
                checkDefaults(d, at: pointer.appending("defaults"))
                for member in d.uniqueMembers {
                    defaults.members.removeAll { $0.key == member.key }
                    defaults.members.append(member)
                }
            } else {
                note(.defaultsNotObject, pointer.appending("defaults"), "defaults is \(local.typeDescription), not an object; devices ignore it")
            }
        }
        var rules: [Rule]?
        var source: RuleSource?
        let components = object["components"]
        let paths = object["paths"]
        if let components, components.arrayValue == nil {
            note(.componentsNotArray, pointer.appending("components"), "'components' is \(components.typeDescription), not an array; devices ignore it")
        }
        if let paths, paths.arrayValue == nil {
            note(.pathsNotArray, pointer.appending("paths"), "'paths' is \(paths.typeDescription), not an array; devices ignore it")
        }
        if let entries = components?.arrayValue {
            source = .components
            if paths != nil {
                note(.pathsAndComponents, pointer.appending("paths"), "'paths' is ignored because 'components' is present (iOS 13 and later)")
            }
            rules = entries.enumerated().map { i, entry in
                let p = pointer.appending("components").appending(i)
                checkComponent(entry, at: p, variables: variables)
                return Rule(component: entry, defaults: defaults, pointer: p, index: i)
            }
        } else if let entries = paths?.arrayValue {
            source = .paths
            rules = entries.enumerated().map { i, entry in
                let p = pointer.appending("paths").appending(i)
                if case .string(let text) = entry {
                    let pattern = text.uppercased().hasPrefix("NOT ") ? String(text.dropFirst(4)) : text
                    checkPattern(pattern, at: p, variables: variables)
                    checkPathLength(pattern, at: p)
                } else {
                    note(.legacyPathNotString, p, "a paths entry must be a string, not \(entry.typeDescription); devices treat it as a rule that matches every URL")
                }
                return Rule(legacyPath: entry, defaults: defaults, pointer: p, index: i)
            }
        } else if !appIDs.isEmpty {
            note(.detailWithoutPatterns, pointer, "this entry has neither 'components' nor 'paths'; devices match every URL for its apps")
        }
        if let rules { checkPathPatterns(rules, source: source!) }
        if let rules {
            if rules.isEmpty {
                note(.emptyRules, pointer.appending(source!.rawValue), "'\(source!.rawValue)' is empty, so no URL matches for these apps")
            }
            if let first = rules.firstIndex(where: \.isUnconditional), first + 1 < rules.count {
                let count = rules.count - first - 1
                note(.unreachableRule, rules[first + 1].pointer,
                     "\(count == 1 ? "this rule" : "this rule and the \(count - 1) after it") can never be reached: \(rules[first].pointer) matches every URL first")
            }
        }
        return AppLinksDetail(pointer: pointer, appIDs: appIDs, defaults: defaults, rules: rules, ruleSource: source)
    }

    mutating func readDetailAppIDs(_ object: JSONObject, at pointer: JSONPointer) -> [String] {
        var ids: [String] = []
        let plural = object["appIDs"]
        let singular = object["appID"]
        if let list = plural?.arrayValue {
            if singular != nil {
                note(.bothAppIDForms, pointer.appending("appID"), "both 'appID' and 'appIDs' are set; devices use only 'appIDs'")
            }
            var located: [(String, JSONPointer)] = []
            for (i, element) in list.enumerated() {
                guard let id = element.stringValue else {
                    note(.appIDWrongType, pointer.appending("appIDs").appending(i), "an app ID must be a string, not \(element.typeDescription); devices skip it")
                    continue
                }
                located.append((id, pointer.appending("appIDs").appending(i)))
                ids.append(id)
            }
            checkAppIDs(located, in: "this entry")
            if ids.isEmpty { note(.detailWithoutAppID, pointer.appending("appIDs"), "'appIDs' names no app, so this entry does nothing") }
            return ids
        }
        if let plural {
            note(.appIDWrongType, pointer.appending("appIDs"), "'appIDs' is \(plural.typeDescription), not an array of strings; devices ignore it")
        }
        switch singular {
        case .string(let id)?:
            checkAppIDs([(id, pointer.appending("appID"))], in: "this entry")
            ids.append(id)
        case let other?:
            note(.appIDWrongType, pointer.appending("appID"), "'appID' is \(other.typeDescription), not a string; devices ignore it")
        case nil:
            if plural == nil { note(.detailWithoutAppID, pointer, "this details entry has neither 'appIDs' nor 'appID', so it does nothing") }
        }
        return ids
    }

    // MARK: rules and patterns

    mutating func checkDefaults(_ object: JSONObject, at pointer: JSONPointer) {
        for key in object.keys where !Self.componentKeys.contains(key) {
            note(.unknownDefaultsKey, pointer.appending(key), "'\(key)' is not a key of defaults; it is ignored"
                 + KeySuggestion.hint(key, among: Self.componentKeys.sorted()))
        }
        // Patterns in defaults are resolved where they are inherited; check their types here.
        checkComponentValues(object, at: pointer, variables: nil)
    }

    mutating func checkComponent(_ value: JSONValue, at pointer: JSONPointer, variables: VariableTable) {
        guard let object = value.objectValue else {
            note(.componentNotObject, pointer, "a component must be an object, not \(value.typeDescription); devices treat it as a rule that matches every URL")
            return
        }
        for key in object.keys where !Self.componentKeys.contains(key) {
            note(.unknownComponentKey, pointer.appending(key), "'\(key)' is not a component key; devices ignore it"
                 + KeySuggestion.hint(key, among: Self.componentKeys.sorted()))
        }
        checkComponentValues(object, at: pointer, variables: variables)
    }

    /// Type and pattern checks shared by components and defaults. `variables` is nil for
    /// defaults, whose patterns are checked for syntax only.
    mutating func checkComponentValues(_ object: JSONObject, at pointer: JSONPointer, variables: VariableTable?) {
        for key in ["/", "#"] {
            guard let value = object[key] else { continue }
            if let pattern = value.stringValue {
                checkPattern(pattern, at: pointer.appending(key), variables: variables)
                if key == "/" { checkPathLength(pattern, at: pointer.appending(key)) }
            } else {
                let part = key == "/" ? "path" : "fragment"
                note(.nonStringPattern, pointer.appending(key), "the \(part) pattern '\(key)' must be a string, not \(value.typeDescription); devices ignore it and match any \(part)")
            }
        }
        switch object["?"] {
        case .string(let pattern)?:
            checkPattern(pattern, at: pointer.appending("?"), variables: variables)
        case .object(let dictionary)?:
            for member in dictionary.uniqueMembers {
                let p = pointer.appending("?").appending(member.key)
                if let pattern = member.value.stringValue {
                    checkPattern(pattern, at: p, variables: variables)
                    if pattern == "*" {
                        note(.queryStarMatchesAbsent, p, "'*' also matches when '\(member.key)' is absent (devices read an absent item as the empty string), so this does not require it; use '?*' to require a value")
                    }
                } else {
                    note(.queryNonStringValue, p, "query item pattern is \(member.value.typeDescription), not a string; devices then ignore the whole query dictionary, so it matches any query")
                }
            }
        case let other?:
            note(.queryWrongType, pointer.appending("?"), "the query pattern '?' must be a string or an object, not \(other.typeDescription); devices ignore it and match any query")
        case nil: break
        }
        for key in ["exclude", "caseSensitive", "percentEncoded"] {
            guard let value = object[key] else { continue }
            if case .bool = value { continue }
            let reading: String
            if let b = Rule.boolValue(value) {
                reading = "devices read it as \(b)"
            } else {
                reading = key == "exclude" ? "devices read it as false" : "devices read it as false (the opposite of the default)"
            }
            note(.flagNotBoolean, pointer.appending(key), "'\(key)' should be true or false, not \(value.typeDescription); \(reading)")
        }
        if let entitlement = object["requiredEntitlement"] {
            note(.requiredEntitlement, pointer.appending("requiredEntitlement"),
                 "'requiredEntitlement' is undocumented; the rule applies only to callers holding \(entitlement.stringValue.map { "'\($0)'" } ?? "that entitlement"), and aasa-edge never treats it as held")
        }
    }

    mutating func checkPattern(_ pattern: String, at pointer: JSONPointer, variables: VariableTable?) {
        if pattern.utf8.contains(0) {
            note(.nulInPattern, pointer, "the pattern contains a NUL character; devices cut the pattern there")
        }
        for reference in PatternScanner.references(in: pattern) {
            switch reference {
            case .unterminated:
                note(.unterminatedVariable, pointer, "'$(' has no closing ')'; devices never match this pattern")
            case .named(let name):
                if let variables, !variables.isDefined(name) {
                    note(.unknownVariable, pointer, "unknown substitution variable $(\(name)); devices never match this pattern")
                }
            }
        }
        if pattern.utf8.contains(UInt8(ascii: "\\")) {
            note(.backslashInPattern, pointer, "'\\' is treated as an escape by swcd's matcher; whether devices honour it is unconfirmed, so avoid it")
        }
        let levels = PatternScanner.recursionLevels(in: pattern)
        if levels >= Wildcard.maximumDepth - 1 {
            note(.patternTooComplex, pointer, "\(levels) wildcards and variables; matching can reach the 64 levels of recursion at which devices stop evaluating a pattern and report no match")
        }
    }

    /// Path patterns as devices resolve them (defaults applied): a `#` can never match a
    /// percent-encoded path, and a `?` is a one-character wildcard, not the start of a query.
    mutating func checkPathPatterns(_ rules: [Rule], source: RuleSource) {
        for rule in rules {
            guard let path = rule.path else { continue }
            let pointer: JSONPointer
            if source == .paths {
                pointer = rule.pointer
            } else if rule.source.objectValue?["/"] != nil {
                pointer = rule.pointer.appending("/")
            } else {
                continue  // inherited from defaults: reported there once would be noise per rule
            }
            if path.contains("#"), rule.percentEncoded {
                note(.fragmentInPathPattern, pointer,
                     "a URL path never contains '#' (it starts the fragment), so this pattern can never match; match the fragment with the '#' key")
            }
            if path.contains("?") {
                let advice = source == .paths ? "legacy paths match the path only" : "match the query with the '?' key"
                note(.questionMarkInPathPattern, pointer, "'?' in a path pattern matches any one character, not the start of a query; \(advice)")
            }
        }
    }

    /// Devices leave a one-character path pattern unnormalised, so anything but `*` and `/`
    /// can only ever be compared with a normalised URL path it cannot equal.
    mutating func checkPathLength(_ pattern: String, at pointer: JSONPointer) {
        guard pattern.utf16.count == 1, pattern != "*", pattern != "/" else { return }
        let hint = pattern == "?" ? "it matches only the root path" : "it never matches"
        note(.unnormalizedPathPattern, pointer, "devices do not normalise a one-character path pattern, so '\(pattern)' is not '/\(pattern)': \(hint)")
    }

    // MARK: substitution variables

    mutating func readVariables(_ value: JSONValue?, at pointer: JSONPointer) -> [SubstitutionVariable] {
        guard let value else { return [] }
        guard let object = value.objectValue else {
            note(.variablesNotObject, pointer, "substitutionVariables is \(value.typeDescription), not an object; devices ignore it")
            return []
        }
        var variables: [SubstitutionVariable] = []
        for name in object.keys {
            let p = pointer.appending(name)
            let raw = object[name]!
            if name.contains(where: { $0 == "$" || $0 == "(" || $0 == ")" }) || name.isEmpty {
                note(.invalidVariableName, p, "a variable name must be non-empty and may not contain '$', '(' or ')'; this one can never be used")
                continue
            }
            if BuiltInVariables.names.contains(name) {
                note(.variableShadowsBuiltIn, p, "$(\(name)) replaces the built-in variable of the same name in this file")
            }
            let elements: [(JSONValue, JSONPointer)]
            switch raw {
            case .string: elements = [(raw, p)]
            case .array(let list): elements = list.enumerated().map { ($1, p.appending($0)) }
            default:
                note(.variableValuesWrongType, p, "a variable's values must be an array of strings, not \(raw.typeDescription); devices ignore it")
                continue
            }
            var values: [String] = []
            for (element, elementPointer) in elements {
                guard let text = element.stringValue else {
                    note(.variableValueNotString, elementPointer, "a variable value must be a string, not \(element.typeDescription); devices drop it")
                    continue
                }
                if text.contains("$(") {
                    note(.variableValueReferencesVariable, elementPointer, "a value may not reference another variable; devices drop '\(text)'")
                    continue
                }
                values.append(text)
            }
            if values.isEmpty { note(.variableWithoutValues, p, "$(\(name)) has no usable value, so any pattern using it never matches") }
            variables.append(SubstitutionVariable(name: name, values: values))
        }
        return variables
    }

    mutating func reportUnusedVariables(_ variables: [SubstitutionVariable], details: [AppLinksDetail],
                                        domainDefaults: JSONObject, at pointer: JSONPointer) {
        guard !variables.isEmpty else { return }
        var used = Set<String>()
        func collect(_ pattern: String?) {
            guard let pattern else { return }
            for case .named(let name) in PatternScanner.references(in: pattern) { used.insert(name) }
        }
        for rule in details.compactMap(\.rules).joined() {
            collect(rule.path)
            collect(rule.fragment)
            switch rule.query {
            case .string(let s): collect(s)
            case .dictionary(let members): members.forEach { collect($0.value.stringValue) }
            case .any, .voided: break
            }
        }
        for variable in variables where !used.contains(variable.name) {
            note(.unusedVariable, pointer.appending(variable.name), "$(\(variable.name)) is never used by a pattern")
        }
    }
}

/// "Did you mean" for a key that is not one of `known`: the same key in another case, or one
/// that is one or two edits away (`component` → `components`, `appId` → `appID`).
enum KeySuggestion {
    static func hint(_ key: String, among known: [String]) -> String {
        nearest(key, among: known).map { " (did you mean '\($0)'?)" } ?? ""
    }

    static func nearest(_ key: String, among known: [String]) -> String? {
        let lower = key.lowercased()
        if let same = known.first(where: { $0.lowercased() == lower && $0 != key }) { return same }
        guard key.count >= 3, key.count <= 64 else { return nil }
        var best: (key: String, distance: Int)?
        for candidate in known where candidate.count >= 3 {
            let distance = editDistance(Array(lower.unicodeScalars), Array(candidate.lowercased().unicodeScalars))
            let allowed = candidate.count >= 6 ? 2 : 1
            if distance <= allowed, distance < (best?.distance ?? .max) { best = (candidate, distance) }
        }
        return best?.key
    }

    /// Levenshtein distance.
    static func editDistance(_ a: [Unicode.Scalar], _ b: [Unicode.Scalar]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }
}

/// The common causes of a JSON syntax error in published AASA files, named from the bytes at and
/// before the error: comments, trailing commas, single quotes, unquoted keys, an HTML page.
enum JSONErrorCause {
    static func describe(_ bytes: UnsafeBufferPointer<UInt8>, _ error: JSONSyntaxError) -> String {
        let offset = min(error.offset, bytes.count)
        func position(_ at: Int) -> String {
            let (line, column) = JSONReader.lineAndColumn(of: at, in: bytes)
            return "line \(line), column \(column)"
        }
        let first = bytes.firstIndex { ![0x20, 0x09, 0x0A, 0x0D].contains($0) }
        if let first, bytes[first] == UInt8(ascii: "<") {
            return "the file is an HTML or XML page, not JSON (it starts with '<' at \(position(first))); the server probably answered with an error page"
        }
        guard offset < bytes.count else { return "not valid JSON: \(error)" }
        let byte = bytes[offset]
        let next = offset + 1 < bytes.count ? bytes[offset + 1] : 0
        var previous = offset - 1
        while previous >= 0, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[previous]) { previous -= 1 }
        let before: UInt8 = previous >= 0 ? bytes[previous] : 0
        if byte == UInt8(ascii: "/"), next == UInt8(ascii: "/") || next == UInt8(ascii: "*") {
            return "not valid JSON: a comment at \(position(offset)); JSON has no comments, remove it"
        }
        if byte == UInt8(ascii: "}") || byte == UInt8(ascii: "]"), before == UInt8(ascii: ",") {
            return "not valid JSON: a trailing comma at \(position(previous)) before '\(Character(Unicode.Scalar(byte)))'; JSON allows no comma after the last item"
        }
        if byte == UInt8(ascii: "'") {
            return "not valid JSON: single quotes at \(position(offset)); JSON strings and keys need double quotes"
        }
        let startsName = (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "$")
        if startsName, before == UInt8(ascii: "{") || before == UInt8(ascii: ",") {
            return "not valid JSON: an unquoted key at \(position(offset)); JSON keys need double quotes"
        }
        return "not valid JSON: \(error)"
    }
}
