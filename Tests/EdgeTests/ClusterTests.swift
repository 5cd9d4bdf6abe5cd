import AASAEngine
import Foundation
import TestOrigin
import Testing

/// Several real edge processes on one real PostgreSQL store (a database per test).
func startClusterEdge(_ node: String, store: String, hosts: [String], extra: [String] = []) throws -> EdgeProcess {
    try EdgeProcess(db: "", arguments: ["--store", store, "--node-id", node, "--ca-file", origin.caFile]
                        + hosts.flatMap { ["--connect-to", origin.connectTo($0)] } + extra)
}

func domainState(_ edge: EdgeProcess, _ host: String) -> (state: String?, version: Int?) {
    guard let response = try? edge.admin("GET", "/domains/\(host)"), response.status == 200,
          let object = try? JSONReader.parse(response.text).objectValue else { return (nil, nil) }
    return (object["state"]?.stringValue, object["version"]?.numberInt)
}

@Suite(.serialized) struct ClusterTests {
    @Test func purgeAndReleaseOnOneEdgeReachEveryEdge() throws {
        let store = try TestPostgres.server().database()
        let host = "fanout.lab.test"
        try origin.serve(host, body: aasaBody("ABCDE12345.com.example.one"))
        let edges = try ["n1", "n2", "n3"].map { try startClusterEdge($0, store: store, hosts: [host]) }
        defer { for edge in edges { edge.stop() } }

        #expect(try edges[0].get("/a/v1/\(host)").headers["x-cache"] == "miss")
        for edge in edges.dropFirst() {
            #expect(try edge.get("/a/v1/\(host)").headers["x-cache"] == "hit-fresh", "read from the shared store, not the origin")
        }
        #expect(try origin.requestCount(host) == 1)

        // A hard purge on n1: the others stop serving their copy.
        #expect(try edges[0].admin("POST", "/domains/\(host)/purge").status == 200)
        for edge in edges.dropFirst() {
            #expect(eventually(5) { domainState(edge, host).state == "purged" }, "node \(edge.port) heard the purge")
        }
        // The next answer is a miss, or a copy fetched after the purge: n2's refetch reaches n3.
        #expect(try edges[1].get("/a/v1/\(host)").headers["x-cache"] == "miss")
        #expect(eventually(5) { domainState(edges[2], host).state == "fresh" }, "n3 heard of n2's fetch")
        #expect(try edges[2].get("/a/v1/\(host)").headers["x-cache"] == "hit-fresh")
        #expect(try origin.requestCount(host) == 2, "one refetch after the purge, for every edge")

        // A release on n1 after the origin changed: every edge serves the new version from memory.
        try origin.serve(host, body: aasaBody("ABCDE12345.com.example.two"))
        let fetchesBefore = try origin.requestCount(host)
        let release = try edges[0].admin("POST", "/releases", body: #"{"domains":["\#(host)"]}"#)
        #expect(release.status == 200 && release.text.contains(#""updated":1"#))
        for edge in edges {
            #expect(eventually(5) { (try? edge.get("/a/v1/\(host)").text.contains("example.two")) == true })
        }
        #expect(try origin.requestCount(host) == fetchesBefore + 1, "one fetch, by the edge that ran the release")

        let nodes = try json(try edges[2].admin("GET", "/nodes"))["nodes"]?.arrayValue?.compactMap { $0.objectValue?["node"]?.stringValue }
        #expect(nodes == ["n1", "n2", "n3"])
        #expect(edges[1].log.contains("node=n2"), "the node id is in every log line")
    }

    @Test func coldRequestsSpreadOverThreeEdgesMakeOneOriginFetch() throws {
        let store = try TestPostgres.server().database()
        let host = "cold.lab.test"
        try origin.set(host, .object(JSONObject([JSONMember("status", 200), JSONMember("body", .string(aasaBody())),
                                                 JSONMember("delay", 0.8)])))
        let edges = try ["c1", "c2", "c3"].map { try startClusterEdge($0, store: store, hosts: [host]) }
        defer { for edge in edges { edge.stop() } }

        // 1,000 requests, a third to each edge, 300 at a time (curl --parallel).
        let list = FileManager.default.temporaryDirectory.appendingPathComponent("cold-\(UUID().uuidString).txt")
        let lines = (0..<1000).map { i in
            "url = \"http://127.0.0.1:\(edges[i % 3].port)/a/v1/\(host)\"\noutput = \"/dev/null\"\n"
        }
        try lines.joined().write(to: list, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: list) }
        let curl = Process()
        curl.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        curl.arguments = ["-s", "--parallel", "--parallel-max", "300", "--parallel-immediate", "-w", "%{http_code}\n", "-K", list.path]
        let output = Pipe()
        curl.standardOutput = output
        try curl.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        curl.waitUntilExit()
        let codes = String(decoding: data, as: UTF8.self).split(separator: "\n")
        #expect(codes.count == 1000 && codes.allSatisfy { $0 == "200" }, "every client got the file")
        #expect(try origin.requestCount(host) == 1, "one origin fetch for all three edges")
        let collapsed = edges.map { $0.log.contains("origin fetch made by another edge") }
        #expect(collapsed.filter { $0 }.count == 2, "two edges waited for the third's fetch: \(collapsed)")
    }

    @Test func storeOutageKeepsWarmHostsServedAndWritesCatchUp() throws {
        let server = try TestPostgres()  // of its own: this test stops it
        let store = try server.database()
        let warm = "warm.lab.test", cold = "outage-miss.lab.test"
        try origin.serve(warm, body: aasaBody())
        try origin.serve(cold, body: aasaBody("ABCDE12345.com.example.cold"))
        let edges = try ["o1", "o2"].map { try startClusterEdge($0, store: store, hosts: [warm, cold]) }
        defer { for edge in edges { edge.stop() } }
        for edge in edges { #expect(try edge.get("/a/v1/\(warm)").status == 200) }
        #expect(try edges[0].get("/readyz").text.contains(#""store":"ok""#))

        // Clients of warm hosts keep asking through the whole outage and restart.
        let stop = Locked(false)
        let failures = Locked<[Int]>([])
        let load = Thread {
            var i = 0
            while !stop.withLock({ $0 }) {
                let status = (try? edges[i % 2].get("/a/v1/\(warm)").status) ?? 0
                if status != 200 { failures.withLock { $0.append(status) } }
                i += 1
            }
        }
        load.start()
        server.stop()
        for edge in edges {
            #expect(eventually(5) { (try? edge.get("/readyz"))?.text.contains(#""store":"unavailable""#) == true })
            #expect(try edge.get("/readyz").status == 200)
        }
        #expect(try edges[0].admin("POST", "/domains/\(warm)/purge").status == 503, "admin writes wait for the store")
        let miss = try edges[1].get("/a/v1/\(cold)")
        #expect(miss.status == 200 && miss.text.contains("example.cold"), "a miss is still fetched and served")
        try server.start()
        for edge in edges { #expect(eventually(10) { (try? edge.get("/readyz"))?.text.contains(#""store":"ok""#) == true }) }
        stop.withLock { $0 = true }
        while !load.isFinished { usleep(10_000) }
        let failed = failures.withLock { $0 }
        #expect(failed.isEmpty, "no error to clients of warm hosts: \(failed.prefix(5))")
        let database = TestPostgres.name(ofURL: store)
        #expect(eventually(10) { (try? server.psql("SELECT current_version FROM host WHERE name = '\(cold)'", database: database)) == "1" },
                "the miss served during the outage is in the store once it is back")
        #expect(try edges[0].admin("POST", "/domains/\(warm)/purge").status == 200)
    }

    @Test func anEdgeKilledDuringAReleaseLosesNothing() throws {
        let store = try TestPostgres.server().database()
        let hosts = (0..<30).map { "kill\($0).lab.test" }
        for (i, host) in hosts.enumerated() {
            try origin.set(host, .object(JSONObject([JSONMember("status", 200), JSONMember("body", .string(aasaBody("ABCDE12345.com.app\(i)"))),
                                                     JSONMember("delay", 0.05)])))
        }
        let killed = try startClusterEdge("k1", store: store, hosts: hosts, extra: ["--refetch-concurrency", "4"])
        let survivor = try startClusterEdge("k2", store: store, hosts: hosts)
        defer { killed.stop(); survivor.stop() }
        let body = #"{"domains":[\#(hosts.map { "\"\($0)\"" }.joined(separator: ","))]}"#
        let release = Thread { _ = try? killed.admin("POST", "/releases", body: body) }
        release.start()
        usleep(300_000)
        kill(killed.pid, SIGKILL)
        // The other edge finishes the job; what the killed one committed is intact.
        let again = try json(try survivor.admin("POST", "/releases", body: body))
        #expect(again["failed"]?.numberInt == 0)
        let database = TestPostgres.name(ofURL: store)
        let server = try TestPostgres.server()
        #expect(try server.psql("SELECT COUNT(*) FROM snapshot", database: database) == "30", "one version per host, none twice")
        #expect(try server.psql("SELECT COUNT(*) FROM host WHERE current_version = 1", database: database) == "30")
        for (i, host) in hosts.enumerated() {
            #expect(try survivor.get("/a/v1/\(host)").text.contains("com.app\(i)\""))
        }
    }
}

