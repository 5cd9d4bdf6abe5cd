import AASAEngine
import Foundation
import TestOrigin
import Testing

/// `--stale-while-revalidate`: past expiry, every request is answered from the copy at once while
/// exactly one background refetch runs.
@Suite(.serialized) struct StaleWhileRevalidateTests {
    @Test func fiftyRequestsPastExpiryAreAnsweredFromTheCopyWithOneRefetch() throws {
        let host = "swr.lab.test"
        try origin.serve(host, body: aasaBody("ABCDE12345.com.example.one"))
        let edge = try startEdge(hosts: [host], extra: ["--ttl", "1", "--stale-while-revalidate", "60"])
        defer { edge.stop() }
        #expect(try edge.get("/a/v1/\(host)").headers["x-cache"] == "miss")
        // The origin changes and becomes slow: a request that waited for it would get the new file.
        try origin.set(host, .object(JSONObject([JSONMember("status", 200), JSONMember("body", .string(aasaBody("ABCDE12345.com.example.two"))),
                                                 JSONMember("delay", 1.5)])))
        usleep(1_300_000)  // past the 1 s TTL
        let answers = try concurrently(Array(0..<50)) { _ in try edge.get("/a/v1/\(host)") }
        #expect(answers.allSatisfy { $0.status == 200 && $0.text.contains("example.one") }, "all answered from the copy, none waited")
        #expect(answers.allSatisfy { $0.headers["x-cache"] == "hit-stale" })
        #expect(answers.allSatisfy { $0.headers["cache-status"]?.hasSuffix("; detail=stale-while-revalidate") == true },
                "\(answers.first?.headers["cache-status"] ?? "")")
        // The one background refetch lands; the next answer is the new file, fresh.
        #expect(eventually(10) { (try? edge.get("/a/v1/\(host)"))?.text.contains("example.two") == true })
        #expect(try edge.get("/a/v1/\(host)").headers["x-cache"] == "hit-fresh")
        #expect(try origin.requestCount(host) == 2, "the first fetch and exactly one background refetch")
    }

    @Test func withoutTheWindowARequestPastExpiryWaits() throws {
        let host = "no-swr.lab.test"
        try origin.serve(host, body: aasaBody("ABCDE12345.com.example.one"))
        let edge = try startEdge(hosts: [host], extra: ["--ttl", "1"])
        defer { edge.stop() }
        _ = try edge.get("/a/v1/\(host)")
        try origin.serve(host, body: aasaBody("ABCDE12345.com.example.two"))
        usleep(1_300_000)
        let waited = try edge.get("/a/v1/\(host)")
        #expect(waited.text.contains("example.two") && waited.headers["x-cache"] == "miss")
    }
}
