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

/// Probes inside the server (`/admin/v1/probes…`): started, watched, listed, plotted and stopped
/// over the admin API against the real binary; `aasa-edge probe` runs on the same store show up.
@Suite(.serialized) struct ProbeRouteTests {
    func body(_ host: String, cdnPort: Int, interval: Double, duration: Double, untilConverged: Bool) -> String {
        #"{"host":"\#(host)","cdnURL":"http://127.0.0.1:\#(cdnPort)/a/v1/{host}","interval":\#(interval),"duration":\#(duration),"untilConverged":\#(untilConverged)}"#
    }

    @Test func aProbeStartedOverTheAPIMeasuresTheEdgeItself() throws {
        let host = "probe-api.lab.test"
        try origin.serve(host, body: aasaBody(path: "/before/*"))
        let db = temporaryDB()
        let edge = try startEdge(hosts: [host], db: db, extra: ["--ttl", "2"])
        defer { edge.stop() }
        let started = try edge.admin("POST", "/probes", body: body(host, cdnPort: edge.port, interval: 0.2, duration: 20, untilConverged: true))
        #expect(started.status == 202, "\(started.text)")
        let id = try #require(try json(started)["id"]?.numberInt)
        #expect(started.headers["location"] == "/admin/v1/probes/\(id)")
        #expect(try eventually(10) { try json(try edge.admin("GET", "/domains/\(host)"))["version"] == 1 })
        try origin.serve(host, body: aasaBody(path: "/after/*"))
        #expect(try eventually(15) { try json(try edge.admin("GET", "/probes/\(id)"))["state"] == .string("converged") })

        let detail = try json(try edge.admin("GET", "/probes/\(id)"))
        #expect(detail["host"] == .string(host) && detail["converged"] == .bool(true) && detail["endedAt"] != .null)
        let changes = try #require(detail["changes"]?.arrayValue)
        #expect(changes.count == 1)
        if case .number(let delay)? = changes.first?.objectValue?["delaySeconds"] {
            #expect(delay.doubleValue <= 2 + 0.8, "one TTL at most: \(delay.doubleValue) s")
        } else {
            Issue.record("no delay: \(detail)")
        }
        let observations = try #require(detail["observations"]?.arrayValue)
        #expect(observations.count >= 3)
        let last = try #require(observations.last?.objectValue)
        #expect(last.keys == ["at", "originVersion", "cdnVersion", "originStatus", "cdnStatus"])
        #expect(last["originVersion"] == last["cdnVersion"] && last["cdnStatus"]?.numberInt == 200)
        #expect(observations.first?.objectValue?["originVersion"] != last["originVersion"], "the change shows in the versions")

        let list = try #require(try json(try edge.admin("GET", "/probes"))["probes"]?.arrayValue)
        let listed = try #require(list.first?.objectValue)
        #expect(listed.keys == ["id", "host", "cdnURL", "startedAt", "endedAt", "state", "changes"])
        #expect(listed["id"]?.numberInt == id && listed["state"] == .string("converged") && listed["changes"]?.numberInt == 1)
        let plot = try edge.admin("GET", "/probes/\(id)/plot.svg")
        #expect(plot.status == 200 && plot.headers["content-type"] == "image/svg+xml" && plot.text.hasPrefix("<svg") && plot.text.contains(host))
        #expect(try edge.admin("DELETE", "/probes/\(id)").status == 409, "it has ended")
        #expect(try edge.admin("GET", "/probes/999999").status == 404)

        // A run of `aasa-edge probe` on the same store is listed too.
        let (status, _) = try runCLI(["probe", host, "--cdn-url", "http://127.0.0.1:\(edge.port)/a/v1/{host}", "--duration", "0",
                                      "--db", db, "--connect-to", origin.connectTo(host), "--ca-file", origin.caFile])
        #expect(status == 0)
        let after = try #require(try json(try edge.admin("GET", "/probes"))["probes"]?.arrayValue)
        #expect(after.count == 2 && after.first?.objectValue?["state"] == .string("finished"))
    }

    @Test func atMostEightRunAndOneCanBeStopped() throws {
        let host = "probe-limit.lab.test"
        try origin.serve(host, body: aasaBody())
        let edge = try startEdge(hosts: [host], extra: ["--allow-domain", "lab.test"])
        defer { edge.stop() }
        let long = body(host, cdnPort: edge.port, interval: 5, duration: 600, untilConverged: false)
        var ids: [Int] = []
        for _ in 0..<8 {
            let started = try edge.admin("POST", "/probes", body: long)
            #expect(started.status == 202)
            if let id = try json(started)["id"]?.numberInt { ids.append(id) }
        }
        let ninth = try edge.admin("POST", "/probes", body: long)
        #expect(ninth.status == 429 && ninth.headers["retry-after"] != nil && ninth.text.contains("8 probes"))
        let stopping = try edge.admin("DELETE", "/probes/\(ids[0])")
        #expect(stopping.status == 200 && stopping.text.contains("stopping"))
        #expect(try eventually(10) { try json(try edge.admin("GET", "/probes/\(ids[0])"))["state"] == .string("stopped") })
        #expect(try edge.admin("POST", "/probes", body: long).status == 202, "a slot is free again")
        #expect(try edge.admin("GET", "/probes").text.contains(#""state":"running""#))

        // What the API refuses.
        for (bad, status) in [(#"{"host":"probe-limit.lab.test","interval":0.01}"#, 400), (#"{"host":"example.com"}"#, 403),
                              (#"{"host":"probe-limit.lab.test","extra":1}"#, 400), (#"{"host":"probe-limit.lab.test","cdnURL":"ftp://x"}"#, 400),
                              (#"{"host":"probe-limit.lab.test","duration":1e9}"#, 400), ("[]", 400)] {
            #expect(try edge.admin("POST", "/probes", body: bad).status == status, "\(bad)")
        }
        #expect(try edge.admin("GET", "/probes", token: "wrong").status == 401)
    }
}
