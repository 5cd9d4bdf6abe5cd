/// How bad a finding is. `error`: devices will not do what the author meant (or will not read the
/// file at all). `warning`: legal but probably a mistake. `note`: worth knowing, harmless.
public enum Severity: String, Sendable, Comparable, CaseIterable {
    case error, warning, note

    private var rank: Int {
        switch self {
        case .error: return 0
        case .warning: return 1
        case .note: return 2
        }
    }
    public static func < (a: Severity, b: Severity) -> Bool { a.rank < b.rank }
}

/// Every diagnostic the validator can emit. The raw values are the stable public codes
/// (documented in docs/diagnostics.md): never renumber or reuse one.
public enum DiagnosticCode: String, Sendable, CaseIterable {
    // The file as a whole.
    case notUTF8 = "AE001"
    case notJSON = "AE002"
    case empty = "AE003"
    case notObject = "AE004"
    case tooLarge = "AE005"
    case duplicateKey = "AE006"
    case byteOrderMark = "AE007"
    // Services.
    case noKnownService = "AE010"
    case serviceNotObject = "AE011"
    case appsNotArray = "AE012"
    case appsEntryNotString = "AE013"
    case unknownTopLevelKey = "AE014"
    case unknownServiceKey = "AE015"
    case emptyApps = "AE016"
    // applinks details.
    case detailsWrongType = "AE020"
    case detailNotObject = "AE021"
    case detailWithoutAppID = "AE022"
    case malformedAppID = "AE023"
    case appIDWrongType = "AE024"
    case bothAppIDForms = "AE025"
    case emptyDetails = "AE026"
    case duplicateAppID = "AE027"
    case detailWithoutPatterns = "AE028"
    case componentsNotArray = "AE029"
    case pathsNotArray = "AE030"
    case pathsAndComponents = "AE031"
    case legacyDetailsDictionary = "AE032"
    case legacyAppsKey = "AE033"
    case unknownDetailKey = "AE034"
    case unknownAppLinksKey = "AE035"
    case emptyRules = "AE036"
    case unusableAppID = "AE038"
    // Rules (components and legacy paths).
    case componentNotObject = "AE040"
    case nonStringPattern = "AE041"
    case queryWrongType = "AE042"
    case queryNonStringValue = "AE043"
    case flagNotBoolean = "AE044"
    case unknownComponentKey = "AE045"
    case legacyPathNotString = "AE046"
    case unreachableRule = "AE047"
    case requiredEntitlement = "AE048"
    // Patterns.
    case unknownVariable = "AE050"
    case unterminatedVariable = "AE051"
    case backslashInPattern = "AE052"
    case patternTooComplex = "AE053"
    case nulInPattern = "AE054"
    case unnormalizedPathPattern = "AE055"
    case fragmentInPathPattern = "AE056"
    case questionMarkInPathPattern = "AE057"
    case queryStarMatchesAbsent = "AE058"
    // defaults.
    case defaultsNotObject = "AE060"
    case unknownDefaultsKey = "AE061"
    // substitutionVariables.
    case variablesNotObject = "AE070"
    case variableValuesWrongType = "AE071"
    case variableValueNotString = "AE072"
    case variableValueReferencesVariable = "AE073"
    case invalidVariableName = "AE074"
    case variableShadowsBuiltIn = "AE075"
    case variableWithoutValues = "AE076"
    case unusedVariable = "AE077"

    public var severity: Severity {
        switch self {
        case .notUTF8, .notJSON, .empty, .notObject, .tooLarge, .noKnownService, .serviceNotObject,
             .appsNotArray, .appsEntryNotString, .detailsWrongType, .detailNotObject, .detailWithoutAppID,
             .malformedAppID, .appIDWrongType, .componentsNotArray, .pathsNotArray, .componentNotObject,
             .nonStringPattern, .queryWrongType, .legacyPathNotString, .unknownVariable,
             .unterminatedVariable, .defaultsNotObject, .variablesNotObject, .variableValuesWrongType,
             .variableValueNotString, .invalidVariableName, .nulInPattern:
            return .error
        case .duplicateKey, .bothAppIDForms, .emptyDetails, .duplicateAppID, .detailWithoutPatterns,
             .queryNonStringValue, .flagNotBoolean, .unreachableRule, .variableValueReferencesVariable,
             .patternTooComplex, .variableWithoutValues, .emptyApps, .emptyRules, .unnormalizedPathPattern,
             .unusableAppID, .fragmentInPathPattern, .byteOrderMark:
            return .warning
        case .unknownTopLevelKey, .unknownServiceKey, .pathsAndComponents, .legacyDetailsDictionary,
             .legacyAppsKey, .unknownDetailKey, .unknownAppLinksKey, .unknownComponentKey,
             .requiredEntitlement, .backslashInPattern, .unknownDefaultsKey, .variableShadowsBuiltIn,
             .unusedVariable, .questionMarkInPathPattern, .queryStarMatchesAbsent:
            return .note
        }
    }

    /// A short kebab-case name, shown beside the code.
    public var name: String {
        switch self {
        case .notUTF8: return "not-utf8"
        case .notJSON: return "not-json"
        case .empty: return "empty-file"
        case .notObject: return "not-an-object"
        case .tooLarge: return "too-large"
        case .duplicateKey: return "duplicate-key"
        case .byteOrderMark: return "byte-order-mark"
        case .noKnownService: return "no-known-service"
        case .serviceNotObject: return "service-not-object"
        case .appsNotArray: return "apps-not-array"
        case .appsEntryNotString: return "apps-entry-not-string"
        case .unknownTopLevelKey: return "unknown-top-level-key"
        case .unknownServiceKey: return "unknown-service-key"
        case .emptyApps: return "empty-apps"
        case .detailsWrongType: return "details-wrong-type"
        case .detailNotObject: return "detail-not-object"
        case .detailWithoutAppID: return "detail-without-app-id"
        case .malformedAppID: return "malformed-app-id"
        case .appIDWrongType: return "app-id-wrong-type"
        case .bothAppIDForms: return "both-app-id-forms"
        case .emptyDetails: return "empty-details"
        case .duplicateAppID: return "duplicate-app-id"
        case .detailWithoutPatterns: return "detail-without-patterns"
        case .componentsNotArray: return "components-not-array"
        case .pathsNotArray: return "paths-not-array"
        case .pathsAndComponents: return "paths-and-components"
        case .legacyDetailsDictionary: return "legacy-details-dictionary"
        case .legacyAppsKey: return "legacy-apps-key"
        case .unknownDetailKey: return "unknown-detail-key"
        case .unknownAppLinksKey: return "unknown-applinks-key"
        case .emptyRules: return "empty-rules"
        case .unusableAppID: return "unusable-app-id"
        case .componentNotObject: return "component-not-object"
        case .nonStringPattern: return "non-string-pattern"
        case .queryWrongType: return "query-wrong-type"
        case .queryNonStringValue: return "query-non-string-value"
        case .flagNotBoolean: return "flag-not-boolean"
        case .unknownComponentKey: return "unknown-component-key"
        case .legacyPathNotString: return "legacy-path-not-string"
        case .unreachableRule: return "unreachable-rule"
        case .requiredEntitlement: return "required-entitlement"
        case .unknownVariable: return "unknown-variable"
        case .unterminatedVariable: return "unterminated-variable"
        case .backslashInPattern: return "backslash-in-pattern"
        case .patternTooComplex: return "pattern-too-complex"
        case .nulInPattern: return "nul-in-pattern"
        case .unnormalizedPathPattern: return "one-character-path"
        case .fragmentInPathPattern: return "hash-in-path"
        case .questionMarkInPathPattern: return "question-mark-in-path"
        case .queryStarMatchesAbsent: return "star-matches-absent-item"
        case .defaultsNotObject: return "defaults-not-object"
        case .unknownDefaultsKey: return "unknown-defaults-key"
        case .variablesNotObject: return "variables-not-object"
        case .variableValuesWrongType: return "variable-values-wrong-type"
        case .variableValueNotString: return "variable-value-not-string"
        case .variableValueReferencesVariable: return "variable-value-references-variable"
        case .invalidVariableName: return "invalid-variable-name"
        case .variableShadowsBuiltIn: return "variable-shadows-built-in"
        case .variableWithoutValues: return "variable-without-values"
        case .unusedVariable: return "unused-variable"
        }
    }
}

public struct Diagnostic: Sendable, Equatable, CustomStringConvertible {
    public let code: DiagnosticCode
    public let pointer: JSONPointer
    public let message: String
    /// How many findings this one stands for: 1, or for a summary of repeated findings of one
    /// code, how many were not listed.
    public let count: Int
    public var severity: Severity { code.severity }

    public init(_ code: DiagnosticCode, at pointer: JSONPointer, _ message: String, count: Int = 1) {
        self.code = code
        self.pointer = pointer
        // Messages quote keys and values of the file: no control character reaches a terminal.
        self.message = OutsideText.isClean(message, limit: 1024) ? message : OutsideText.clean(message, limit: 1024)
        self.count = count
    }

    /// `error AE023 malformed-app-id at /applinks/details/0/appIDs/1: …`
    public var description: String {
        let location = pointer.tokens.isEmpty ? "(document)" : OutsideText.clean(pointer.description, limit: 1024)
        return "\(severity.rawValue) \(code.rawValue) \(code.name) at \(location): \(message)"
    }

    public var json: JSONValue {
        var members = [
            JSONMember("code", .string(code.rawValue)),
            JSONMember("severity", .string(severity.rawValue)),
            JSONMember("pointer", .string(pointer.description)),
            JSONMember("message", .string(message)),
        ]
        if count > 1 { members.append(JSONMember("count", .number(JSONNumber(String(count))))) }
        return .object(JSONObject(members))
    }
}
