import AASAEngine
import Foundation
import TestOrigin
import Testing

/// `aasa-edge probe` end to end: the real binary watches the test origin and a real edge with a
/// 3-second TTL in front of it; the origin changes just after the edge fetched, so the CDN side
/// must take about one TTL to follow.
@Suite(.serialized) struct ProbeTests {
    func number(_ value: JSONValue?) -> Double? {
        if case .number(let n)? = value { return n.doubleValue }
        return nil
    }

    @Test func measuresAboutOneTTLBehindAnEdge() throws {
        let host = "probe.lab.test"
        let ttl = 3.0
        try origin.serve(host, body: aasaBody(path: "/before/*"))
        let db = temporaryDB()
        let edge = try startEdge(hosts: [host], db: db, extra: ["--ttl", "3"])
        defer { edge.stop() }
        let folder = URL(fileURLWithPath: db).deletingLastPathComponent()
        let plot = folder.appendingPathComponent("probe.svg").path
        let probeDB = folder.appendingPathComponent("probe.sqlite").path

        let (exit, output) = try runCLI(["probe", host, "--cdn-url", "http://127.0.0.1:\(edge.port)/a/v1/{host}", "--interval", "0.25",
                                         "--duration", "20", "--until-converged", "--json", "--plot", plot, "--db", probeDB,
                                         "--connect-to", origin.connectTo(host), "--ca-file", origin.caFile]) {
            // Change the origin as soon as the edge holds the first copy (the probe's CDN request made it fetch).
            #expect(try eventually(10) { try json(try edge.admin("GET", "/domains/\(host)"))["version"] == 1 })
            try origin.serve(host, body: aasaBody(path: "/after/*"))
        }
        #expect(exit == 0)

        let report = try #require(try JSONReader.parse(output).objectValue)
        #expect(report.keys.starts(with: ["host", "cdnURL", "observations", "converged", "changes"]))
        #expect(report["host"] == .string(host))
        #expect(report["converged"] == .bool(true))
        let changes = try #require(report["changes"]?.arrayValue)
        #expect(changes.count == 1)
        let delay = try #require(number(changes.first?.objectValue?["delaySeconds"]))
        // Origin changed ≤ 0.3 s after the edge's fetch; the edge follows when its copy expires.
        #expect(abs(delay - ttl) <= 0.8, "delay \(delay) s, TTL \(ttl) s")
        let observations = try #require(number(report["observations"]).map { Int($0) })
        #expect(observations >= 2 * Int(ttl / 0.25))

        let svg = try String(contentsOfFile: plot, encoding: .utf8)
        #expect(svg.hasPrefix("<svg") && svg.contains(host))
        // The observations are in the store too: a second, short run appends to it.
        let (status, second) = try runCLI(["probe", host, "--cdn-url", "http://127.0.0.1:\(edge.port)/a/v1/{host}", "--interval", "0.2",
                                          "--duration", "0.3", "--json", "--db", probeDB, "--connect-to", origin.connectTo(host),
                                          "--ca-file", origin.caFile])
        #expect(status == 0)
        let again = try #require(try JSONReader.parse(second).objectValue)
        #expect(again["converged"] == .bool(false) && again["changes"] == .array([]))
    }

    @Test func rejectsBadArguments() throws {
        #expect(try runCLI(["probe", "bad host", "--duration", "0"]).0 == 2)
        #expect(try runCLI(["probe", "a.lab.test", "--interval", "0"]).0 == 2)
        #expect(try runCLI(["probe", "a.lab.test", "--cdn-url", "ftp://x/{host}"]).0 == 2)
    }
}
