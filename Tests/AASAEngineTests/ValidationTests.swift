import Foundation
import Testing
@testable import AASAEngine

struct ValidationCase: CustomTestStringConvertible, Sendable {
    let code: DiagnosticCode
    let pointer: String
    let text: String
    var testDescription: String { "\(code.rawValue) \(code.name)" }
}

private let A = "ABCDE12345.com.example.app"

/// One document per code, each producing that code at that pointer.
let validationCases: [ValidationCase] = [
    .init(code: .notUTF8, pointer: "", text: "{\"applinks\":\"caf\u{00FF}\"}"),  // replaced by raw bytes below
    .init(code: .notJSON, pointer: "", text: "{\"applinks\": }"),
    .init(code: .empty, pointer: "", text: "  \n"),
    .init(code: .notObject, pointer: "", text: "[]"),
    .init(code: .tooLarge, pointer: "", text: "{\"webcredentials\":{\"apps\":[\"\(A)\"]},\"pad\":\"" + String(repeating: "x", count: 131_072) + "\"}"),
    .init(code: .duplicateKey, pointer: "/webcredentials/apps", text: #"{"webcredentials":{"apps":[],"apps":["\#(A)"]}}"#),
    .init(code: .noKnownService, pointer: "", text: #"{"something":{}}"#),
    .init(code: .serviceNotObject, pointer: "/applinks", text: #"{"applinks":[]}"#),
    .init(code: .appsNotArray, pointer: "/webcredentials/apps", text: #"{"webcredentials":{"apps":"\#(A)"}}"#),
    .init(code: .appsEntryNotString, pointer: "/appclips/apps/0", text: #"{"appclips":{"apps":[1]}}"#),
    .init(code: .unknownTopLevelKey, pointer: "/extra", text: #"{"webcredentials":{"apps":["\#(A)"]},"extra":1}"#),
    .init(code: .unknownServiceKey, pointer: "/webcredentials/other", text: #"{"webcredentials":{"apps":["\#(A)"],"other":1}}"#),
    .init(code: .emptyApps, pointer: "/webcredentials/apps", text: #"{"webcredentials":{"apps":[]}}"#),
    .init(code: .detailsWrongType, pointer: "/applinks/details", text: #"{"applinks":{"details":"x"}}"#),
    .init(code: .detailNotObject, pointer: "/applinks/details/0", text: #"{"applinks":{"details":[7]}}"#),
    .init(code: .detailWithoutAppID, pointer: "/applinks/details/0", text: #"{"applinks":{"details":[{"components":[]}]}}"#),
    .init(code: .malformedAppID, pointer: "/applinks/details/0/appIDs/0", text: #"{"applinks":{"details":[{"appIDs":["com.example.app"],"components":[]}]}}"#),
    .init(code: .appIDWrongType, pointer: "/applinks/details/0/appID", text: #"{"applinks":{"details":[{"appID":["\#(A)"],"components":[]}]}}"#),
    .init(code: .bothAppIDForms, pointer: "/applinks/details/0/appID", text: #"{"applinks":{"details":[{"appIDs":["\#(A)"],"appID":"\#(A)","components":[]}]}}"#),
    .init(code: .emptyDetails, pointer: "/applinks/details", text: #"{"applinks":{"details":[]}}"#),
    .init(code: .duplicateAppID, pointer: "/applinks/details/1", text: #"{"applinks":{"details":[{"appIDs":["\#(A)"],"components":[]},{"appID":"\#(A)","components":[]}]}}"#),
    .init(code: .detailWithoutPatterns, pointer: "/applinks/details/0", text: #"{"applinks":{"details":[{"appIDs":["\#(A)"]}]}}"#),
    .init(code: .componentsNotArray, pointer: "/applinks/details/0/components", text: #"{"applinks":{"details":[{"appIDs":["\#(A)"],"components":{}}]}}"#),
    .init(code: .pathsNotArray, pointer: "/applinks/details/0/paths", text: #"{"applinks":{"details":[{"appIDs":["\#(A)"],"paths":"/x"}]}}"#),
    .init(code: .pathsAndComponents, pointer: "/applinks/details/0/paths", text: #"{"applinks":{"details":[{"appIDs":["\#(A)"],"paths":["/x"],"components":[{"/":"/x"}]}]}}"#),
    .init(code: .legacyDetailsDictionary, pointer: "/applinks/details", text: #"{"applinks":{"details":{"\#(A)":{"paths":["/x"]}}}}"#),
    .init(code: .legacyAppsKey, pointer: "/applinks/apps", text: #"{"applinks":{"apps":["\#(A)"],"details":[{"appID":"\#(A)","paths":["/x"]}]}}"#),
    .init(code: .byteOrderMark, pointer: "", text: "\u{FEFF}" + #"{"webcredentials":{"apps":["\#(A)"]}}"#),
    .init(code: .unusableAppID, pointer: "/applinks/details/0/appIDs/1", text: #"{"applinks":{"details":[{"appIDs":["\#(A)","com.example.noteam"],"components":[{"/":"/x"}]}]}}"#),
    .init(code: .fragmentInPathPattern, pointer: "/applinks/details/0/components/0/~1", text: #"{"applinks":{"details":[{"appIDs":["\#(A)"],"components":[{"/":"/help#faq"}]}]}}"#),
    .init(code: .questionMarkInPathPattern, pointer: "/applinks/details/0/paths/0", text: #"{"applinks":{"details":[{"appID":"\#(A)","paths":["/search?q=*"]}]}}"#),
    .init(code: .queryStarMatchesAbsent, pointer: "/applinks/details/0/components/0/?/id", text: #"{"applinks":{"details":[{"appIDs":["\#(A)"],"components":[{"/":"/x","?":{"id":"*"}}]}]}}"#),
    .init(code: .unknownDetailKey, pointer: "/applinks/details/0/paht", text: #"{"applinks":{"details":[{"appID":"\#(A)","paths":["/x"],"paht":[]}]}}"#),
    .init(code: .unknownAppLinksKey, pointer: "/applinks/detail", text: #"{"applinks":{"detail":[],"details":[{"appID":"\#(A)","paths":["/x"]}]}}"#),
    .init(code: .emptyRules, pointer: "/applinks/details/0/components", text: #"{"applinks":{"details":[{"appIDs":["\#(A)"],"components":[]}]}}"#),
    .init(code: .componentNotObject, pointer: "/applinks/details/0/components/0", text: #"{"applinks":{"details":[{"appIDs":["\#(A)"],"components":["/x"]}]}}"#),
    .init(code: .nonStringPattern, pointer: "/applinks/details/0/components/0/#", text: ##"{"applinks":{"details":[{"appIDs":["\##(A)"],"components":[{"#":5}]}]}}"##),
    .init(code: .queryWrongType, pointer: "/applinks/details/0/components/0/?", text: #"{"applinks":{"details":[{"appIDs":["\#(A)"],"components":[{"?":["a"]}]}]}}"#),
    .init(code: .queryNonStringValue, pointer: "/applinks/details/0/components/0/?/flag", text: #"{"applinks":{"details":[{"appIDs":["\#(A)"],"components":[{"?":{"a":"1","flag":true}}]}]}}"#),
    .init(code: .flagNotBoolean, pointer: "/applinks/details/0/components/0/caseSensitive", text: #"{"applinks":{"details":[{"appIDs":["\#(A)"],"components":[{"/":"/x","caseSensitive":"false"}]}]}}"#),
    .init(code: .unknownComponentKey, pointer: "/applinks/details/0/components/0/path", text: #"{"applinks":{"details":[{"appIDs":["\#(A)"],"components":[{"path":"/x"}]}]}}"#),
    .init(code: .legacyPathNotString, pointer: "/applinks/details/0/paths/1", text: #"{"applinks":{"details":[{"appID":"\#(A)","paths":["/x",{"/":"/y"}]}]}}"#),
    .init(code: .unreachableRule, pointer: "/applinks/details/0/components/1", text: #"{"applinks":{"details":[{"appIDs":["\#(A)"],"components":[{"/":"*"},{"/":"/never"}]}]}}"#),
    .init(code: .requiredEntitlement, pointer: "/applinks/details/0/components/0/requiredEntitlement", text: #"{"applinks":{"details":[{"appIDs":["\#(A)"],"components":[{"/":"/x","requiredEntitlement":"com.example.e"}]}]}}"#),
    .init(code: .unknownVariable, pointer: "/applinks/details/0/components/0/~1", text: #"{"applinks":{"details":[{"appIDs":["\#(A)"],"components":[{"/":"/$(food)"}]}]}}"#),
    .init(code: .unterminatedVariable, pointer: "/applinks/details/0/components/0/#", text: ##"{"applinks":{"details":[{"appIDs":["\##(A)"],"components":[{"#":"$(digit"}]}]}}"##),
    .init(code: .backslashInPattern, pointer: "/applinks/details/0/components/0/~1", text: #"{"applinks":{"details":[{"appIDs":["\#(A)"],"components":[{"/":"/a\\*"}]}]}}"#),
    .init(code: .patternTooComplex, pointer: "/applinks/details/0/components/0/~1", text: #"{"applinks":{"details":[{"appIDs":["\#(A)"],"components":[{"/":"/\#(String(repeating: "*a", count: 70))"}]}]}}"#),
    .init(code: .nulInPattern, pointer: "/applinks/details/0/components/0/~1", text: #"{"applinks":{"details":[{"appIDs":["\#(A)"],"components":[{"/":"/a\u0000b"}]}]}}"#),
    .init(code: .unnormalizedPathPattern, pointer: "/applinks/details/0/paths/0", text: #"{"applinks":{"details":[{"appID":"\#(A)","paths":["x"]}]}}"#),
    .init(code: .defaultsNotObject, pointer: "/applinks/defaults", text: #"{"applinks":{"defaults":true,"details":[{"appIDs":["\#(A)"],"components":[{"/":"/x"}]}]}}"#),
    .init(code: .unknownDefaultsKey, pointer: "/applinks/details/0/defaults/caseSensitve", text: #"{"applinks":{"details":[{"appIDs":["\#(A)"],"defaults":{"caseSensitve":false},"components":[{"/":"/x"}]}]}}"#),
    .init(code: .variablesNotObject, pointer: "/applinks/substitutionVariables", text: #"{"applinks":{"substitutionVariables":[],"details":[{"appIDs":["\#(A)"],"components":[{"/":"/x"}]}]}}"#),
    .init(code: .variableValuesWrongType, pointer: "/applinks/substitutionVariables/v", text: #"{"applinks":{"substitutionVariables":{"v":3},"details":[{"appIDs":["\#(A)"],"components":[{"/":"/x"}]}]}}"#),
    .init(code: .variableValueNotString, pointer: "/applinks/substitutionVariables/v/1", text: #"{"applinks":{"substitutionVariables":{"v":["a",2]},"details":[{"appIDs":["\#(A)"],"components":[{"/":"/$(v)"}]}]}}"#),
    .init(code: .variableValueReferencesVariable, pointer: "/applinks/substitutionVariables/v/0", text: #"{"applinks":{"substitutionVariables":{"v":["$(digit)x","y"]},"details":[{"appIDs":["\#(A)"],"components":[{"/":"/$(v)"}]}]}}"#),
    .init(code: .invalidVariableName, pointer: "/applinks/substitutionVariables/a(b", text: #"{"applinks":{"substitutionVariables":{"a(b":["x"]},"details":[{"appIDs":["\#(A)"],"components":[{"/":"/x"}]}]}}"#),
    .init(code: .variableShadowsBuiltIn, pointer: "/applinks/substitutionVariables/digit", text: #"{"applinks":{"substitutionVariables":{"digit":["x"]},"details":[{"appIDs":["\#(A)"],"components":[{"/":"/$(digit)"}]}]}}"#),
    .init(code: .variableWithoutValues, pointer: "/applinks/substitutionVariables/v", text: #"{"applinks":{"substitutionVariables":{"v":[]},"details":[{"appIDs":["\#(A)"],"components":[{"/":"/$(v)"}]}]}}"#),
    .init(code: .unusedVariable, pointer: "/applinks/substitutionVariables/spare", text: #"{"applinks":{"substitutionVariables":{"spare":["x"]},"details":[{"appIDs":["\#(A)"],"components":[{"/":"/x"}]}]}}"#),
]

@Suite struct ValidationTests {
    func file(for testCase: ValidationCase) -> AASAFile {
        if testCase.code == .notUTF8 {
            return AASAFile.read(Array(#"{"applinks":"caf"#.utf8) + [0xFF] + Array(#""}"#.utf8))
        }
        return AASAFile.read(testCase.text)
    }

    @Test(arguments: validationCases)
    func emitsTheCodeAtThePointer(testCase: ValidationCase) {
        let file = file(for: testCase)
        let hits = file.diagnostics.filter { $0.code == testCase.code }
        #expect(hits.map(\.pointer.description).contains(testCase.pointer),
                "expected \(testCase.code.rawValue) at '\(testCase.pointer)', got \(file.diagnostics.map(\.description))")
        #expect(file.isValid == !file.diagnostics.contains { $0.severity == .error })
        if testCase.code.severity == .error { #expect(!file.isValid) }
        for d in hits { #expect(!d.message.isEmpty && !d.message.contains("\n")) }
    }

    @Test func everyCodeHasATestCase() {
        let tested = Set(validationCases.map(\.code))
        let missing = DiagnosticCode.allCases.filter { !tested.contains($0) }
        #expect(missing.isEmpty, "untested codes: \(missing.map(\.rawValue))")
    }

    @Test func everyCodeIsDocumented() throws {
        let docs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/diagnostics.md")
        let text = try String(contentsOf: docs, encoding: .utf8)
        for code in DiagnosticCode.allCases {
            #expect(text.contains("| \(code.rawValue) | `\(code.name)` | \(code.severity.rawValue) |"),
                    "docs/diagnostics.md lacks a row for \(code.rawValue)")
        }
    }

    @Test func codesAreUnique() {
        #expect(Set(DiagnosticCode.allCases.map(\.rawValue)).count == DiagnosticCode.allCases.count)
        #expect(Set(DiagnosticCode.allCases.map(\.name)).count == DiagnosticCode.allCases.count)
    }

    @Test func appleExampleIsClean() throws {
        let example = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("examples/apple-overview.json")
        let file = AASAFile.read(Array(try Data(contentsOf: example)))
        #expect(file.diagnostics.isEmpty, "\(file.diagnostics)")
    }

    @Test func contractSeverities() {
        // The contract fixes these severities.
        #expect(DiagnosticCode.tooLarge.severity == .error)
        #expect(DiagnosticCode.malformedAppID.severity == .error)
        #expect(DiagnosticCode.unknownVariable.severity == .error)
        #expect(DiagnosticCode.bothAppIDForms.severity == .warning)
        #expect(DiagnosticCode.variableValueReferencesVariable.severity == .warning)
        #expect(DiagnosticCode.queryNonStringValue.severity == .warning)
        #expect(DiagnosticCode.emptyDetails.severity == .warning)
        #expect(DiagnosticCode.unreachableRule.severity == .warning)
        #expect(DiagnosticCode.pathsAndComponents.severity == .note)
        #expect(DiagnosticCode.legacyAppsKey.severity == .note)
        #expect(DiagnosticCode.unknownComponentKey.severity == .note)
    }

    @Test func oversizedFileStillGetsTheRestOfItsDiagnostics() {
        let big = #"{"applinks":{"details":[{"appIDs":["bad"],"components":[]}]},"pad":""# + String(repeating: "x", count: 140_000) + "\"}"
        let found = Set(codes(AASAFile.read(big)))
        #expect(found.isSuperset(of: ["AE005", "AE023"]))
    }
}

/// Hostile sizes: wide objects and repeated problems stay cheap and their diagnostics small.
@Suite struct WideFileTests {
    /// A details entry with thousands of unknown keys (close to the 131,072-byte limit): looked
    /// up in constant time, and reported as five diagnostics plus one summary with the count
    /// (before: 0.9 s of CPU and one diagnostic per key).
    @Test func thousandsOfUnknownKeysGiveFiveDiagnosticsAndACount() throws {
        let keys = (0..<9_000).map { #""k\#($0)":1"# }.joined(separator: ",")
        let text = #"{"applinks":{"details":[{"appIDs":["\#(A)"],"components":[{"/":"/x"}],\#(keys)}]}}"#
        #expect(text.utf8.count <= AASAFile.maximumSize)
        let file = AASAFile.read(Array(text.utf8))
        let unknown = file.diagnostics.filter { $0.code == .unknownDetailKey }
        #expect(unknown.count == 6)
        #expect(unknown.last?.count == 8_995)
        #expect(unknown.last?.pointer.description == "/applinks/details/0/k5")
        #expect(file.isValid)
        let stored = JSONWriter.string(.array(file.diagnostics.map(\.json)))
        #expect(stored.utf8.count < 4_096, "diagnostics JSON of \(stored.utf8.count) bytes")
        #expect(stored.contains(#""count":8995"#))
    }

    /// The same key repeated thousands of times: one duplicate-key diagnostic per listed
    /// occurrence up to five, then a count (before: 2.66 MB of diagnostics).
    @Test func repeatedDuplicateKeysAreCounted() throws {
        let repeats = (0..<8_000).map { _ in #""x":1"# }.joined(separator: ",")
        let text = #"{"webcredentials":{"apps":["\#(A)"]},"pad":{\#(repeats)}}"#
        let file = AASAFile.read(Array(text.utf8))
        let duplicates = file.diagnostics.filter { $0.code == .duplicateKey }
        #expect(duplicates.count == 6)
        #expect(duplicates.map(\.count).reduce(0, +) == 7_999)
    }

    /// Lookups in a wide object find the last member of a name, as in a narrow one.
    @Test func wideObjectLookupKeepsLastMemberSemantics() {
        var members = (0..<100).map { JSONMember("k\($0)", .number(JSONNumber(String($0)))) }
        members.append(JSONMember("k3", "last"))
        var object = JSONObject(members)
        #expect(object["k3"] == "last")
        #expect(object["k99"] == .number(JSONNumber("99")))
        #expect(object["missing"] == nil)
        object.members.append(JSONMember("k99", "changed"))
        #expect(object["k99"] == "changed")
        #expect(object.uniqueMembers.count == 100)
    }
}

/// What a user meets in `validate` on files that work on devices (small files written for these
/// tests): no false errors, causes named, typos explained, traps pointed out.
@Suite struct ActionableDiagnosticsTests {
    func codes(_ text: String) -> [DiagnosticCode] { AASAFile.read(text).diagnostics.map(\.code) }

    /// One unusable app ID beside a usable one is a warning naming it; the file stays valid.
    /// An entry with no usable app ID is still an error.
    @Test func anUnusableAppIDBesideAUsableOneIsAWarning() {
        let mixed = AASAFile.read(#"{"applinks":{"details":[{"appIDs":["\#(A)","com.example.noteam"],"components":[{"/":"/x"}]}]}}"#)
        #expect(mixed.isValid)
        let warning = mixed.diagnostics.first { $0.code == .unusableAppID }
        #expect(warning?.severity == .warning && warning?.message.contains("com.example.noteam") == true)
        let none = AASAFile.read(#"{"applinks":{"details":[{"appIDs":["com.example.noteam"],"components":[{"/":"/x"}]}]}}"#)
        #expect(!none.isValid && none.diagnostics.contains { $0.code == .malformedAppID })
        let list = AASAFile.read(#"{"webcredentials":{"apps":["\#(A)","noteam"]}}"#)
        #expect(list.isValid && list.diagnostics.map(\.code) == [.unusableAppID])
    }

    /// The legacy `"apps": []` inside applinks is accepted silently.
    @Test func legacyEmptyAppsIsSilent() {
        #expect(codes(#"{"applinks":{"apps":[],"details":[{"appIDs":["\#(A)"],"components":[{"/":"/x"}]}]}}"#).isEmpty)
    }

    /// Near-miss keys say which key was probably meant.
    @Test func typosGetADidYouMean() {
        let cases: [(String, String)] = [
            (#"{"applinks":{"details":[{"appId":"\#(A)","components":[]}]}}"#, "appID"),
            (#"{"applinks":{"details":[{"appIds":["\#(A)"],"components":[]}]}}"#, "appIDs"),
            (#"{"applinks":{"details":[{"appIDs":["\#(A)"],"component":[]}]}}"#, "components"),
            (#"{"applinks":{"details":[{"appIDs":["\#(A)"],"Paths":["/x"]}]}}"#, "paths"),
            (#"{"applink":{"details":[]},"webcredentials":{"apps":["\#(A)"]}}"#, "applinks"),
            (#"{"webcredential":{"apps":["\#(A)"]},"applinks":{"details":[]}}"#, "webcredentials"),
            (#"{"applinks":{"details":[{"appIDs":["\#(A)"],"components":[{"/":"/x","casesensitive":false}]}]}}"#, "caseSensitive"),
        ]
        for (text, meant) in cases {
            let messages = AASAFile.read(text).diagnostics.map(\.message)
            #expect(messages.contains { $0.contains("did you mean '\(meant)'?") }, "\(meant): \(messages)")
        }
        let unrelated = AASAFile.read(#"{"applinks":{"details":[{"appIDs":["\#(A)"],"components":[],"zzzz":1}]}}"#)
        #expect(!unrelated.diagnostics.contains { $0.message.contains("did you mean") })
    }

    /// Patterns that can never match, `?` in a path, and `"*"` for a query item.
    @Test func trapsInPatternsArePointedOut() {
        let hash = AASAFile.read(#"{"applinks":{"details":[{"appIDs":["\#(A)"],"components":[{"/":"/help#faq"}]}]}}"#)
        #expect(hash.diagnostics.first { $0.code == .fragmentInPathPattern }?.severity == .warning)
        // With percentEncoded false a decoded path can hold '#' (from %23): no warning then.
        #expect(!codes(#"{"applinks":{"details":[{"appIDs":["\#(A)"],"components":[{"/":"/a#b","percentEncoded":false}]}]}}"#).contains(.fragmentInPathPattern))
        #expect(codes(#"{"applinks":{"details":[{"appID":"\#(A)","paths":["/a#b"]}]}}"#).contains(.fragmentInPathPattern))
        let question = AASAFile.read(#"{"applinks":{"details":[{"appIDs":["\#(A)"],"components":[{"/":"/search?q=1"}]}]}}"#)
        let note = question.diagnostics.first { $0.code == .questionMarkInPathPattern }
        #expect(note?.severity == .note && note?.message.contains("'?' key") == true)
        let star = AASAFile.read(#"{"applinks":{"details":[{"appIDs":["\#(A)"],"components":[{"?":{"id":"*","q":"?*"}}]}]}}"#)
        let starNotes = star.diagnostics.filter { $0.code == .queryStarMatchesAbsent }
        #expect(starNotes.map(\.pointer.description) == ["/applinks/details/0/components/0/?/id"])
        #expect(starNotes.first?.message.contains("'?*'") == true)
    }

    /// JSON syntax errors name their common causes, with line and column.
    @Test func jsonErrorsNameTheCause() {
        let cases: [(String, String)] = [
            ("{\n  // links\n  \"applinks\": {}\n}", "a comment at line 2, column 3"),
            ("{\"applinks\":{\"details\":[],}}", "a trailing comma at line 1, column 26"),
            ("{\"webcredentials\":{\"apps\":['\(A)']}}", "single quotes at line 1, column 28"),
            ("{applinks:{}}", "an unquoted key at line 1, column 2"),
            ("\n<!DOCTYPE html><html><body>Not Found</body></html>", "HTML or XML page"),
        ]
        for (text, cause) in cases {
            let file = AASAFile.read(text)
            #expect(file.diagnostics.count == 1 && file.diagnostics.first?.code == .notJSON)
            #expect(file.diagnostics.first?.message.contains(cause) == true, "\(cause): \(file.diagnostics.map(\.message))")
        }
        // Other syntax errors keep the parser's own description.
        #expect(AASAFile.read("{\"a\": }").diagnostics.first?.message.hasPrefix("not valid JSON:") == true)
    }

    /// A byte-order mark is a warning; the file is still read.
    @Test func byteOrderMarkIsAWarning() {
        let file = AASAFile.read(Array([0xEF, 0xBB, 0xBF] + Array(#"{"webcredentials":{"apps":["\#(A)"]}}"#.utf8)))
        #expect(file.isValid && file.document != nil)
        #expect(file.diagnostics.map(\.code) == [.byteOrderMark])
    }

    /// Keys and values quoted in messages never carry control characters to a terminal.
    @Test func controlCharactersInKeysAreEscaped() {
        let file = AASAFile.read(#"{"webcredentials":{"apps":["\#(A)"]},"\u001b[2Jx":1}"#)
        let text = file.diagnostics.map(\.description).joined()
        #expect(!text.unicodeScalars.contains { $0.value == 0x1B })
        #expect(text.contains("\\u{1B}"))
    }
}

