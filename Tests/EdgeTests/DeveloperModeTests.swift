import AASAEngine
import Foundation
import TestOrigin
import Testing

/// `?mode=developer` / `managed` / `developer+managed`: the origin every time, the cache untouched.
@Suite(.serialized) struct DeveloperModeTests {
    @Test func bypassAsksTheOriginEveryTimeAndLeavesTheCacheAlone() throws {
        let host = "devmode.lab.test"
        try origin.serve(host, body: aasaBody("ABCDE12345.com.example.one"))
        let edge = try startEdge(hosts: [host])
        defer { edge.stop() }
        #expect(try edge.get("/a/v1/\(host)").headers["x-cache"] == "miss")
        try origin.serve(host, body: aasaBody("ABCDE12345.com.example.two"))
        var fetches = try origin.requestCount(host)

        for query in ["mode=developer", "mode=Developer", "mode=managed", "mode=developer+managed", "mode=developer%2Bmanaged",
                      "x=1&mode=MANAGED"] {
            let bypass = try edge.get("/a/v1/\(host)?\(query)")
            #expect(bypass.status == 200 && bypass.text.contains("example.two"), "\(query): the origin's current file")
            #expect(bypass.headers["x-cache"] == "miss" && bypass.headers["cache-status"] == "aasa-edge; fwd=bypass", "\(query)")
            #expect(bypass.headers["cache-control"] == "no-store" && bypass.headers["aasa-edge-version"] == nil, "\(query)")
            fetches += 1
            #expect(try origin.requestCount(host) == fetches, "\(query): one origin fetch per request")
        }
        // Without a bypass mode (or with another query) the cache answers, unchanged by the bypasses.
        for path in ["/a/v1/\(host)", "/a/v1/\(host)?mode=dev", "/a/v1/\(host)?mode=developer%20", "/a/v1/\(host)?model=developer"] {
            let cached = try edge.get(path)
            #expect(cached.headers["x-cache"] == "hit-fresh" && cached.text.contains("example.one"), "\(path)")
            #expect(cached.headers["aasa-edge-version"] == "1")
        }
        #expect(try origin.requestCount(host) == fetches)
        let versions = try json(try edge.admin("GET", "/domains/\(host)"))["version"]?.numberInt
        #expect(versions == 1, "nothing stored")
        let metrics = try edge.get("/metrics").text
        #expect(metrics.contains(#"aasa_edge_requests_total{outcome="bypass"} 6"#))
    }

    @Test func aFailingOriginAnswersTheFailureFormUncached() throws {
        let host = "devmode-missing.lab.test"
        try origin.set(host, .object(JSONObject([JSONMember("status", 404), JSONMember("body", "nope")])))
        let edge = try startEdge(hosts: [host])
        defer { edge.stop() }
        let failure = try edge.get("/a/v1/\(host)?mode=developer")
        #expect(failure.status == 404 && failure.headers["apple-failure-reason"]?.hasPrefix("SWCERR00101") == true)
        #expect(failure.headers["cache-control"] == "no-store" && failure.headers["cache-status"] == "aasa-edge; fwd=bypass")
        #expect(try edge.admin("GET", "/domains/\(host)").status == 404, "the host is still unknown: nothing recorded")
        #expect(try edge.get("/a/v1/\(host)?mode=developer").status == 404)
        #expect(try origin.requestCount(host) == 2)
    }
}

/// `Via: 1.1 <node-id> (aasa-edge/<version>)` on every client-route answer; a request that already
/// passed through this edge is a loop (`508`).
@Suite(.serialized) struct ViaTests {
    @Test func everyAnswerNamesTheEdgeAndALoopIs508() throws {
        let host = "via.lab.test"
        try origin.serve(host, body: aasaBody())
        let edge = try startEdge(hosts: [host, "via-missing.lab.test"], extra: ["--node-id", "edge-via"])
        defer { edge.stop() }
        let version = "0.1.0"
        let entry = "1.1 edge-via (aasa-edge/\(version))"
        #expect(try edge.get("/a/v1/\(host)").headers["via"] == entry, "miss")
        #expect(try edge.get("/a/v1/\(host)").headers["via"] == entry, "hit (fast path)")
        #expect(try edge.get("/a/v1/\(host)?mode=developer").headers["via"] == entry, "bypass")
        #expect(try edge.get("/a/v1/via-missing.lab.test").headers["via"] == entry, "failure form")
        let passing = try edge.get("/a/v1/\(host)?x", headers: ["Via": "1.1 parent-tier (aasa-edge/\(version))"])
        #expect(passing.status == 200)
        let loop = try edge.get("/a/v1/\(host)", headers: ["Via": "1.1 child (aasa-edge/\(version)), \(entry)"])
        #expect(loop.status == 508 && loop.headers["cache-control"] == "no-store")
        // The same on a kept-alive connection, where hits are answered by the fast path.
        let fd = try TestHTTP.connect(port: edge.port)
        defer { close(fd) }
        let request = "GET /a/v1/\(host) HTTP/1.1\r\nHost: 127.0.0.1\r\nVia: \(entry)\r\n\r\n"
        #expect(write(fd, request, request.utf8.count) == request.utf8.count)
        var buffer = [UInt8](repeating: 0, count: 4096)
        let got = read(fd, &buffer, buffer.count)
        #expect(String(decoding: buffer.prefix(max(0, got)), as: UTF8.self).hasPrefix("HTTP/1.1 508"))
    }
}
