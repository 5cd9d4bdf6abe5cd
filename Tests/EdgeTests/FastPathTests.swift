import AASAEngine
import Foundation
import TestOrigin
import Testing

/// Hits answered on the event loop (EdgeHTTP.HitFastPath) must be indistinguishable from the
/// router's answers and keep pipelined responses in request order.
@Suite(.serialized) struct FastPathTests {
    func pipelined(port: Int, _ requests: [String]) throws -> String {
        String(decoding: try TestHTTP.exchange(port: port, Array(requests.joined().utf8)), as: UTF8.self)
    }

    @Test func pipelinedResponsesKeepRequestOrder() throws {
        let slow = "fastpath-slow.lab.test"
        let cached = "fastpath-cached.lab.test"
        try origin.set(slow, ["status": 200, "body": .string(aasaBody(path: "/slow/*")), "delay": 0.5])
        try origin.serve(cached, body: aasaBody(path: "/cached/*"))
        let edge = try startEdge(hosts: [slow, cached])
        defer { edge.stop() }
        #expect(try edge.get("/a/v1/\(cached)")["x-cache"] == "miss")
        // The first request needs the origin (router, 0.5 s); the second is a memory hit that must wait its turn.
        let text = try pipelined(port: edge.port, [
            "GET /a/v1/\(slow) HTTP/1.1\r\nHost: x\r\n\r\n",
            "GET /a/v1/\(cached) HTTP/1.1\r\nHost: x\r\n\r\n",
            "GET /a/v1/\(cached) HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        ])
        let first = try #require(text.range(of: "/slow/*"))
        let second = try #require(text.range(of: "/cached/*"))
        #expect(first.lowerBound < second.lowerBound)
        #expect(text.components(separatedBy: "HTTP/1.1 200 OK").count == 4)
    }

    @Test func fastAndRoutedHitsAnswerAlike() throws {
        let host = "fastpath-same.lab.test"
        try origin.serve(host, body: aasaBody(path: "/same/*"))
        let edge = try startEdge(hosts: [host])
        defer { edge.stop() }
        _ = try edge.get("/a/v1/\(host)")
        // TestHTTP sends `Connection: close`, which the fast path leaves to the router; a pipelined
        // pair without it is answered by the fast path first.
        let routed = try edge.get("/a/v1/\(host)")
        let text = try pipelined(port: edge.port, ["GET /a/v1/\(host) HTTP/1.1\r\nHost: x\r\n\r\n",
                                                   "GET /a/v1/\(host) HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"])
        let fastHead = try #require(text.components(separatedBy: "\r\n\r\n").first)
        var fastFields: [String: String] = [:]
        for line in fastHead.components(separatedBy: "\r\n").dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fastFields[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let ignored: Set<String> = ["date", "age", "cache-status", "connection"]
        #expect(Set(fastFields.keys).subtracting(ignored) == Set(routed.headers.keys).subtracting(ignored))
        for (name, value) in routed.headers where !ignored.contains(name) {
            #expect(fastFields[name] == value, "\(name)")
        }
        #expect(text.contains(routed.text))
        // HEAD through the fast path: the length of the body, no body.
        let head = try pipelined(port: edge.port, ["HEAD /a/v1/\(host) HTTP/1.1\r\nHost: x\r\n\r\n",
                                                   "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"])
        #expect(head.contains("Content-Length: \(routed.body.count)") || head.contains("content-length: \(routed.body.count)"))
        #expect(!head.contains("/same/*"))
    }
}
