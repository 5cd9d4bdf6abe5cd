import AASAEngine
import Foundation
import TestOrigin
import Testing

/// Tiers (`--parent`): real edges stacked on loopback in front of the test origin, as Apple's CDN
/// stacks its own. One `X-Cache` verdict and one `Via` entry per tier, the parent's `Age`
/// counted, its failure form passed on and cached, a circle of tiers ending in `508`.
@Suite(.serialized) struct TierTests {
    static let version = "0.1.0"

    static func via(_ nodes: String...) -> String {
        nodes.map { "1.1 \($0) (aasa-edge/\(version))" }.joined(separator: ", ")
    }

    /// An edge whose cache fills from `parent` (no origin flags: it never asks the origin itself).
    static func child(of parent: EdgeProcess, node: String, db: String = temporaryDB(), extra: [String] = []) throws -> EdgeProcess {
        try EdgeProcess(db: db, arguments: ["--node-id", node, "--parent", "http://127.0.0.1:\(parent.port)"] + extra)
    }

    func number(_ value: JSONValue?) -> Double? {
        if case .number(let n)? = value { return n.doubleValue }
        return nil
    }

    @Test func twoTiersCarryEachVerdictAndEntryAndTheParentsAge() throws {
        let host = "tier2.lab.test"
        try origin.serve(host, body: aasaBody("ABCDE12345.com.example.tier"))
        let parent = try startEdge(hosts: [host], extra: ["--node-id", "tier-parent"])
        defer { parent.stop() }
        let childDB = temporaryDB()
        var child = try Self.child(of: parent, node: "tier-child", db: childDB, extra: ["--ttl", "100"])
        defer { child.stop() }

        let first = try child.get("/a/v1/\(host)")
        #expect(first.status == 200 && first.text.contains("com.example.tier"))
        #expect(first.headers["x-cache"] == "miss, miss")
        #expect(first.headers["via"] == Self.via("tier-parent", "tier-child"))
        #expect(first.headers["cache-control"] == "max-age=100,public", "the child's own TTL")
        // A hit: the parent's verdict is the one that came with the stored copy.
        let hit = try child.get("/a/v1/\(host)")
        #expect(hit.headers["x-cache"] == "miss, hit-fresh")
        #expect(hit.headers["via"] == Self.via("tier-parent", "tier-child"))
        #expect(try origin.requestCount(host) == 1)

        // A second child, 2 s later: the parent's hit, and its Age counted in the child's.
        usleep(2_100_000)
        let second = try Self.child(of: parent, node: "tier-child-2")
        defer { second.stop() }
        let late = try second.get("/a/v1/\(host)")
        #expect(late.headers["x-cache"] == "hit-fresh, miss")
        #expect(Int(late.headers["age"] ?? "") ?? 0 >= 2, "Age includes the parent's: \(late.headers["age"] ?? "none")")
        #expect(late.headers["cache-status"] == "aasa-edge; fwd=uri-miss; stored")

        // The parent's part is stored with the copy: a restarted child still carries it.
        child.stop()
        child = try Self.child(of: parent, node: "tier-child", db: childDB, extra: ["--ttl", "100"])
        let restored = try child.get("/a/v1/\(host)")
        #expect(restored.headers["x-cache"] == "miss, hit-fresh")
        #expect(restored.headers["via"] == Self.via("tier-parent", "tier-child"))
        #expect(try origin.requestCount(host) == 1, "only the top tier asks the origin")
    }

    @Test func aCopyOlderThanTheChildsTTLIsAskedForAgain() throws {
        let host = "tier-age.lab.test"
        try origin.serve(host, body: aasaBody())
        let parent = try startEdge(hosts: [host], extra: ["--node-id", "age-parent"])
        defer { parent.stop() }
        #expect(try parent.get("/a/v1/\(host)").status == 200)
        usleep(2_100_000)
        // The parent's copy is 2 s old: past the child's 2-second TTL the moment it arrives.
        let child = try Self.child(of: parent, node: "age-child", extra: ["--ttl", "2"])
        defer { child.stop() }
        let first = try child.get("/a/v1/\(host)")
        #expect(first.headers["x-cache"] == "hit-fresh, miss")
        let again = try child.get("/a/v1/\(host)")
        #expect(again.headers["x-cache"] == "hit-fresh, hit-fresh")
        #expect(again.headers["cache-status"]?.hasPrefix("aasa-edge; fwd=stale; fwd-status=200") == true,
                "asked the parent again: \(again.headers["cache-status"] ?? "none")")
        #expect(try origin.requestCount(host) == 1)
    }

    @Test func threeTiersCarryThreeVerdicts() throws {
        let host = "tier3.lab.test"
        try origin.serve(host, body: aasaBody())
        let top = try startEdge(hosts: [host], extra: ["--node-id", "tier-top"])
        defer { top.stop() }
        let middle = try Self.child(of: top, node: "tier-middle")
        defer { middle.stop() }
        let bottom = try Self.child(of: middle, node: "tier-bottom")
        defer { bottom.stop() }
        let miss = try bottom.get("/a/v1/\(host)")
        #expect(miss.status == 200)
        #expect(miss.headers["x-cache"] == "miss, miss, miss")
        #expect(miss.headers["via"] == Self.via("tier-top", "tier-middle", "tier-bottom"))
        #expect(try bottom.get("/a/v1/\(host)").headers["x-cache"] == "miss, miss, hit-fresh")
        // The middle tier answers from its copy, with the top's verdict it stored.
        #expect(try middle.get("/a/v1/\(host)").headers["x-cache"] == "miss, hit-fresh")
        #expect(try origin.requestCount(host) == 1)
    }

    @Test func theParentsFailureFormIsPassedOnAndCached() throws {
        let host = "tier-missing.lab.test"
        try origin.set(host, .object(JSONObject([JSONMember("status", 404), JSONMember("body", "nope")])))
        let parent = try startEdge(hosts: [host], extra: ["--node-id", "fail-parent"])
        defer { parent.stop() }
        let child = try Self.child(of: parent, node: "fail-child", extra: ["--failure-ttl", "77"])
        defer { child.stop() }
        let failure = try child.get("/a/v1/\(host)")
        #expect(failure.status == 404)
        #expect(failure.headers["apple-failure-reason"] == "SWCERR00101 Bad HTTP Response: 404 Not Found")
        #expect(failure.headers["apple-failure-details"] == #"{"status":"404 Not Found"}"#)
        #expect(failure.headers["apple-try-direct"] == "false")
        #expect(failure.headers["cache-control"] == "max-age=77,public", "the child's --failure-ttl")
        #expect(failure.headers["x-cache"] == "miss, miss")
        #expect(failure.headers["via"] == Self.via("fail-parent", "fail-child"))
        let cached = try child.get("/a/v1/\(host)")
        #expect(cached.status == 404 && cached.headers["x-cache"] == "miss, hit-fresh")
        #expect(cached.headers["apple-failure-reason"] == failure.headers["apple-failure-reason"])
        #expect(try origin.requestCount(host) == 1, "the child cached the failure; the parent too")
        let domain = try json(try child.admin("GET", "/domains/\(host)"))
        #expect(domain["state"] == .string("failing"))
    }

    @Test func aCircleOfTiersIs508AndNothingIsCached() throws {
        let host = "tier-loop.lab.test"
        try origin.serve(host, body: aasaBody())
        // a → b → a: b's port is known only once it runs, so a is started on a port chosen first.
        let portA = try TestPostgres.freePort()
        let b = try EdgeProcess(db: temporaryDB(), arguments: ["--node-id", "loop-b", "--parent", "http://127.0.0.1:\(portA)"])
        defer { b.stop() }
        let a = try EdgeProcess(db: temporaryDB(), arguments: ["--node-id", "loop-a", "--parent", "http://127.0.0.1:\(b.port)",
                                                             "--port", String(portA)])
        defer { a.stop() }
        #expect(a.port == portA)
        let loop = try a.get("/a/v1/\(host)")
        #expect(loop.status == 508)
        #expect(loop.headers["cache-control"] == "no-store")
        #expect(loop.headers["via"] == Self.via("loop-a", "loop-b", "loop-a"), "\(loop.headers["via"] ?? "none")")
        for edge in [a, b] {
            #expect(try edge.admin("GET", "/domains/\(host)").status == 404, "nothing recorded")
        }
        #expect(a.log.contains("508 Loop Detected"))
        #expect(try origin.requestCount(host) == 0)
        // The edge's own developer mode still reaches the origin.
        let bypass = try startEdge(hosts: [host], extra: ["--node-id", "loop-dev", "--parent", "http://127.0.0.1:\(b.port)"])
        defer { bypass.stop() }
        #expect(try bypass.get("/a/v1/\(host)?mode=developer").status == 200)
        #expect(try origin.requestCount(host) == 1)
    }

    /// The issue's question, answered with `probe`: after an origin change, the last of two tiers
    /// (TTL 2 s each) serves the new file within the sum of their TTLs.
    @Test func aChangeReachesTheLastTierWithinTheSumOfTheTTLs() throws {
        let host = "tier-probe.lab.test"
        try origin.serve(host, body: aasaBody(path: "/before/*"))
        let parent = try startEdge(hosts: [host], extra: ["--node-id", "probe-parent", "--ttl", "2"])
        defer { parent.stop() }
        let child = try Self.child(of: parent, node: "probe-child", extra: ["--ttl", "2"])
        defer { child.stop() }
        let folder = URL(fileURLWithPath: temporaryDB()).deletingLastPathComponent()
        let (exit, output) = try runCLI(["probe", host, "--cdn-url", "http://127.0.0.1:\(child.port)/a/v1/{host}", "--interval", "0.2",
                                         "--duration", "15", "--until-converged", "--json",
                                         "--db", folder.appendingPathComponent("probe.sqlite").path,
                                         "--connect-to", origin.connectTo(host), "--ca-file", origin.caFile]) {
            #expect(try eventually(10) { try json(try child.admin("GET", "/domains/\(host)"))["version"] == 1 })
            try origin.serve(host, body: aasaBody(path: "/after/*"))
        }
        #expect(exit == 0)
        let report = try #require(try JSONReader.parse(output).objectValue)
        #expect(report["converged"] == .bool(true))
        let delay = try #require(number(report["changes"]?.arrayValue?.first?.objectValue?["delaySeconds"]))
        #expect(delay <= 2 + 2 + 0.8, "delay \(delay) s; the tiers' TTLs add up to 4 s")
        #expect(try child.get("/a/v1/\(host)").text.contains("/after/*"))
    }
}
