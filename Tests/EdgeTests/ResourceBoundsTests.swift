import AASAEngine
import Foundation
import EdgeModel
import OriginFetcher
import SnapshotStore
import TestOrigin
import Testing

/// The bounds every edge keeps against hostile clients and a short machine (contract v3, "Bounds
/// every edge keeps"), through the real binary: each test reproduces an attack that the edge
/// did not withstand before its bound existed.
@Suite(.serialized) struct ResourceBoundsTests {
    /// Resident memory of a process, in bytes.
    static func rss(_ pid: Int32) -> Int {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }) else { return -1 }
        return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? -1) * 1024
    }

    static func metric(_ edge: EdgeProcess, _ name: String) throws -> Double {
        prometheusSamples(try edge.get("/metrics").text).filter { $0.key.hasPrefix(name) }.values.reduce(0, +)
    }

    /// A connection with a small receive buffer, so the kernel absorbs little of what the edge sends.
    static func tightConnection(_ port: Int) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var size: Int32 = 4096
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            throw TestHTTP.Failure(description: "cannot connect")
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        return fd
    }

    /// Sends `request` over and over for up to `seconds` (or `limit` bytes) without reading;
    /// returns the bytes the edge accepted.
    static func flood(_ fd: Int32, _ request: String, seconds: Double, limit: Int) -> Int {
        let chunk = Array(String(repeating: request, count: max(1, 16_384 / request.utf8.count)).utf8)
        var sent = 0
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline && sent < limit {
            let n = chunk.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n > 0 {
                sent += n
            } else if errno == EAGAIN || errno == EWOULDBLOCK {
                usleep(2_000)
            } else {
                break
            }
        }
        return sent
    }

    /// The edge closed its side: reading what it sent ends in EOF or a reset.
    static func closedByPeer(_ fd: Int32, within seconds: Double) -> Bool {
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        var timeout = timeval(tv_sec: 0, tv_usec: 200_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) { return true }
        }
        return false
    }

    /// A pipelining client that never reads: the edge stops answering (and reading) once 64 KiB
    /// of answers wait, its memory does not grow with what the client sends, the connection is
    /// closed after `--client-timeout` without progress, and other clients are served meanwhile.
    /// Before the bound, every request was answered into memory (2.1 GB in 3 s). A non-matching
    /// `If-None-Match` on every request made each answer a new buffer.
    @Test func clientThatNeverReadsIsPausedThenClosed() throws {
        let host = "noread.lab.test"
        try origin.serve(host, body: aasaBody())
        let edge = try startEdge(hosts: [host], extra: ["--client-timeout", "2"])
        defer { edge.stop() }
        #expect(try edge.get("/a/v1/\(host)").status == 200)
        let rssBefore = Self.rss(edge.pid)
        let hitsBefore = try Self.metric(edge, "aasa_edge_requests_total{outcome=\"hit-fresh\"}")

        let fast = try Self.tightConnection(edge.port)
        defer { close(fast) }
        let routed = try Self.tightConnection(edge.port)
        defer { close(routed) }
        let request = "GET /a/v1/\(host) HTTP/1.1\r\nHost: x\r\nIf-None-Match: \"nomatch\"\r\n\r\n"
        let sentFast = Self.flood(fast, request, seconds: 3, limit: 32 << 20)
        let sentRouted = Self.flood(routed, "GET /a/v1/bad..host HTTP/1.1\r\nHost: x\r\n\r\n", seconds: 1.5, limit: 32 << 20)
        let rssAfter = Self.rss(edge.pid)
        #expect(try edge.get("/a/v1/\(host)").status == 200, "a well-behaved client was not served during the flood")
        let answered = try Self.metric(edge, "aasa_edge_requests_total{outcome=\"hit-fresh\"}") - hitsBefore
        let requestsSent = sentFast / request.utf8.count
        print("never-reading client: sent \(sentFast) + \(sentRouted) bytes (\(requestsSent) hit requests), edge answered \(Int(answered)), RSS +\((rssAfter - rssBefore) >> 20) MB")
        // A paused connection answers what fits in 64 KiB plus the kernel's socket buffers (the
        // edge's send buffer grows up to tcp_wmem's maximum; the client's receive buffer is 4 KB).
        let wmem = (try? String(contentsOfFile: "/proc/sys/net/ipv4/tcp_wmem", encoding: .utf8))
            .flatMap { $0.split(whereSeparator: \.isWhitespace).last.flatMap { Int($0) } } ?? (4 << 20)
        let answerSize = try TestHTTP.exchange(port: edge.port, Array("GET /a/v1/\(host) HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".utf8)).count
        let bound = (wmem + (1 << 20)) / max(1, answerSize - 20)
        print("never-reading client: bound \(bound) answers (tcp_wmem max \(wmem), answer \(answerSize) bytes)")
        #expect(Int(answered) < bound, "the edge kept answering a client that does not read: \(Int(answered)) answers, bound \(bound)")
        #expect(rssAfter - rssBefore < 48 << 20, "RSS grew by \((rssAfter - rssBefore) >> 20) MB")
        #expect(Self.closedByPeer(fast, within: 8), "the stalled fast-path connection was not closed after --client-timeout")
        #expect(Self.closedByPeer(routed, within: 8), "the stalled routed connection was not closed after --client-timeout")
        #expect(try edge.get("/a/v1/\(host)").status == 200)
    }

    /// A request body that arrives a byte at a time is cut off after `--client-timeout`, on the
    /// login form and the admin API alike (before, only the head was timed).
    @Test func slowRequestBodiesAreClosed() throws {
        let edge = try startEdge(hosts: [], extra: ["--client-timeout", "1"])
        defer { edge.stop() }
        for (path, auth) in [("/login", ""), ("/admin/v1/releases", "Authorization: Bearer \(edge.adminToken)\r\n")] {
            let fd = try TestHTTP.connect(port: edge.port)
            defer { close(fd) }
            let head = "POST \(path) HTTP/1.1\r\nHost: x\r\n\(auth)Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"
            _ = head.withCString { send(fd, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
            let started = Date()
            var closed = false
            while Date().timeIntervalSince(started) < 8 && !closed {
                usleep(300_000)
                if " ".withCString({ send(fd, $0, 1, Int32(MSG_NOSIGNAL)) }) < 0 { closed = true }
                var byte: UInt8 = 0
                var timeout = timeval(tv_sec: 0, tv_usec: 1_000)
                setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
                let n = recv(fd, &byte, 1, Int32(MSG_PEEK))
                if n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) { closed = true }
            }
            #expect(closed, "\(path): a body dribbled one byte every 0.3 s was kept open for 8 s")
            #expect(Date().timeIntervalSince(started) < 4, "\(path): closed only after \(Date().timeIntervalSince(started)) s")
        }
        #expect(try edge.get("/healthz").status == 200)
    }

    /// Beyond `--max-connections`, new connections are closed at once and counted; the places
    /// come back when clients leave.
    @Test func connectionsBeyondTheMaximumAreClosed() throws {
        let edge = try startEdge(hosts: [], extra: ["--max-connections", "20"])
        defer { edge.stop() }
        var sockets: [Int32] = []
        defer { sockets.forEach { close($0) } }
        for _ in 0..<30 { sockets.append(try TestHTTP.connect(port: edge.port)) }
        usleep(500_000)
        let refused = sockets.filter { fd in
            var byte: UInt8 = 0
            return recv(fd, &byte, 1, Int32(MSG_DONTWAIT)) == 0
        }.count
        #expect(refused == 10, "\(refused) of 30 connections were closed with --max-connections 20")
        sockets.forEach { close($0) }
        sockets = []
        // Places come back as the edge sees the closes (a try before that is itself refused and counted).
        #expect(eventually(5) { (try? edge.get("/healthz").status) == 200 })
        #expect(try Self.metric(edge, "aasa_edge_connections_rejected_total") >= 10)
    }

    /// Cold requests beyond `--origin-concurrency` wait for a slot up to `--origin-timeout`, then
    /// get `503` with `Retry-After: 1`; nothing is recorded about their origins, which are
    /// fetched normally afterwards.
    @Test func originFetchesBeyondTheCapWaitThen503() throws {
        let hosts = (0..<6).map { "slot\($0).lab.test" }
        for host in hosts { try origin.set(host, ["status": 200, "body": .string(aasaBody()), "delay": 2]) }
        let edge = try startEdge(hosts: hosts, extra: ["--origin-concurrency", "2", "--origin-timeout", "3"])
        defer { edge.stop() }
        let answers = try concurrently(hosts) { try edge.get("/a/v1/\($0)") }
        let unavailable = zip(hosts, answers).filter { $0.1.status == 503 }
        print("origin-concurrency 2: statuses \(answers.map(\.status))")
        #expect(answers.allSatisfy { $0.status == 200 || $0.status == 503 })
        #expect(unavailable.count >= 1 && unavailable.count <= 4, "statuses \(answers.map(\.status))")
        for (_, answer) in unavailable {
            #expect(answer["retry-after"] == "1")
            #expect(answer["cache-control"] == "no-store")
            #expect(answer["cache-status"] == "aasa-edge; fwd=uri-miss; detail=unavailable")
            #expect(answer.text.contains("--origin-concurrency"))
        }
        #expect(try Self.metric(edge, "aasa_edge_origin_failures_total") == 0)
        for (host, _) in unavailable {
            try origin.serve(host, body: aasaBody())
            #expect(try edge.get("/a/v1/\(host)").status == 200, "\(host) kept a failure after a 503")
        }
        #expect(try Self.metric(edge, "aasa_edge_requests_total{outcome=\"unavailable\"}") == Double(unavailable.count))
    }

    /// Out of file descriptors: the next origin fetch cannot open a socket. The client gets 503
    /// with `Retry-After`, the log says what ran out, and nothing is recorded or cached about the
    /// origin: once descriptors are free the host is fetched and served. Before, the edge stored
    /// and cached `SWCERR00203` for the host for `--failure-ttl`.
    @Test func outOfDescriptorsIsA503NotAnOriginFailure() throws {
        let host = "nofds.lab.test"
        try origin.serve(host, body: aasaBody())
        let edge = try EdgeProcess(db: temporaryDB(), arguments: ["--connect-to", origin.connectTo(host), "--ca-file", origin.caFile],
                                   launcher: ["/usr/bin/prlimit", "--nofile=160:160"])
        defer { edge.stop() }
        let keeper = try KeepAliveClient(port: edge.port)
        defer { keeper.close() }
        #expect(try keeper.get("/healthz").status == 200)
        var sockets: [Int32] = []
        defer { sockets.forEach { close($0) } }
        for _ in 0..<220 { sockets.append(try TestHTTP.connect(port: edge.port)) }
        #expect(eventually(5) { resourceCounts(edge.pid).fds >= 158 }, "the edge's descriptors did not run out: \(resourceCounts(edge.pid).fds)")
        let starved = try keeper.get("/a/v1/\(host)")
        #expect(starved.status == 503, "out of descriptors: \(starved.status) \(starved.headers)")
        #expect(starved["retry-after"] != nil)
        #expect(starved["apple-failure-reason"] == nil)
        #expect(starved.text.contains("file descriptors"), "\(starved.text)")
        #expect(edge.log.contains("out of file descriptors"))
        sockets.forEach { close($0) }
        sockets = []
        #expect(eventually(5) { resourceCounts(edge.pid).fds < 100 })
        let served = try keeper.get("/a/v1/\(host)")
        #expect(served.status == 200, "after descriptors came back: \(served.status) \(served.headers)")
        let status = try json(try edge.admin("GET", "/domains/\(host)"))
        #expect(status["lastFailure"] == .null)
        #expect(try Self.metric(edge, "aasa_edge_origin_failures_total") == 0)
        #expect(try Self.metric(edge, "aasa_edge_local_shortages_total{resource=\"file-descriptors\"}") >= 1)
    }

    /// At start the edge raises its open-file soft limit to the hard limit.
    @Test func openFileSoftLimitIsRaised() throws {
        let edge = try EdgeProcess(db: temporaryDB(), arguments: [], launcher: ["/usr/bin/prlimit", "--nofile=200:4000"])
        defer { edge.stop() }
        let limits = try String(contentsOfFile: "/proc/\(edge.pid)/limits", encoding: .utf8)
        let line = limits.split(separator: "\n").first { $0.hasPrefix("Max open files") } ?? ""
        #expect(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst(3).first.map(String.init) == "4000", "\(line)")
    }

    /// However many requests arrive while a soft-purged host waits for its refresh (here behind
    /// a refetch queue of one), exactly one background fetch reaches the origin.
    @Test func softPurgeRefreshesOnce() throws {
        let host = "refresh-once.lab.test"
        try origin.serve(host, body: aasaBody())
        let edge = try startEdge(hosts: [host], extra: ["--refetch-concurrency", "1"])
        defer { edge.stop() }
        #expect(try edge.get("/a/v1/\(host)").status == 200)
        try origin.set(host, ["status": 200, "body": .string(aasaBody()), "delay": 0.5])
        let before = try origin.requestCount(host)
        #expect(try edge.admin("POST", "/domains/\(host)/purge?soft=true").status == 200)
        let answers = try concurrently(Array(0..<30)) { _ in try edge.get("/a/v1/\(host)").status }
        #expect(answers.allSatisfy { $0 == 200 })
        usleep(2_500_000)
        let refreshes = try origin.requestCount(host) - before
        #expect(refreshes == 1, "background refreshes: \(refreshes)")
    }

    /// The ledger keeps at most `--max-tracked-clients` clients per host and version (the least
    /// recently seen folded into `others`), and a client ID is used only when it is 1–128 bytes
    /// of printable ASCII. Before, 40,000 distinct 4 KB IDs grew the store to 257 MB and a 60 KB
    /// ID was stored as is.
    @Test func ledgerKeepsABoundedNumberOfShortClientIDs() throws {
        let host = "ledger-bound.lab.test"
        try origin.serve(host, body: aasaBody())
        let db = temporaryDB()
        let edge = try startEdge(hosts: [host], db: db, extra: ["--max-tracked-clients", "50"])
        defer { edge.stop() }
        #expect(try edge.get("/a/v1/\(host)").status == 200)
        _ = try concurrently(Array(0..<200)) { i in try edge.get("/a/v1/\(host)", headers: ["X-Client-ID": "device-\(i)"]).status }
        let long = String(repeating: "L", count: 60_000)
        #expect(try edge.get("/a/v1/\(host)", headers: ["X-Client-ID": long, "User-Agent": "agent"]).status == 200)
        #expect(try edge.get("/a/v1/\(host)", headers: ["X-Client-ID": String(repeating: "m", count: 129), "User-Agent": "agent"]).status == 200)
        let propagation = try json(try edge.admin("GET", "/domains/\(host)/propagation"))
        let clients = try #require(propagation["versions"]?.arrayValue?.first?.objectValue?["clients"]?.objectValue)
        let tracked = clients["count"]?.numberInt ?? -1
        let others = clients["others"]?.numberInt ?? -1
        #expect(tracked == 50, "tracked clients: \(tracked)")
        #expect(tracked + others == 202, "tracked \(tracked) + others \(others): every client counted once")
        #expect(edge.stop() == 0)
        let served = try SnapshotStore(path: db).served(host: host)
        #expect(Set(served.map(\.client)).count <= 50)
        #expect(served.allSatisfy { $0.client.utf8.count <= 160 }, "a client longer than 128 bytes reached the store")
        #expect(!served.contains { $0.client.contains("LLLL") || $0.client.contains("mmmm") })
    }

    /// Prebuilt hit responses count against `--memory-cache-mb` (an eighth of it): 300 hosts of
    /// 100 KB through a 16 MB budget keep the prebuilt responses under 2 MB and host entries
    /// under 14 MB. Before, up to 8,192 whole responses were kept besides the budget.
    @Test func prebuiltResponsesCountInTheMemoryBudget() throws {
        let hosts = try serveLargeFiles(count: 300, named: "prebuilt", bytes: 100_000)
        let edge = try startEdge(hosts: hosts, extra: ["--memory-cache-mb", "16"])
        defer { edge.stop() }
        let rssBefore = Self.rss(edge.pid)
        // Kept alive, so hits take the fast path (which prebuilds their responses).
        let client = try KeepAliveClient(port: edge.port)
        defer { client.close() }
        for host in hosts {
            #expect(try client.get("/a/v1/\(host)").status == 200)  // miss
            #expect(try client.get("/a/v1/\(host)").status == 200)  // hit: a prebuilt response
        }
        let samples = prometheusSamples(try edge.get("/metrics").text)
        let prebuilt = samples["aasa_edge_memory_bytes{part=\"prebuilt\"}"] ?? -1
        let entries = samples["aasa_edge_memory_bytes{part=\"entries\"}"] ?? -1
        print("prebuilt \(Int(prebuilt) >> 10) KB, entries \(Int(entries) >> 10) KB, RSS +\((Self.rss(edge.pid) - rssBefore) >> 20) MB")
        #expect(prebuilt > 0 && prebuilt <= Double(2 << 20), "prebuilt responses hold \(prebuilt) bytes")
        #expect(entries > 0 && entries <= Double(14 << 20), "host entries hold \(entries) bytes")
    }

    /// The admin list is sorted once and paged (`limit`, `after`, `state`, `q`, answered with
    /// `next`); the pages together are every host exactly once.
    @Test func adminDomainListIsPaged() async throws {
        let db = temporaryDB()
        try FileManager.default.createDirectory(atPath: (db as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        let store = try SnapshotStore(path: db)
        let now = Date().timeIntervalSince1970
        let names = (0..<200).map { String(format: "h%03d.page.test", ($0 * 7) % 200) }
        for (i, name) in names.enumerated() {
            let fetch = FetchRecord(at: now, status: 200, durationMs: 1, trigger: "request", expiresAt: now + 3600)
            if i % 4 == 0 {
                _ = try await store.recordFailure(host: name, reason: "SWCERR00203 Connection Failed", details: "{}", fetch: fetch)
            } else {
                let body = Array(aasaBody().utf8)
                _ = try await store.recordSuccess(host: name, body: body, sha256: SHA256.hex(body), etag: nil, lastModified: nil,
                                                  contentType: nil, cacheControl: nil, valid: true, diagnostics: "[]",
                                                  appIDs: ["ABCDE12345.com.example.app"], fetch: fetch)
            }
        }
        let edge = try startEdge(hosts: [], db: db)
        defer { edge.stop() }
        var seen: [String] = []
        var after: String?
        var pages = 0
        repeat {
            let page = try json(try edge.admin("GET", "/domains?limit=64" + (after.map { "&after=\($0)" } ?? "")))
            seen += (page["domains"]?.arrayValue ?? []).compactMap { $0.objectValue?["domain"]?.stringValue }
            after = page["next"]?.stringValue
            pages += 1
        } while after != nil && pages < 10
        #expect(pages == 4)
        #expect(seen == names.sorted())
        let failing = try json(try edge.admin("GET", "/domains?state=failing"))
        #expect(failing["domains"]?.arrayValue?.count == 50)
        #expect(failing["next"] == .null)
        let matching = try json(try edge.admin("GET", "/domains?q=h19"))
        #expect((matching["domains"]?.arrayValue ?? []).compactMap { $0.objectValue?["domain"]?.stringValue } == (190..<200).map { "h\($0).page.test" })
        #expect(try edge.admin("GET", "/domains?limit=0").status == 400)
        #expect(try edge.admin("GET", "/domains?state=odd").status == 400)
    }
}

/// One kept-alive client connection (requests answered with a Content-Length).
final class KeepAliveClient {
    private let fd: Int32

    init(port: Int) throws {
        fd = try TestHTTP.connect(port: port)
        var timeout = timeval(tv_sec: 15, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    func close() { Glibc.close(fd) }

    func get(_ path: String) throws -> TestHTTP.Response {
        let request = "GET \(path) HTTP/1.1\r\nHost: x\r\n\r\n"
        _ = request.withCString { send(fd, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
        var data = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            if let split = data.firstRange(of: Array("\r\n\r\n".utf8)) {
                let head = String(decoding: data[..<split.lowerBound], as: UTF8.self)
                let lines = head.components(separatedBy: "\r\n")
                var fields: [String: String] = [:]
                for line in lines.dropFirst() {
                    guard let colon = line.firstIndex(of: ":") else { continue }
                    fields[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                }
                let length = Int(fields["content-length"] ?? "0") ?? 0
                if data.count - split.upperBound >= length {
                    let status = Int(lines.first?.split(separator: " ").dropFirst().first ?? "") ?? 0
                    return TestHTTP.Response(status: status, headers: fields, body: Array(data[split.upperBound..<(split.upperBound + length)]))
                }
            }
            let n = recv(fd, &buffer, buffer.count, 0)
            guard n > 0 else { throw TestHTTP.Failure(description: "connection closed before a whole response") }
            data.append(contentsOf: buffer[0..<n])
        }
    }
}
