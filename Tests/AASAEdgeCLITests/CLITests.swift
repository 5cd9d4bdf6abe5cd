import AASAEngine
import Foundation
import Testing

/// Runs the real `aasa-edge` binary built beside the tests.
enum Binary {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static let url: URL = {
        if let override = ProcessInfo.processInfo.environment["AASA_EDGE_BIN"] { return URL(fileURLWithPath: override) }
        let besideTests = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("aasa-edge")
        if FileManager.default.isExecutableFile(atPath: besideTests.path) { return besideTests }
        return root.appendingPathComponent(".build/debug/aasa-edge")
    }()

    struct Result {
        let status: Int32
        let stdout: String
        let stderr: String
    }

    static func run(_ arguments: [String], stdin: String? = nil, environment: [String: String] = [:]) throws -> Result {
        let process = Process()
        process.executableURL = url
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("aasa-edge-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let out = directory.appendingPathComponent("out"), err = directory.appendingPathComponent("err")
        FileManager.default.createFile(atPath: out.path, contents: nil)
        FileManager.default.createFile(atPath: err.path, contents: nil)
        process.standardOutput = try FileHandle(forWritingTo: out)
        process.standardError = try FileHandle(forWritingTo: err)
        let input = Pipe()
        process.standardInput = input
        try process.run()
        if let stdin { input.fileHandleForWriting.write(Data(stdin.utf8)) }
        try input.fileHandleForWriting.close()
        process.waitUntilExit()
        return Result(status: process.terminationStatus,
                      stdout: try String(contentsOf: out, encoding: .utf8),
                      stderr: try String(contentsOf: err, encoding: .utf8))
    }
}

/// Temporary files for one test.
final class Scratch {
    let directory: URL
    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("aasa-edge-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }
    deinit { try? FileManager.default.removeItem(at: directory) }

    func file(_ name: String, _ bytes: [UInt8]) throws -> String {
        let url = directory.appendingPathComponent(name)
        try Data(bytes).write(to: url)
        return url.path
    }
    func file(_ name: String, _ text: String) throws -> String { try file(name, Array(text.utf8)) }
}

let example = Binary.root.appendingPathComponent("examples/apple-overview.json").path
let exampleApp = "ABCDE12345.com.example.app"

func json(_ text: String) throws -> JSONObject {
    try #require(try JSONReader.parse(text.trimmingCharacters(in: .whitespacesAndNewlines)).objectValue)
}

@Suite struct HelpAndUsageTests {
    @Test func helpExitsZeroEverywhere() throws {
        for args in [["--help"], ["validate", "--help"], ["match", "--help"], ["diff", "--help"], ["help"]] {
            let r = try Binary.run(args)
            #expect(r.status == 0, "\(args)")
            #expect(r.stdout.contains("USAGE"), "\(args)")
        }
        #expect(try Binary.run(["--help"]).stdout.contains("validate"))
    }

    @Test func usageErrorsExitTwo() throws {
        for args in [["frobnicate"], ["validate"], ["validate", "--nope", example], ["match", example],
                     ["match", example, "--app-id", exampleApp], ["match", example, "https://x.test/", "--app-id", exampleApp, "--expect", "maybe"],
                     ["match", "--jsonl", example]] {
            let r = try Binary.run(args)
            #expect(r.status == 2, "\(args): \(r.stderr)")
            #expect(!r.stderr.isEmpty)
            #expect(r.stdout.isEmpty)
        }
    }

    /// No subcommand: the overview on stderr and exit 2 (the contract); help defaults read as
    /// the numbers they are (`3600`, not `3600.0`) and every value has a placeholder.
    @Test func noSubcommandAndHelpTexts() throws {
        let bare = try Binary.run([])
        #expect(bare.status == 2)
        #expect(bare.stdout.isEmpty && bare.stderr.contains("SUBCOMMANDS"))
        let serve = try Binary.run(["serve", "--help"])
        #expect(serve.status == 0)
        #expect(serve.stdout.contains("3600)") && !serve.stdout.contains("3600.0"))
        #expect(serve.stdout.contains("/metrics") && serve.stdout.contains("dashboard"))
        let placeholders = serve.stdout.split(separator: "\n").filter { $0.hasPrefix("  --") && $0.contains(" <") }
        #expect(placeholders.allSatisfy { line in line.range(of: #"<[A-Z][A-Z0-9:.-]*>"#, options: .regularExpression) != nil },
                "lowercase placeholders: \(placeholders.filter { $0.range(of: #"<[A-Z]"#, options: .regularExpression) == nil })")
    }

    @Test func version() throws {
        let r = try Binary.run(["--version"])
        #expect(r.status == 0)
        #expect(!r.stdout.isEmpty)
    }
}

@Suite struct ValidateCommandTests {
    @Test func validFile() throws {
        let r = try Binary.run(["validate", example])
        #expect(r.status == 0)
        #expect(r.stdout.contains("valid (0 errors"))
        let j = try Binary.run(["validate", "--json", example])
        let object = try json(j.stdout)
        #expect(object.keys == ["valid", "diagnostics"])
        #expect(object["valid"] == .bool(true))
    }

    @Test func invalidFileExitsOneWithDiagnostics() throws {
        let scratch = try Scratch()
        let path = try scratch.file("bad.json", #"{"applinks":{"details":[{"appIDs":["com.example"],"components":[{"/":5}]}]}}"#)
        let r = try Binary.run(["validate", "--json", path])
        #expect(r.status == 1)
        let object = try json(r.stdout)
        #expect(object["valid"] == .bool(false))
        let diagnostics = try #require(object["diagnostics"]?.arrayValue)
        let first = try #require(diagnostics.first?.objectValue)
        #expect(first.keys == ["code", "severity", "pointer", "message"])
        let codes = diagnostics.compactMap { $0.objectValue?["code"]?.stringValue }
        #expect(codes.contains("AE023") && codes.contains("AE041"))
        let human = try Binary.run(["validate", path])
        #expect(human.status == 1)
        #expect(human.stdout.contains("error AE023 malformed-app-id at /applinks/details/0/appIDs/0"))
    }

    /// Text output lists errors, then warnings, then notes (each in document order); --json keeps
    /// document order.
    @Test func textOutputGroupsBySeverity() throws {
        let scratch = try Scratch()
        // In document order: a note (unknown key), a warning (duplicate app), an error (non-string pattern).
        let path = try scratch.file("mixed.json", #"{"applinks":{"details":[{"appIDs":["\#(exampleApp)"],"comp":1,"components":[{"/":"/a"}]},{"appIDs":["\#(exampleApp)"],"components":[{"/":5}]}]}}"#)
        let human = try Binary.run(["validate", path])
        #expect(human.status == 1)
        let severities = human.stdout.split(separator: "\n").dropFirst().compactMap { $0.split(separator: " ").first.map(String.init) }
        #expect(severities == severities.sorted { ["error": 0, "warning": 1, "note": 2][$0]! < ["error": 0, "warning": 1, "note": 2][$1]! })
        #expect(Set(severities) == ["error", "warning", "note"], "\(human.stdout)")
        let document = try #require(try json(try Binary.run(["validate", "--json", path]).stdout)["diagnostics"]?.arrayValue)
        #expect(document.compactMap { $0.objectValue?["severity"]?.stringValue }.first == "note")
    }

    @Test func readsStandardInput() throws {
        let r = try Binary.run(["validate", "-"], stdin: #"{"webcredentials":{"apps":["ABCDE12345.com.x"]}}"#)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.hasPrefix("(stdin): valid"))
    }

    @Test(arguments: [
        ("empty", [UInt8](), "AE003"),
        ("not-utf8", Array(#"{"a":""#.utf8) + [0xC3, 0x28] + Array(#""}"#.utf8), "AE001"),
        ("not-json", Array("{nope".utf8), "AE002"),
        ("array", Array("[1,2]".utf8), "AE004"),
        ("huge", Array(#"{"webcredentials":{"apps":["ABCDE12345.com.x"]},"x":""#.utf8) + [UInt8](repeating: 0x61, count: 200_000) + Array(#""}"#.utf8), "AE005"),
        ("binary", (0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 37) }, "AE001"),
    ])
    func badContentIsAClearErrorNotACrash(name: String, bytes: [UInt8], code: String) throws {
        let scratch = try Scratch()
        let path = try scratch.file(name, bytes)
        let r = try Binary.run(["validate", "--json", path])
        #expect(r.status == 1, "\(name): \(r.stderr)")
        #expect(r.stderr.isEmpty)
        let codes = try #require(try json(r.stdout)["diagnostics"]?.arrayValue).compactMap { $0.objectValue?["code"]?.stringValue }
        #expect(codes.contains(code), "\(name): \(codes)")
    }

    @Test func fileBeyondTheReadLimit() throws {
        let scratch = try Scratch()
        let path = try scratch.file("giant", [UInt8](repeating: 0x20, count: (8 << 20) + 10))
        let r = try Binary.run(["validate", path])
        #expect(r.status == 1)
        #expect(r.stdout.contains("AE005"))
    }

    @Test func unreadableInputExitsThree() throws {
        let scratch = try Scratch()
        for path in ["/nonexistent/aasa.json", scratch.directory.path] {
            let r = try Binary.run(["validate", path])
            #expect(r.status == 3, "\(path)")
            #expect(r.stdout.isEmpty)
            #expect(r.stderr.hasPrefix("error: cannot read"))
            #expect(r.stderr.split(separator: "\n").count == 1)
        }
    }
}

@Suite struct MatchCommandTests {
    @Test func decisionsAndExpect() throws {
        let r = try Binary.run(["match", example, "--app-id", exampleApp, "https://example.com/buy/1", "https://example.com/help/website/x", "https://example.com/nope"])
        #expect(r.status == 0)
        let lines = r.stdout.split(separator: "\n")
        #expect(lines.count == 3)
        #expect(lines[0].hasPrefix("match ") && lines[0].contains("/applinks/details/0/components/1"))
        #expect(lines[1].hasPrefix("exclude "))
        #expect(lines[2].hasPrefix("no_match "))
        #expect(try Binary.run(["match", example, "--app-id", exampleApp, "--expect", "match", "https://example.com/buy/1"]).status == 0)
        #expect(try Binary.run(["match", example, "--app-id", exampleApp, "--expect", "match", "https://example.com/buy/1", "https://example.com/x"]).status == 1)
    }

    @Test func jsonOutputAndDomain() throws {
        let r = try Binary.run(["match", "--json", example, "--app-id", exampleApp, "--domain", "example.com", "https://example.com/buy/1", "https://other.test/buy/1"])
        #expect(r.status == 0)
        let object = try json(r.stdout)
        let results = try #require(object["results"]?.arrayValue).compactMap(\.objectValue)
        #expect(results.map { $0["decision"]?.stringValue } == ["match", "no_match"])
        #expect(results[0]["rule"] == .string("/applinks/details/0/components/1"))
        #expect(results[1]["reason"] == .string("host-mismatch"))
    }

    @Test func malformedURLIsAUsageError() throws {
        let r = try Binary.run(["match", example, "--app-id", exampleApp, "not a url"])
        #expect(r.status == 2)
        #expect(r.stderr.contains("error:"))
    }

    /// One unparsable URL among several: the others are still decided, the bad one gets its own
    /// error line (`error` in --json), and the run exits 2 at the end. `http://[bad` is unparsable.
    @Test func badURLsAmongGoodOnes() throws {
        let urls = ["https://example.com/buy/1", "https://example.com/a b", "http://[bad", "https://example.com/nope"]
        let r = try Binary.run(["match", example, "--app-id", exampleApp] + urls)
        #expect(r.status == 2)
        let lines = r.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 4)
        #expect(lines[0].hasPrefix("match "))
        #expect(lines[1].hasPrefix("error ") && lines[1].contains("a space"))
        #expect(lines[2].hasPrefix("error ") && lines[2].contains("[bad"))
        #expect(lines[3].hasPrefix("no_match "))
        #expect(r.stderr.contains("2 of 4 URLs could not be parsed"))
        let j = try Binary.run(["match", "--json", example, "--app-id", exampleApp] + urls)
        #expect(j.status == 2)
        let results = try #require(try json(j.stdout)["results"]?.arrayValue).compactMap(\.objectValue)
        #expect(results.map { $0["decision"]?.stringValue } == ["match", nil, nil, "no_match"])
        #expect(results[2]["url"] == .string("http://[bad") && results[2]["error"]?.stringValue != nil)
    }

    /// For legacy `paths` the explanation names the string that decided and whether it was a NOT rule.
    @Test func legacyPathExplanations() throws {
        let scratch = try Scratch()
        let path = try scratch.file("legacy.json", #"{"applinks":{"apps":[],"details":[{"appID":"\#(exampleApp)","paths":["NOT /private/*","/*"]}]}}"#)
        let r = try Binary.run(["match", path, "--app-id", exampleApp, "https://example.com/private/x", "https://example.com/open"])
        let lines = r.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first?.hasPrefix("exclude ") == true && lines.first?.contains(#"the NOT rule "NOT /private/*" matched"#) == true, "\(lines)")
        #expect(lines.last?.hasPrefix("match ") == true && lines.last?.contains(#"the path "/*" matched"#) == true, "\(lines)")
    }

    @Test func unusableFileIsBad() throws {
        let scratch = try Scratch()
        let path = try scratch.file("x.json", "[]")
        let r = try Binary.run(["match", path, "--app-id", exampleApp, "https://example.com/"])
        #expect(r.status == 1)
        #expect(r.stderr.contains("is not a usable AASA file"))
    }

    @Test func jsonLinesProtocol() throws {
        let aasa = #"{"applinks":{"details":[{"appIDs":["ABCDE12345.com.example.app"],"components":[{"/":"/a/*"}]}]}}"#
        let input = [
            #"{"id":1,"aasa":\#(aasa),"domain":"example.com","appId":"ABCDE12345.com.example.app","url":"https://example.com/a/b"}"#,
            #"{"id":"two","aasa":\#(JSONWriter.string(.string(aasa))),"appId":"ABCDE12345.com.example.app","url":"https://example.com/b"}"#,
            #"{"id":3,"aasa":\#(aasa),"domain":"example.com","appId":"ABCDE12345.com.example.app","url":"https://other.test/a/b"}"#,
            #"{"id":4,"aasa":\#(aasa),"domain":"","appId":"ABCDE12345.com.example.app","url":"https://other.test/a/b"}"#,
            #"{"id":5,"aasa":"[1]","appId":"x","url":"https://example.com/"}"#,
            "not json",
            #"{"id":7,"aasa":\#(aasa),"appId":"ABCDE12345.com.example.app","url":"bad url"}"#,
        ].joined(separator: "\n") + "\n"
        let r = try Binary.run(["match", "--jsonl"], stdin: input)
        #expect(r.status == 0)
        let lines = try r.stdout.split(separator: "\n").map { try json(String($0)) }
        #expect(lines.count == 7)
        #expect(lines[0]["id"] == 1 && lines[0]["decision"] == "match")
        #expect(lines[1]["id"] == "two" && lines[1]["decision"] == "no_match")
        #expect(lines[2]["decision"] == "no_match")
        #expect(lines[3]["decision"] == "match")
        #expect(lines[4]["id"] == 5 && lines[4]["error"] != nil)
        #expect(lines[5]["error"] != nil)
        #expect(lines[6]["id"] == 7 && lines[6]["error"] != nil)
    }
}

@Suite struct DiffCommandTests {
    @Test func identicalAndDifferent() throws {
        let scratch = try Scratch()
        let old = try scratch.file("old.json", #"{"applinks":{"details":[{"appIDs":["ABCDE12345.com.a"],"components":[{"/":"/x"}]}]}}"#)
        let same = try scratch.file("same.json", #"{ "applinks" : { "details" : [ { "components" : [ { "/" : "//x/" } ], "appIDs" : [ "ABCDE12345.com.a" ] } ] } }"#)
        let new = try scratch.file("new.json", #"{"applinks":{"details":[{"appIDs":["ABCDE12345.com.a","ABCDE12345.com.b"],"components":[{"/":"/x"},{"/":"/y"}]}]}}"#)
        let equal = try Binary.run(["diff", "--exit-code", old, same])
        #expect(equal.status == 0)
        #expect(equal.stdout.contains("no semantic difference"))
        let changed = try Binary.run(["diff", old, new])
        #expect(changed.status == 0)
        #expect(changed.stdout.contains("+ applinks app ABCDE12345.com.b"))
        #expect(changed.stdout.contains("+ rule 1"))
        #expect(try Binary.run(["diff", "--exit-code", old, new]).status == 1)
        let j = try json(try Binary.run(["diff", "--json", old, new]).stdout)
        #expect(j["identical"] == .bool(false))
        #expect(try Binary.run(["diff", old, "/nonexistent"]).status == 3)
    }
}
