import AASAEngine
import Foundation
import EdgeModel
import OriginFetcher
import SnapshotStore
import TestOrigin
import Testing

/// The review's remaining findings (input hygiene, admin auth, a purge that restarts undid),
/// through the real binary and the HTTPS test origin. Each test failed on the code before its fix.
@Suite(.serialized) struct HygieneTests {
    /// An origin `304` to a request that carried no validator is a protocol failure: recorded
    /// and cached for `--failure-ttl` (before: an uncached "no usable copy" on every request).
    @Test func unconditional304IsACachedFailure() throws {
        let host = "bare304.lab.test"
        try origin.set(host, ["status": 304])
        let edge = try startEdge(hosts: [host])
        defer { edge.stop() }
        let first = try edge.get("/a/v1/\(host)")
        #expect(first.status == 404)
        #expect(first["apple-failure-reason"]?.hasPrefix("SWCERR00203") == true, "\(first.headers)")
        #expect(first["apple-failure-details"]?.contains("without validators") == true)
        let second = try edge.get("/a/v1/\(host)")
        #expect(second.status == 404 && second["x-cache"] == "hit-fresh", "not cached: \(second.headers)")
        #expect(try origin.requestCount(host) == 1)
        let status = try json(try edge.admin("GET", "/domains/\(host)"))
        #expect(status["lastFailure"]?.objectValue?["reason"]?.stringValue?.hasPrefix("SWCERR00203") == true)
    }

    /// A release skips stored hosts outside `--allow-domain` and lists them.
    @Test func releaseSkipsHostsOutsideTheAllowlist() throws {
        let inside = "rel-in.lab.test", outside = "rel-out.lab.test"
        for host in [inside, outside] { try origin.serve(host, body: aasaBody("ABCDE12345.com.example.skip")) }
        let db = temporaryDB()
        let first = try startEdge(hosts: [inside, outside], db: db)
        for host in [inside, outside] { #expect(try first.get("/a/v1/\(host)").status == 200) }
        first.stop()
        let edge = try startEdge(hosts: [inside, outside], db: db, extra: ["--allow-domain", inside])
        defer { edge.stop() }
        let before = try origin.requestCount(outside)
        let answer = try json(try edge.admin("POST", "/releases", body: #"{"appIDs":["ABCDE12345.com.example.skip"]}"#))
        let domains = (answer["results"]?.arrayValue ?? []).compactMap { $0.objectValue?["domain"]?.stringValue }
        #expect(domains == [inside])
        #expect(answer["skipped"] == .array([.string(outside)]))
        #expect(try origin.requestCount(outside) == before, "a host outside the allowlist was fetched")
    }

    /// Proxies named in the environment are not used for origin fetches (the address policy has to
    /// see the origin's address): before, curl sent the fetch to the proxy.
    @Test func environmentProxiesAreIgnored() throws {
        let host = "noproxy.lab.test"
        try origin.serve(host, body: aasaBody())
        // A "proxy" that counts connections and answers nothing.
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) } }
        listen(listener, 16)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) } }
        let proxy = "http://127.0.0.1:\(UInt16(bigEndian: address.sin_port))"
        let edge = try EdgeProcess(db: temporaryDB(), arguments: ["--connect-to", origin.connectTo(host), "--ca-file", origin.caFile,
                                                                   "--origin-timeout", "2"],
                                   environment: ["https_proxy": proxy, "HTTPS_PROXY": proxy, "all_proxy": proxy, "ALL_PROXY": proxy])
        defer { edge.stop() }
        let answer = try edge.get("/a/v1/\(host)")
        #expect(answer.status == 200, "\(answer.status) \(answer.headers)")
        _ = fcntl(listener, F_SETFL, O_NONBLOCK)
        #expect(accept(listener, nil, nil) < 0, "the fetch went to the proxy")
    }

    /// Control characters and huge values from an origin's reason phrase and `Location` never
    /// reach headers, logs or JSON raw, and are cut to 256 bytes.
    @Test func originTextIsEscapedAndCapped() throws {
        let phraseHost = "phrase.lab.test", locationHost = "location.lab.test"
        let hostile = "Bad\u{1B}[31mRed\u{07}" + String(repeating: "x", count: 90_000)
        try origin.set(phraseHost, ["status": 404, "reason": .string(hostile)])
        try origin.set(locationHost, ["status": 302, "headers": ["Location": .string("https://evil.test/\u{1B}]0;owned\u{07}" + String(repeating: "y", count: 90_000))]])
        let edge = try startEdge(hosts: [phraseHost, locationHost])
        defer { edge.stop() }
        for host in [phraseHost, locationHost] {
            let raw = try TestHTTP.exchange(port: edge.port, Array("GET /a/v1/\(host) HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".utf8))
            #expect(!raw.contains(0x1B) && !raw.contains(0x07), "\(host): a control character reached the response")
            #expect(raw.count < 4_096, "\(host): a response of \(raw.count) bytes")
            let text = String(decoding: raw, as: UTF8.self)
            #expect(text.contains("\\u{1B}"), "\(host): the escape is not shown escaped")
            let admin = try edge.admin("GET", "/domains/\(host)")
            #expect(admin.body.count < 4_096 && !admin.text.contains("yyyyyyyyyy" + String(repeating: "y", count: 300)))
        }
        let reason = try edge.get("/a/v1/\(phraseHost)")["apple-failure-reason"] ?? ""
        #expect(reason.utf8.count <= 300, "Apple-Failure-Reason of \(reason.utf8.count) bytes")
        #expect(!edge.log.utf8.contains(0x1B) && !edge.log.utf8.contains(0x07), "a control character reached the log")
    }

    /// The generated admin token is never printed; a token file others can read stops start-up.
    @Test func adminTokenFileIsPrivateAndNeverPrinted() throws {
        let db = temporaryDB()
        let edge = try EdgeProcess(db: db, arguments: [], adminToken: "")
        let file = URL(fileURLWithPath: db).deletingLastPathComponent().appendingPathComponent("admin-token").path
        let token = try String(contentsOfFile: file, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(token.count == 64)
        #expect(!edge.log.contains(token), "the token was printed")
        #expect(try TestHTTP.request(port: edge.port, path: "/admin/v1/domains", headers: ["Authorization": "Bearer \(token)"]).status == 200)
        let tokenMode = try #require(try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int)
        #expect(tokenMode == 0o600)
        // The store the server made is private too.
        let storeMode = try #require(try FileManager.default.attributesOfItem(atPath: db)[.posixPermissions] as? Int)
        #expect(storeMode & 0o077 == 0, "store mode \(String(storeMode, radix: 8))")
        edge.stop()
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: file)
        do {
            let refused = try EdgeProcess(db: db, arguments: [], adminToken: "")
            refused.stop()
            Issue.record("the edge started with a token file readable by others")
        } catch {
            #expect("\(error)".contains("chmod 600 \(file)"), "\(error)")
        }
    }

    /// Edges whose stores sit in one folder share its token file, also when they start at the same
    /// moment (recipe 4 starts a parent and a child together: the loser of the race exited with
    /// "cannot write the admin token …: File exists", or read the file before its writer had filled it).
    @Test func edgesStartingTogetherShareOneTokenFile() throws {
        for round in 0..<5 {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("tokens-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let edges = try (0..<6).map { index -> (process: Process, log: URL) in
                let log = folder.appendingPathComponent("edge-\(index).log")
                FileManager.default.createFile(atPath: log.path, contents: nil)
                let process = Process()
                process.executableURL = EdgeProcess.binary
                process.arguments = ["serve", "--port", "0", "--db", folder.appendingPathComponent("edge-\(index).sqlite").path]
                process.standardError = try FileHandle(forWritingTo: log)
                process.standardOutput = FileHandle.nullDevice
                try process.run()
                return (process, log)
            }
            defer { for edge in edges where edge.process.isRunning { edge.process.terminate(); edge.process.waitUntilExit() } }
            var ports: [Int] = []
            for edge in edges {
                let deadline = Date().addingTimeInterval(30)
                var port: Int?
                while port == nil && Date() < deadline && edge.process.isRunning {
                    let text = (try? String(contentsOf: edge.log, encoding: .utf8)) ?? ""
                    if let range = text.range(of: #"listening on http://127\.0\.0\.1:\d+"#, options: .regularExpression) {
                        port = Int(text[range].split(separator: ":").last ?? "")
                    } else {
                        usleep(20_000)
                    }
                }
                let text = (try? String(contentsOf: edge.log, encoding: .utf8)) ?? ""
                guard let port else {
                    Issue.record("round \(round): an edge did not start: \(text)")
                    continue
                }
                ports.append(port)
            }
            let file = folder.appendingPathComponent("admin-token").path
            let token = try String(contentsOfFile: file, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(token.count == 64)
            for port in ports {
                #expect(try TestHTTP.request(port: port, path: "/admin/v1/domains", headers: ["Authorization": "Bearer \(token)"]).status == 200,
                        "round \(round): an edge on :\(port) does not take the token in the file")
            }
            let generated = edges.filter { ((try? String(contentsOf: $0.log, encoding: .utf8)) ?? "").contains("admin token generated") }
            #expect(generated.count == 1, "round \(round): \(generated.count) edges say they generated the token")
        }
    }

    /// A request without `Host` is 400 on every route; an absolute-form target's authority wins
    /// over `Host`; the `Bearer` scheme is case-insensitive.
    @Test func hostRulesAndBearerCase() throws {
        let host = "absolute.lab.test"
        try origin.serve(host, body: aasaBody())
        let edge = try startEdge(hosts: [host])
        defer { edge.stop() }
        for target in ["/healthz", "/a/v1/\(host)", "/.well-known/apple-app-site-association", "/admin/v1/domains"] {
            let raw = String(decoding: try TestHTTP.exchange(port: edge.port, Array("GET \(target) HTTP/1.1\r\nConnection: close\r\n\r\n".utf8)),
                             as: UTF8.self)
            #expect(raw.hasPrefix("HTTP/1.1 400"), "\(target) without Host: \(raw.prefix(40))")
        }
        let absolute = String(decoding: try TestHTTP.exchange(port: edge.port, Array(
            "GET http://\(host)/.well-known/apple-app-site-association HTTP/1.1\r\nHost: other.lab.test\r\nConnection: close\r\n\r\n".utf8)),
                              as: UTF8.self)
        #expect(absolute.hasPrefix("HTTP/1.1 200") && absolute.contains("Apple-From: https://\(host)/"), "\(absolute.prefix(300))")
        for scheme in ["bearer", "BEARER", "Bearer"] {
            let r = try TestHTTP.request(port: edge.port, path: "/admin/v1/domains", headers: ["Authorization": "\(scheme) \(edge.adminToken)"])
            #expect(r.status == 200, "\(scheme): \(r.status)")
        }
        #expect(try TestHTTP.request(port: edge.port, path: "/admin/v1/domains", headers: ["Authorization": "Basic \(edge.adminToken)"]).status == 401)
    }

    /// Dashboard sessions are random and server-side: each sign-in gets its own, sign-out needs
    /// the page's CSRF token and revokes the session.
    @Test func dashboardSessionsAndCSRF() throws {
        let edge = try startEdge(hosts: [])
        defer { edge.stop() }
        func signIn() throws -> String {
            let login = try TestHTTP.request(port: edge.port, method: "POST", path: "/login",
                                             headers: ["Content-Type": "application/x-www-form-urlencoded"], body: "token=\(edge.adminToken)")
            return try #require(login["set-cookie"]?.split(separator: ";").first.map(String.init))
        }
        let cookie = try signIn()
        #expect(try signIn() != cookie, "two sign-ins got the same session")
        let page = try edge.get("/", headers: ["Cookie": cookie])
        #expect(page.status == 200)
        let csrf = try #require(page.text.range(of: #"name="csrf" value="([0-9a-f]{64})""#, options: .regularExpression)
            .map { String(page.text[$0].dropFirst(#"name="csrf" value=""#.count).dropLast()) })
        let forged = try TestHTTP.request(port: edge.port, method: "POST", path: "/logout",
                                          headers: ["Cookie": cookie, "Content-Type": "application/x-www-form-urlencoded"], body: "csrf=00")
        #expect(forged.status == 403)
        #expect(try edge.get("/", headers: ["Cookie": cookie]).status == 200, "a forged sign-out closed the session")
        let logout = try TestHTTP.request(port: edge.port, method: "POST", path: "/logout",
                                          headers: ["Cookie": cookie, "Content-Type": "application/x-www-form-urlencoded"], body: "csrf=\(csrf)")
        #expect(logout.status == 303)
        #expect(try edge.get("/", headers: ["Cookie": cookie]).status == 303, "the session survived sign-out")
    }

    /// A hard purge issued while a 304 revalidation is in flight stands, in memory and in the
    /// store: after a restart the purged copy is not served (before: the store's purge was reset
    /// by the 304, and the restarted edge served the purged copy, here `hit-stale` while the
    /// origin fails).
    @Test func hardPurgeDuringRevalidationSurvivesRestart() throws {
        let host = "purge304.lab.test"
        try origin.serve(host, body: aasaBody(), etag: "\"p1\"")
        let db = temporaryDB()
        let first = try startEdge(hosts: [host], db: db, extra: ["--ttl", "0", "--failure-ttl", "0"])
        #expect(try first.get("/a/v1/\(host)").status == 200)
        try origin.set(host, ["status": 200, "body": .string(aasaBody()), "etag": "\"p1\"", "delay": 1])
        let refetch = Thread { _ = try? first.admin("POST", "/domains/\(host)/refetch") }
        refetch.start()
        usleep(300_000)
        #expect(try first.admin("POST", "/domains/\(host)/purge").status == 200)
        usleep(1_200_000)
        #expect(try origin.lastRequestHeaders(host)["if-none-match"] == .string("\"p1\""), "the refetch was not conditional")
        try origin.set(host, ["status": 500])
        #expect(try first.get("/a/v1/\(host)").status == 404, "the purged copy was served before the restart")
        first.stop()
        let edge = try startEdge(hosts: [host], db: db, extra: ["--ttl", "0", "--failure-ttl", "0"])
        defer { edge.stop() }
        let after = try edge.get("/a/v1/\(host)")
        #expect(after.status == 404, "after a restart the purged copy came back: \(after.status) \(after.headers)")
    }

    /// `--tls-cert`/`--tls-key`: the edge serves HTTPS (checked by a client that trusts only the
    /// test CA), hits included, and the dashboard's session cookie is `Secure`.
    @Test func servesHTTPS() throws {
        let host = "tls-served.lab.test"
        try origin.serve(host, body: aasaBody())
        let edge = try startEdge(hosts: [host], extra: ["--tls-cert", origin.labCertificate, "--tls-key", origin.labCertificate])
        defer { edge.stop() }
        #expect(edge.log.contains("listening on https://127.0.0.1:\(edge.port)"))
        let script = """
            import http.client, ssl, sys
            ctx = ssl.create_default_context(cafile=sys.argv[1])
            def get(method, path, body=None, headers={}):
                c = http.client.HTTPSConnection("127.0.0.1", int(sys.argv[2]), context=ctx, timeout=10)
                c.sock = ctx.wrap_socket(__import__("socket").create_connection(("127.0.0.1", int(sys.argv[2]))), server_hostname="edge.lab.test")
                c.request(method, path, body, headers)
                r = c.getresponse(); r.read()
                return r
            for _ in range(2):
                r = get("GET", "/a/v1/" + sys.argv[3])
                print(r.status, r.getheader("X-Cache"))
            r = get("POST", "/login", "token=" + sys.argv[4], {"Content-Type": "application/x-www-form-urlencoded"})
            print(r.status, r.getheader("Set-Cookie"))
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script, origin.caFile, String(edge.port), host, edge.adminToken]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        process.waitUntilExit()
        let lines = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).split(separator: "\n").map(String.init)
        #expect(lines.count == 3, "\(lines)")
        #expect(lines.first == "200 miss" && lines.dropFirst().first == "200 hit-fresh", "\(lines)")
        #expect(lines.last?.hasPrefix("303 ") == true && lines.last?.contains("; Secure") == true, "\(lines)")
        // Plain HTTP on the HTTPS port gets no HTTP answer.
        let plain = String(decoding: try TestHTTP.exchange(port: edge.port, Array("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n".utf8)), as: UTF8.self)
        #expect(!plain.hasPrefix("HTTP/1.1 200"))
    }
}

