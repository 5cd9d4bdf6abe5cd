import AASAEngine
import Foundation
import TestOrigin
import Testing

/// Hits answered from the raw bytes (EdgeHTTP.HitFastPath) must be indistinguishable from the
/// router's answers, keep pipelined responses in request order, and hand everything they do not
/// answer to NIO's parser intact — however the bytes are split.
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

    /// A response parsed from raw bytes (header names lower-cased).
    struct Answer {
        let status: Int
        let headers: [String: String]
        let body: String
    }

    /// Splits pipelined responses by their framing: no body for `HEAD` requests (by index) and
    /// 304s, else `Content-Length`. Fails on anything else, so a mis-framed response shows.
    func answers(_ bytes: [UInt8], headRequests: Set<Int> = []) throws -> [Answer] {
        var rest = bytes[...]
        var out: [Answer] = []
        let blank: [UInt8] = Array("\r\n\r\n".utf8)
        while !rest.isEmpty {
            let end = try #require(rest.indices.first(where: { rest[$0...].starts(with: blank) }),
                                   "unterminated head: \(String(decoding: rest, as: UTF8.self))")
            let lines = String(decoding: rest[..<end], as: UTF8.self).components(separatedBy: "\r\n")
            let statusLine = lines[0].split(separator: " ")
            try #require(statusLine.count >= 2 && statusLine[0].hasPrefix("HTTP/1."), "not a status line: \(lines[0])")
            let status = Int(statusLine[1]) ?? 0
            var headers: [String: String] = [:]
            for line in lines.dropFirst() {
                let colon = try #require(line.firstIndex(of: ":"))
                headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
            rest = rest[(end + 4)...]
            var length = 0
            if !headRequests.contains(out.count), status != 304 {
                length = try #require(headers["content-length"].flatMap { Int($0) }, "no Content-Length on \(lines[0])")
            }
            out.append(Answer(status: status, headers: headers, body: String(decoding: rest.prefix(length), as: UTF8.self)))
            rest = rest.dropFirst(length)
        }
        return out
    }

    @Test func requestsSplitAnywhereAreAnsweredAlike() throws {
        let host = "fastpath-split.lab.test"
        try origin.serve(host, body: aasaBody(path: "/split/*"))
        let edge = try startEdge(hosts: [host])
        defer { edge.stop() }
        let routed = try edge.get("/a/v1/\(host)")
        let request = "GET /a/v1/\(host) HTTP/1.1\r\nHost: x\r\nUser-Agent: split-test\r\n\r\n"
        let bytes = Array((request + request + "GET /.well-known/apple-app-site-association HTTP/1.1\r\nHost: \(host):8080\r\n"
            + "Connection: close\r\n\r\n").utf8)
        // One byte per segment, then a few uneven cuts.
        for cuts in [Array(1..<bytes.count), [3, 40, 41, 90], [request.utf8.count - 1, request.utf8.count + 2]] {
            let fd = try TestHTTP.connect(port: edge.port)
            defer { close(fd) }
            var one: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            var start = 0
            for cut in cuts + [bytes.count] where cut > start {
                _ = bytes[start..<cut].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
                start = cut
                usleep(cuts.count > 10 ? 200 : 20_000)
            }
            var received: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = recv(fd, &chunk, chunk.count, 0)
                if n <= 0 { break }
                received += chunk[0..<n]
            }
            let got = try answers(received)
            #expect(got.map(\.status) == [200, 200, 200], "cuts \(cuts.prefix(5))")
            #expect(got.allSatisfy { $0.body == routed.text && $0.headers["etag"] == routed["etag"] })
        }
    }

    @Test func pipelineMixingHitsRoutedAndUnparsedRequests() throws {
        let host = "fastpath-mixed.lab.test"
        let slow = "fastpath-mixed-slow.lab.test"
        try origin.serve(host, body: aasaBody(path: "/mixed/*"))
        try origin.set(slow, ["status": 200, "body": .string(aasaBody(path: "/mixed-slow/*")), "delay": 0.3])
        let edge = try startEdge(hosts: [host, slow])
        defer { edge.stop() }
        let routed = try edge.get("/a/v1/\(host)")
        let etag = try #require(routed["etag"])
        let hit = "GET /a/v1/\(host) HTTP/1.1\r\nHost: x\r\n\r\n"
        let requests = [
            hit,                                                                                   // memory
            "GET /a/v1/\(slow) HTTP/1.1\r\nHost: x\r\n\r\n",                                       // origin (router)
            hit,                                                                                   // waits its turn
            "HEAD /a/v1/\(host) HTTP/1.1\r\nHost: x\r\n\r\n",
            "GET /a/v1/\(host) HTTP/1.1\r\nHost: x\r\nIf-None-Match: W/\"x\", \(etag)\r\n\r\n",         // 304
            "GET /a/v1/\(host) HTTP/1.1\r\nHost: x\r\nIf-None-Match: \"other\"\r\n\r\n",              // 200
            "POST /admin/v1/releases HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}",            // NIO's from here on
            hit,
            "GET /a/v1/\(host) HTTP/1.0\r\nHost: x\r\nConnection: keep-alive\r\n\r\n",
            "GET /a/v1/\(host) HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        ]
        let got = try answers(try TestHTTP.exchange(port: edge.port, Array(requests.joined().utf8)), headRequests: [3])
        #expect(got.map(\.status) == [200, 200, 200, 200, 304, 200, 401, 200, 200, 200])
        guard got.count == requests.count else { return }
        #expect(got[1].body.contains("/mixed-slow/*"))
        for i in [0, 2, 5, 7, 8, 9] { #expect(got[i].body == routed.text, "response \(i)") }
        #expect(got[3].body.isEmpty && got[3].headers["content-length"] == String(routed.body.count))
        // A 304 has no body and no Content-Length (which would have to be the 200's).
        #expect(got[4].body.isEmpty && got[4].headers["content-length"] == nil && got[4].headers["etag"] == etag)
    }

    @Test func cachedFailureFromMemoryMatchesTheRouter() throws {
        let host = "fastpath-fail.lab.test"
        try origin.set(host, ["status": 500])
        let edge = try startEdge(hosts: [host], extra: ["--failure-ttl", "900"])
        defer { edge.stop() }
        _ = try edge.get("/a/v1/\(host)")
        let routed = try edge.get("/a/v1/\(host)")
        #expect(routed.status == 404 && routed["x-cache"] == "hit-fresh")
        let got = try answers(try TestHTTP.exchange(port: edge.port, Array(("GET /a/v1/\(host) HTTP/1.1\r\nHost: x\r\n\r\n"
            + "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").utf8)))
        #expect(got.map(\.status) == [404, 200])
        guard let fast = got.first else { return }
        for name in ["apple-failure-reason", "apple-failure-details", "apple-try-direct", "apple-from", "x-cache", "cache-control", "content-type"] {
            #expect(fast.headers[name] == routed[name], "\(name)")
        }
        #expect(fast.body == routed.text)
    }
}
