import AASAEngine
import Foundation
import TestOrigin
import Testing

/// Runs the real binary (not `serve`) and returns (status, stdout).
/// Runs the binary with `arguments`; `meanwhile` runs once it has started (e.g. changing the
/// origin under a running probe). Returns the exit status and stdout.
func runCLI(_ arguments: [String], meanwhile: () throws -> Void = {}) throws -> (Int32, String) {
    let process = Process()
    process.executableURL = EdgeProcess.binary
    process.arguments = arguments
    let out = Pipe()
    process.standardOutput = out
    process.standardError = FileHandle.nullDevice
    try process.run()
    try meanwhile()
    let data = out.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: data, as: UTF8.self))
}

@Suite(.serialized) struct HistoryTests {
    @Test func historyRoutesAndCommands() throws {
        let host = "history.lab.test"
        let v1 = aasaBody(path: "/one/*")
        let v2 = aasaBody(path: "/two/*")
        try origin.serve(host, body: v1)
        let db = temporaryDB()
        let edge = try startEdge(hosts: [host], db: db)
        defer { edge.stop() }
        _ = try edge.admin("POST", "/domains/\(host)/refetch")
        try origin.serve(host, body: v2)
        _ = try edge.admin("POST", "/domains/\(host)/refetch")
        try origin.set(host, ["status": 404])
        _ = try edge.admin("POST", "/domains/\(host)/refetch")

        let snapshots = try #require(try json(try edge.admin("GET", "/domains/\(host)/snapshots"))["snapshots"]?.arrayValue)
        #expect(snapshots.compactMap { $0.objectValue?["version"] } == [2, 1])
        #expect(snapshots.first?.objectValue?.keys == ["version", "sha256", "size", "firstFetchedAt", "lastConfirmedAt", "valid"])
        #expect(snapshots.first?.objectValue?["size"] == .number(JSONNumber(String(v2.utf8.count))))

        let bytes = try edge.admin("GET", "/domains/\(host)/snapshots/1")
        #expect(bytes.status == 200 && bytes.text == v1 && bytes["content-type"] == "application/json")
        #expect(try edge.admin("GET", "/domains/\(host)/snapshots/9").status == 404)
        #expect(try edge.admin("GET", "/domains/\(host)/snapshots/x").status == 400)

        let diff = try json(try edge.admin("GET", "/domains/\(host)/diff?from=1&to=2"))
        #expect(diff["identical"] == .bool(false))
        let changes = try #require(diff["rules"]?.arrayValue?.first?.objectValue?["changes"]?.arrayValue)
        #expect(changes.first?.objectValue?["change"] == "changed")
        #expect(try json(try edge.admin("GET", "/domains/\(host)/diff"))["rules"] == diff["rules"])  // defaults to the two newest
        #expect(try json(try edge.admin("GET", "/domains/\(host)/diff?from=2&to=2"))["identical"] == .bool(true))

        let fetches = try #require(try json(try edge.admin("GET", "/domains/\(host)/fetches?limit=2"))["fetches"]?.arrayValue)
        #expect(fetches.count == 2)
        #expect(fetches.compactMap { $0.objectValue?["outcome"] } == ["failed", "updated"])
        #expect(fetches.first?.objectValue?["reason"] == "SWCERR00101 Bad HTTP Response: 404 Not Found")
        #expect(fetches.first?.objectValue?["status"] == 404)
        #expect(try edge.admin("GET", "/domains/\(host)/fetches?limit=0").status == 400)
        #expect(try edge.admin("GET", "/domains/unknown.lab.test/fetches").status == 404)
        #expect(try edge.admin("GET", "/domains/unknown.lab.test/snapshots").status == 404)

        // The propagation ledger: served versions per client.
        #expect(try edge.get("/a/v1/\(host)", headers: ["X-Client-ID": "phone"]).status == 200)
        let ledger = try json(try edge.admin("GET", "/domains/\(host)/propagation"))
        #expect(ledger["domain"] == .string(host))
        let versions = (ledger["versions"]?.arrayValue ?? []).compactMap { $0.objectValue }
        #expect(versions.map { $0["version"] } == [2, 1])
        #expect(versions[0]["clients"]?.objectValue?["count"] == 1)
        #expect(versions[0]["firstServedAt"] != .null && versions[0]["originLastSeenPrevious"] != .null)
        #expect(try edge.admin("GET", "/domains/unknown.lab.test/propagation").status == 404)

        // The same views from the command line, on the store the edge is writing.
        let (status, text) = try runCLI(["history", host, "--db", db])
        #expect(status == 0)
        #expect(text.hasPrefix("history.lab.test: 2 versions stored"))
        #expect(text.contains("failed") && text.contains("SWCERR00101"))
        let (jsonStatus, jsonText) = try runCLI(["history", host, "--db", db, "--json"])
        #expect(jsonStatus == 0)
        let history = try #require(try JSONReader.parse(jsonText).objectValue)
        #expect(history["snapshots"]?.arrayValue?.count == 2 && history["fetches"]?.arrayValue?.count == 3)
        let (diffStatus, diffText) = try runCLI(["diff-versions", host, "1", "2", "--db", db])
        #expect(diffStatus == 0 && diffText.contains("~ rule 0"))
        #expect(try runCLI(["diff-versions", host, "1", "2", "--db", db, "--exit-code"]).0 == 1)
        #expect(try runCLI(["diff-versions", host, "1", "7", "--db", db]).0 == 1)
        #expect(try runCLI(["history", "nobody.lab.test", "--db", db]).0 == 1)
        #expect(try runCLI(["history", host, "--db", "/nonexistent/store.sqlite"]).0 == 3)
        #expect(try runCLI(["history", "127.0.0.1", "--db", db]).0 == 2)
    }
}

/// The admin API's input rules that schemathesis (scripts/admin-api-check.sh) pinned down.
@Suite(.serialized) struct AdminInputTests {
    @Test func strictQueriesBodiesAndEncodedHosts() throws {
        let host = "strict.lab.test"
        try origin.serve(host, body: aasaBody())
        let edge = try startEdge(hosts: [host])
        defer { edge.stop() }
        _ = try edge.admin("POST", "/domains/\(host)/refetch")
        #expect(try edge.admin("POST", "/releases", body: #"{"appIds":["ABCDE12345.com.example.app"]}"#).status == 400)
        #expect(try edge.admin("GET", "/domains/\(host)/fetches?limit=abc").status == 400)
        #expect(try edge.admin("POST", "/domains/\(host)/purge?soft=maybe").status == 400)
        #expect(try edge.admin("GET", "/domains/unknown.lab.test/diff").status == 404)
        #expect(try edge.admin("GET", "/domains/\(host)/diff").status == 404)  // one version only
        // A percent-encoded ':' in the host segment is the port separator.
        #expect(try edge.admin("GET", "/domains/\(host)%3A443").status == 200)
    }
}
