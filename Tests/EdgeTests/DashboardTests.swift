import AASAEngine
import Foundation
import TestOrigin
import SnapshotStore
import EdgeModel
import Testing

/// The HTML dashboard through the real binary: sign-in, every link followed, escaping, and the
/// session cookie's limits.
@Suite(.serialized) struct DashboardTests {
    static func links(_ html: String) -> [String] {
        html.components(separatedBy: "href=\"").dropFirst().compactMap { $0.split(separator: "\"").first.map(String.init) }
            .map { $0.replacingOccurrences(of: "&amp;", with: "&") }
    }

    @Test func signInFollowLinksAndEscape() throws {
        let good = "dash.lab.test"
        let hostile = "hostile.lab.test"
        try origin.serve(good, body: aasaBody(path: "/one/*"))
        try origin.set(hostile, ["status": 302, "headers": ["Location": "https://x.test/<script>alert(1)</script>"]])
        let edge = try startEdge(hosts: [good, hostile])
        defer { edge.stop() }
        #expect(try edge.get("/a/v1/\(good)", headers: ["X-Client-ID": "c1"]).status == 200)
        #expect(try edge.get("/a/v1/\(hostile)").status == 404)
        try origin.serve(good, body: aasaBody(path: "/two/*"))
        _ = try edge.admin("POST", "/domains/\(good)/refetch")
        #expect(try edge.get("/a/v1/\(good)", headers: ["X-Client-ID": "c1"]).status == 200)

        // Signed out: every page sends to the sign-in form.
        for path in ["/", "/dashboard/hosts/\(good)", "/dashboard/hosts/\(good)/versions/1"] {
            let response = try edge.get(path)
            #expect(response.status == 303 && response["location"] == "/login", "\(path)")
        }
        let form = try edge.get("/login")
        #expect(form.status == 200 && form.text.contains("name=\"token\"") && MarkupCheck.isBalanced(form.text))
        let wrong = try TestHTTP.request(port: edge.port, method: "POST", path: "/login",
                                         headers: ["Content-Type": "application/x-www-form-urlencoded"], body: "token=nope")
        #expect(wrong.status == 401 && wrong["set-cookie"] == nil)

        let login = try TestHTTP.request(port: edge.port, method: "POST", path: "/login",
                                         headers: ["Content-Type": "application/x-www-form-urlencoded"], body: "token=\(edge.adminToken)")
        #expect(login.status == 303 && login["location"] == "/")
        let setCookie = try #require(login["set-cookie"])
        #expect(setCookie.contains("HttpOnly") && setCookie.contains("SameSite=Strict"))
        let cookie = try #require(setCookie.split(separator: ";").first.map(String.init))
        #expect(!cookie.contains(edge.adminToken))  // the token itself is never the cookie
        let signedIn = ["Cookie": cookie]

        let home = try edge.get("/", headers: signedIn)
        #expect(home.status == 200 && home["content-type"] == "text/html; charset=utf-8")
        #expect(home["content-security-policy"]?.contains("default-src 'none'") == true)
        #expect(MarkupCheck.isBalanced(home.text))
        #expect(home.text.contains(good) && home.text.contains(hostile) && home.text.contains("SWCERR00101"))

        // Follow every link from the home page, and every link of those pages, once.
        var seen: Set<String> = []
        var queue = Self.links(home.text).filter { $0.hasPrefix("/") }
        var pages = 0
        while let link = queue.first {
            queue.removeFirst()
            guard seen.insert(link).inserted else { continue }
            let page = try edge.get(link, headers: signedIn)
            #expect(page.status == 200, "\(link) → \(page.status)")
            #expect(MarkupCheck.isBalanced(page.text), "\(link) is not well formed")
            #expect(!page.text.contains("<script"), "\(link) carries unescaped markup")
            pages += 1
            queue += Self.links(page.text).filter { $0.hasPrefix("/dashboard/") && !seen.contains($0) }
        }
        // Home, two hosts, two versions of the good host, one diff (and the "back" links).
        #expect(pages >= 6)
        #expect(seen.contains("/dashboard/hosts/\(good)/diff?from=1&to=2"))
        let detail = try edge.get("/dashboard/hosts/\(good)", headers: signedIn).text
        #expect(detail.contains("<svg") && detail.contains("v2") && detail.contains("Fetch log"))
        let diff = try edge.get("/dashboard/hosts/\(good)/diff?from=1&to=2", headers: signedIn).text
        #expect(diff.contains("/two/*"))
        let hostilePage = try edge.get("/dashboard/hosts/\(hostile)", headers: signedIn).text
        #expect(hostilePage.contains("&lt;script&gt;"))

        // The cookie opens the dashboard only; a forged one opens nothing.
        #expect(try edge.get("/admin/v1/domains", headers: signedIn).status == 401)
        #expect(try edge.get("/", headers: ["Cookie": "aasa_edge_session=\(edge.adminToken)"]).status == 303)
        #expect(try edge.get("/dashboard/hosts/unknown.lab.test", headers: signedIn).status == 404)
        let signedInPage = try edge.get("/", headers: signedIn).text
        let csrf = try #require(signedInPage.range(of: #"name="csrf" value="[0-9a-f]+""#, options: .regularExpression)
            .map { String(signedInPage[$0].dropFirst(#"name="csrf" value=""#.count).dropLast()) })
        let logout = try TestHTTP.request(port: edge.port, method: "POST", path: "/logout",
                                          headers: signedIn.merging(["Content-Type": "application/x-www-form-urlencoded"]) { a, _ in a },
                                          body: "csrf=\(csrf)")
        #expect(logout.status == 303 && logout["set-cookie"]?.contains("Max-Age=0") == true)
    }

    /// Each state has its own colour and word, with a key (before: stale and failing were the same red).
    @Test func statesHaveDistinctColoursAndAKey() throws {
        let edge = try startEdge(hosts: [])
        defer { edge.stop() }
        let login = try TestHTTP.request(port: edge.port, method: "POST", path: "/login",
                                         headers: ["Content-Type": "application/x-www-form-urlencoded"], body: "token=\(edge.adminToken)")
        let cookie = try #require(login["set-cookie"]?.split(separator: ";").first.map(String.init))
        let page = try edge.get("/", headers: ["Cookie": cookie]).text
        var colours: [String: String] = [:]
        for state in ["fresh", "stale", "failing", "purged"] {
            let rule = try #require(page.range(of: #"\.state-\#(state)[^{]*\{ color: (#[0-9a-f]{6})"#, options: .regularExpression), "no colour for \(state)")
            colours[state] = String(page[rule].suffix(7))
            #expect(page.contains("<span class=\"state-\(state)\">\(state):"), "no key entry for \(state)")
        }
        #expect(Set(colours.values).count == 4, "states share colours: \(colours)")
    }

    /// The host list is paged (100 a page, a next link) and can be filtered by name and state,
    /// through the admin list's paging (before: every host on one page).
    @Test func hostListIsPagedAndFiltered() async throws {
        let db = temporaryDB()
        try FileManager.default.createDirectory(atPath: (db as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        let store = try SnapshotStore(path: db)
        let now = Date().timeIntervalSince1970
        for i in 0..<230 {
            let fetch = FetchRecord(at: now, status: 500, durationMs: 1, trigger: "request")
            _ = try await store.recordFailure(host: String(format: "d%03d.page.test", i), reason: "SWCERR00101 Bad HTTP Response: 500 Error", details: "{}", fetch: fetch)
        }
        let edge = try startEdge(hosts: [], db: db)
        defer { edge.stop() }
        let login = try TestHTTP.request(port: edge.port, method: "POST", path: "/login",
                                         headers: ["Content-Type": "application/x-www-form-urlencoded"], body: "token=\(edge.adminToken)")
        let cookie = ["Cookie": try #require(login["set-cookie"]?.split(separator: ";").first.map(String.init))]
        func hosts(_ html: String) -> [String] {
            html.components(separatedBy: "\">d").dropFirst().compactMap { $0.split(separator: "<").first.map { "d" + $0 } }.filter { $0.hasSuffix(".page.test") }
        }
        let first = try edge.get("/", headers: cookie).text
        #expect(hosts(first).count == 100 && hosts(first).first == "d000.page.test")
        let next = try #require(first.range(of: #"href="/\?after=[^"]+" rel="next""#, options: .regularExpression).map { String(first[$0]) })
        let path = String(next.dropFirst(6).prefix { $0 != "\"" }).replacingOccurrences(of: "&amp;", with: "&")
        let second = try edge.get(path, headers: cookie).text
        #expect(hosts(second).first == "d100.page.test" && hosts(second).count == 100, "\(path)")
        let filtered = try edge.get("/?q=d22&state=failing", headers: cookie).text
        #expect(hosts(filtered) == (220..<230).map { "d\($0).page.test" })
        #expect(hosts(try edge.get("/?state=fresh", headers: cookie).text).isEmpty)
    }

    @Test func readinessWritesToTheStore() throws {
        let edge = try startEdge(hosts: [])
        defer { edge.stop() }
        let ready = try edge.get("/readyz")
        #expect(ready.status == 200 && ready.text == "ready\n")
        #expect(try edge.get("/healthz").status == 200)
    }
}

/// The dashboard as a place to operate from: refetch, purges (a hard one confirmed first),
/// release, probes started and stopped, pages that refresh themselves, figures and settings. HTML
/// checks through the real binary (no browser on the test machines).
@Suite(.serialized) struct DashboardOperationTests {
    struct Signed {
        let edge: EdgeProcess
        let cookie: [String: String]

        init(_ edge: EdgeProcess) throws {
            self.edge = edge
            let login = try TestHTTP.request(port: edge.port, method: "POST", path: "/login",
                                             headers: ["Content-Type": "application/x-www-form-urlencoded"], body: "token=\(edge.adminToken)")
            cookie = ["Cookie": try #require(login["set-cookie"]?.split(separator: ";").first.map(String.init))]
        }

        func get(_ path: String) throws -> TestHTTP.Response { try edge.get(path, headers: cookie) }

        /// The CSRF token of the session (every signed-in page carries it in the sign-out form).
        func csrf() throws -> String {
            let page = try get("/").text
            return try #require(page.range(of: #"name="csrf" value="[0-9a-f]+""#, options: .regularExpression)
                .map { String(page[$0].dropFirst(#"name="csrf" value=""#.count).dropLast()) })
        }

        func post(_ path: String, _ fields: [String: String], csrf: String? = nil) throws -> TestHTTP.Response {
            var all = fields
            all["csrf"] = try csrf ?? self.csrf()
            let body = all.map { "\($0.key)=\($0.value.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")" }.joined(separator: "&")
            return try TestHTTP.request(port: edge.port, method: "POST", path: path,
                                        headers: cookie.merging(["Content-Type": "application/x-www-form-urlencoded"]) { a, _ in a }, body: body)
        }
    }

    @Test func refetchPurgesAndReleaseFromTheDashboard() throws {
        let host = "ops.lab.test"
        try origin.serve(host, body: aasaBody("ABCDE12345.com.example.ops", path: "/one/*"))
        let edge = try startEdge(hosts: [host])
        defer { edge.stop() }
        #expect(try edge.get("/a/v1/\(host)").status == 200)
        let d = try Signed(edge)

        let page = try d.get("/dashboard/hosts/\(host)").text
        #expect(MarkupCheck.isBalanced(page))
        for action in ["refetch", "purge"] { #expect(page.contains("action=\"/dashboard/hosts/\(host)/\(action)\"")) }
        #expect(page.contains(#"<meta http-equiv="refresh" content="5">"#) && page.contains("live=off"))
        #expect(!(try d.get("/dashboard/hosts/\(host)?live=off").text.contains("http-equiv=\"refresh\"")))

        // Refetch: the origin changed, the result says so.
        try origin.serve(host, body: aasaBody("ABCDE12345.com.example.ops", path: "/two/*"))
        let refetched = try d.post("/dashboard/hosts/\(host)/refetch", [:])
        #expect(refetched.status == 200 && refetched.text.contains("updated, now version 2 (was 1)"), "\(refetched.text)")
        #expect(try d.post("/dashboard/hosts/\(host)/refetch", [:], csrf: "forged").status == 403, "no CSRF token, no action")

        // A soft purge at once; a hard purge asks first.
        let soft = try d.post("/dashboard/hosts/\(host)/purge", ["mode": "soft"])
        #expect(soft.status == 200 && soft.text.contains("Soft purge"))
        let ask = try d.post("/dashboard/hosts/\(host)/purge", ["mode": "hard"])
        #expect(ask.status == 200 && ask.text.contains("name=\"confirm\" value=\"yes\"") && MarkupCheck.isBalanced(ask.text))
        #expect(try edge.get("/a/v1/\(host)").headers["x-cache"] == "hit-stale", "not purged hard before the confirmation")
        let hard = try d.post("/dashboard/hosts/\(host)/purge", ["mode": "hard", "confirm": "yes"])
        #expect(hard.status == 200 && hard.text.contains("Hard purge"))
        #expect(try json(try edge.admin("GET", "/domains/\(host)"))["state"] == .string("purged"))

        // Release by app ID.
        #expect(try d.get("/dashboard/release").text.contains("name=\"appIDs\""))
        let release = try d.post("/dashboard/release", ["appIDs": "ABCDE12345.com.example.ops", "domains": ""])
        #expect(release.status == 200 && release.text.contains("Refetched 1 host(s)") && release.text.contains(host), "\(release.text)")
        #expect(try d.post("/dashboard/release", ["appIDs": "", "domains": "not a host"]).status == 400)

        // Figures and settings.
        let home = try d.get("/").text
        #expect(home.contains("hit ratio") && home.contains("requests/s") && home.contains("origin fetches"))
        let settings = try d.get("/dashboard/settings").text
        #expect(settings.contains("--ttl") && settings.contains("3600 s") && MarkupCheck.isBalanced(settings))
    }

    @Test func probesAreStartedWatchedAndStoppedFromTheDashboard() throws {
        let host = "ops-probe.lab.test"
        try origin.serve(host, body: aasaBody())
        let edge = try startEdge(hosts: [host])
        defer { edge.stop() }
        let d = try Signed(edge)
        let list = try d.get("/dashboard/probes").text
        #expect(list.contains("Start a probe") && MarkupCheck.isBalanced(list))
        let started = try d.post("/dashboard/probes", ["host": host, "cdnURL": "http://127.0.0.1:\(edge.port)/a/v1/{host}",
                                                       "interval": "0.5", "duration": "600"])
        #expect(started.status == 303)
        let location = try #require(started["location"])
        #expect(location.hasPrefix("/dashboard/probes/"))
        #expect(try eventually(10) { try d.get(location).text.contains("200 <code>") })
        let running = try d.get(location).text
        #expect(running.contains("<svg") && running.contains("Stop this probe") && running.contains("http-equiv=\"refresh\""))
        #expect(MarkupCheck.isBalanced(running))
        #expect(try d.post(location + "/stop", [:]).status == 303)
        #expect(try eventually(10) { try d.get(location).text.contains("probe-stopped") })
        #expect(try d.post(location + "/stop", [:]).status == 409)
        let bad = try d.post("/dashboard/probes", ["host": host, "interval": "0.01", "duration": "60"])
        #expect(bad.status == 400 && bad.text.contains("interval") && bad.text.contains("value=\"\(host)\""), "the form comes back filled in")
    }
}
