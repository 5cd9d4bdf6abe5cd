import Foundation
import Testing
@testable import AASAEngine

/// The shared conformance corpus (../shared/conformance, swcutil-verified). Skipped when the
/// folder is not beside the project (a user's checkout); CI always has it.
enum Corpus {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("shared/conformance")

    static var isPresent: Bool { FileManager.default.fileExists(atPath: folder.appendingPathComponent("cases.json").path) }

    struct Case: CustomTestStringConvertible, Sendable {
        let name: String
        let aasa: JSONValue
        let domain: String
        let appID: String
        let url: String
        let expect: String
        var testDescription: String { name }
    }

    static let cases: [Case] = {
        guard let data = try? Data(contentsOf: folder.appendingPathComponent("cases.json")),
              let root = try? JSONReader.parse(String(decoding: data, as: UTF8.self)).objectValue,
              let matching = root["matching"]?.arrayValue else { return [] }
        return matching.compactMap { entry in
            guard let o = entry.objectValue, let name = o["name"]?.stringValue, let aasa = o["aasa"],
                  let appID = o["appId"]?.stringValue, let url = o["url"]?.stringValue,
                  let expect = o["expect"]?.stringValue else { return nil }
            return Case(name: name, aasa: aasa, domain: o["domain"]?.stringValue ?? "", appID: appID, url: url, expect: expect)
        }
    }()

    struct Probe: CustomTestStringConvertible, Sendable {
        let group: String
        let name: String
        let subject: JSONValue
        let url: String
        let expect: Decision
        var testDescription: String { "\(group)/\(name)" }
    }

    /// swcutil-gap-probes.tsv: rows whose output states match, no match or block.
    static let gapProbes: [Probe] = {
        guard let text = try? String(contentsOf: folder.appendingPathComponent("swcutil-gap-probes.tsv"), encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { line in
            let columns = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard columns.count >= 6, let subject = try? JSONReader.parse(columns[2]) else { return nil }
            let output = columns[5]
            let expect: Decision
            if output.contains("blocked match") {
                expect = .exclude
            } else if output.contains("Did not match") || output.contains("did not match") {
                expect = .noMatch
            } else if output.contains("Matched by pattern") || output.contains("matched.") {
                expect = .match
            } else {
                return nil
            }
            return Probe(group: columns[0], name: columns[1], subject: subject, url: columns[3], expect: expect)
        }
    }()
}

@Suite(.enabled(if: Corpus.isPresent, "../shared/conformance is not beside the project"))
struct ConformanceTests {
    @Test func corpusIsComplete() {
        #expect(Corpus.cases.count == 140)
        #expect(Corpus.gapProbes.count == 16)
    }

    @Test(arguments: Corpus.cases)
    func swcutilCase(_ c: Corpus.Case) throws {
        let file = AASAFile.read(JSONWriter.string(c.aasa))
        let document = try #require(file.document)
        let result = CompiledAASA(document).match(try MatchURL(c.url), appID: c.appID, domain: c.domain)
        #expect(result.decision.rawValue == c.expect)
    }

    @Test(arguments: Corpus.gapProbes)
    func gapProbe(_ probe: Corpus.Probe) throws {
        // `swcutil match -j DICT` probes take one component; `swcutil verify` probes a whole file.
        let aasa: JSONValue = probe.subject.objectValue?["applinks"] != nil
            ? probe.subject
            : ["applinks": ["details": [["appIDs": ["ABCDE12345.com.example.app"], "components": [probe.subject]]]]]
        let document = try #require(AASAFile.read(JSONWriter.string(aasa)).document)
        let result = CompiledAASA(document).match(try MatchURL(probe.url), appID: "ABCDE12345.com.example.app", domain: "example.com")
        #expect(result.decision == probe.expect)
    }
}
