import AASAEngine
import Foundation
import TestOrigin
import Testing

/// Hostile client input against the real binary: bad hosts in every position, protocol abuse,
/// enormous requests, slow and idle connections, HTTP/1.0 and pipelining. Each gets a 4xx (or a
/// closed connection for protocol abuse), never a 5xx, never an origin fetch, never a crash; and
/// a good request keeps working between them.
@Suite(.serialized) struct HostileHTTPTests {
    static let good = "hostile-ok.lab.test"

    /// Raw bytes sent on one connection; the reply's status (0: closed without a response).
    static func status(_ port: Int, _ raw: [UInt8]) throws -> (status: Int, text: String) {
        let data = try TestHTTP.exchange(port: port, raw)
        let text = String(decoding: data, as: UTF8.self)
        guard text.hasPrefix("HTTP/1.1 ") else { return (0, text) }
        return (Int(text.dropFirst(9).prefix(3)) ?? -1, text)
    }

    static func get(_ target: String, host: String = "edge.test", extra: String = "") -> [UInt8] {
        Array("GET \(target) HTTP/1.1\r\nHost: \(host)\r\n\(extra)Connection: close\r\n\r\n".utf8)
    }

    static func originFetches(_ edge: EdgeProcess) throws -> Int {
        let samples = prometheusSamples(try edge.get("/metrics").text)
        return Int(samples.filter { $0.key.hasPrefix("aasa_edge_origin_fetches_total") }.values.reduce(0, +))
    }

    static let longLabel = String(repeating: "a", count: 64)
    static let longName = (0..<4).map { _ in String(repeating: "b", count: 62) }.joined(separator: ".") + ".test"  // 254

    /// Hosts in `/a/v1/{host}`: each must be 400 (text/plain, one line) and never fetched.
    static let badHosts: [String] = [
        "127.0.0.1", "10.0.0.1", "169.254.169.254", "[::1]", "::1", "[fe80::1]", "0x7f000001", "2130706433", "127.1",
        "localhost", "LOCALHOST", "localhost:443", "a..b.test", ".a.test", "a.test..", "\(longLabel).test", longName,
        "ex%2Eample.com", "a.test%2F..%2Fadmin", "%2e%2e", "..", ".", "a.test%00", "a.test%0d%0aX-Injected:%201",
        "b%C3%BCcher.example", "xn--.test", "a.test:0", "a.test:65536", "a.test:-1", "a.test:", "a.test:99999999999999999999",
        "a.test:443:443", "user@a.test", "a.test#frag", "a_b.test", "-a.test", "a-.test", "a.123",
    ]

    @Test func hostileInputIsRefusedWithoutFetchingOrCrashing() throws {
        try origin.serve(Self.good, body: aasaBody())
        let edge = try startEdge(hosts: [Self.good], extra: ["--client-timeout", "2"])
        defer { edge.stop() }
        #expect(try edge.get("/a/v1/\(Self.good)").status == 200)
        let fetchesBefore = try Self.originFetches(edge)
        var tried = 0

        for host in Self.badHosts {
            let r = try Self.status(edge.port, Self.get("/a/v1/\(host)"))
            tried += 1
            #expect(r.status == 400, "\(host): \(r.status)")
            #expect(!r.text.lowercased().contains("x-injected"), "\(host): a header was injected")
        }
        // The same hosts in host-routed mode (the Host header), where the request line is valid.
        for host in Self.badHosts where !host.contains("%") && !host.contains("#") {
            let r = try Self.status(edge.port, Self.get("/.well-known/apple-app-site-association", host: host))
            tried += 1
            #expect((400..<500).contains(r.status), "Host: \(host): \(r.status)")
        }

        // Raw bytes no HTTP parser should accept: 400 with the connection closed, or just closed.
        let abuse: [(String, [UInt8])] = [
            ("raw unicode in the path", Array("GET /a/v1/bücher.example HTTP/1.1\r\nHost: x\r\n\r\n".utf8)),
            ("NUL in the path", Array("GET /a/v1/a\u{0}.test HTTP/1.1\r\nHost: x\r\n\r\n".utf8)),
            ("CR in the path", Array("GET /a/v1/a\r.test HTTP/1.1\r\nHost: x\r\n\r\n".utf8)),
            ("NUL in a header", Array("GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\u{0}b\r\n\r\n".utf8)),
            ("header without a colon", Array("GET /healthz HTTP/1.1\r\nHost: x\r\nnonsense\r\n\r\n".utf8)),
            ("space before the colon", Array("GET /healthz HTTP/1.1\r\nHost : x\r\n\r\n".utf8)),
            ("obsolete line folding", Array("GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\r\n b\r\n\r\n".utf8)),
            ("HTTP/0.9", Array("GET /healthz\r\n\r\n".utf8)),
            ("HTTP/2 preface on HTTP/1", Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)),
            ("TLS hello on the plain port", [0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xFC, 0x03, 0x03] + [UInt8](repeating: 0, count: 64)),
            ("10 KB method", Array((String(repeating: "A", count: 10_000) + " / HTTP/1.1\r\nHost: x\r\n\r\n").utf8)),
            ("200 KB URI", Self.get("/a/v1/" + String(repeating: "a", count: 200_000))),
            ("200 KB header", Self.get("/healthz", extra: "X-Big: " + String(repeating: "a", count: 200_000) + "\r\n")),
            ("5000 headers", Self.get("/healthz", extra: (0..<5000).map { "X-\($0): 1\r\n" }.joined())),
            ("Content-Length and Transfer-Encoding", Array("POST /admin/v1/releases HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n".utf8)),
            ("negative Content-Length", Array("POST /admin/v1/releases HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n".utf8)),
            ("two Content-Lengths", Array("POST /admin/v1/releases HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab".utf8)),
            ("bad chunk size", Array("POST /admin/v1/releases HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n".utf8)),
        ]
        for (name, raw) in abuse {
            let r = try Self.status(edge.port, raw)
            tried += 1
            #expect(r.status == 0 || (400..<500).contains(r.status), "\(name): \(r.status)")
        }

        // Requests that are valid HTTP but must still be refused.
        let refused: [(String, [UInt8], ClosedRange<Int>)] = [
            ("two Host headers", Array("GET /.well-known/apple-app-site-association HTTP/1.1\r\nHost: \(Self.good)\r\nHost: other.test\r\nConnection: close\r\n\r\n".utf8), 400...400),
            ("no Host header", Array("GET /.well-known/apple-app-site-association HTTP/1.1\r\nConnection: close\r\n\r\n".utf8), 400...400),
            ("../ out of /a/v1", Self.get("/a/v1/../admin/v1/domains"), 400...404),
            ("encoded ../ out of /a/v1", Self.get("/a/v1/%2e%2e/admin/v1/domains"), 400...404),
            ("admin without a token", Self.get("/admin/v1/domains"), 401...401),
            ("POST on a client route", Array("POST /a/v1/\(Self.good) HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8), 400...405),
            ("unknown method", Array("BREW /a/v1/\(Self.good) HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".utf8), 400...405),
        ]
        for (name, raw, expected) in refused {
            let r = try Self.status(edge.port, raw)
            tried += 1
            #expect(expected.contains(r.status), "\(name): \(r.status)")
        }
        #expect(try Self.originFetches(edge) == fetchesBefore, "a hostile request reached the origin: \(edge.log.split(separator: "\n").filter { $0.contains("host=") })")
        #expect(edge.isRunning)
        #expect(try edge.get("/a/v1/\(Self.good)").status == 200, "the edge still serves after the abuse")
        print("HostileHTTPTests: \(tried) hostile requests, 0 fetched, 0 5xx")
    }

    /// HTTP/1.0 without keep-alive gets its answer and a closed connection — on a hit answered
    /// on the event loop as on a routed request — and 1,000 pipelined requests are answered in order.
    @Test func http10AndPipelining() throws {
        try origin.serve(Self.good, body: aasaBody())
        let edge = try startEdge(hosts: [Self.good], extra: ["--client-timeout", "30"])
        defer { edge.stop() }
        #expect(try edge.get("/a/v1/\(Self.good)").status == 200)
        for target in ["/a/v1/\(Self.good)", "/healthz", "/a/v1/127.0.0.1"] {
            let started = Date()
            let r = try Self.status(edge.port, Array("GET \(target) HTTP/1.0\r\nHost: edge.test\r\n\r\n".utf8))
            // Closed by the server: well before the 30 s client timeout and the 30 s receive timeout.
            #expect(Date().timeIntervalSince(started) < 10, "\(target): the HTTP/1.0 connection was not closed")
            #expect(r.status == (target.hasSuffix("127.0.0.1") ? 400 : 200), "\(target)")
        }
        var raw = [UInt8]()
        let targets = (0..<1000).map { i in ["/a/v1/\(Self.good)", "/healthz", "/a/v1/bad..host"][i % 3] }
        for t in targets { raw += Array("GET \(t) HTTP/1.1\r\nHost: x\r\n\r\n".utf8) }
        raw += Self.get("/healthz")
        let text = String(decoding: try TestHTTP.exchange(port: edge.port, raw), as: UTF8.self)
        let statuses = text.components(separatedBy: "HTTP/1.1 ").dropFirst().map { Int($0.prefix(3)) ?? 0 }
        #expect(statuses.count == 1001)
        #expect(Array(statuses.prefix(1000)) == targets.map { $0.hasSuffix("bad..host") ? 400 : 200 }, "pipelined answers out of order")
    }

    /// Slowloris: many connections that never finish their request head are closed after
    /// `--client-timeout`, and a normal client is served while they hang.
    @Test func slowClientsAreClosedAndDoNotStarveOthers() throws {
        try origin.serve(Self.good, body: aasaBody())
        let edge = try startEdge(hosts: [Self.good], extra: ["--client-timeout", "1"])
        defer { edge.stop() }
        #expect(try edge.get("/a/v1/\(Self.good)").status == 200)
        let before = resourceCounts(edge.pid).fds
        var sockets: [Int32] = []
        for _ in 0..<200 {
            let fd = try TestHTTP.connect(port: edge.port)
            _ = "GET /a/v1/\(Self.good) HTTP/1.1\r\nHost: x\r\n".withCString { send(fd, $0, strlen($0), 0) }
            sockets.append(fd)
        }
        defer { sockets.forEach { close($0) } }
        #expect(try edge.get("/a/v1/\(Self.good)").status == 200, "a normal client was starved by 200 slow connections")
        // Keep dribbling header bytes (each resets nothing: only complete heads count).
        for _ in 0..<3 {
            usleep(500_000)
            for fd in sockets { _ = "X-Slow: 1\r\n".withCString { send(fd, $0, strlen($0), Int32(MSG_NOSIGNAL)) } }
        }
        let closed = eventually(6) {
            sockets.allSatisfy { fd in
                var byte: UInt8 = 0
                var timeout = timeval(tv_sec: 0, tv_usec: 10_000)
                setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
                return recv(fd, &byte, 1, 0) == 0
            }
        }
        #expect(closed, "slow connections still open after the client timeout")
        #expect(eventually(5) { resourceCounts(edge.pid).fds <= before + 2 }, "descriptors of closed slow clients were not released")
        #expect(try edge.get("/a/v1/\(Self.good)").status == 200)
    }
}
