import AASAEngine
import EdgeCore
import EdgeModel
import PropagationAnalysis
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// The HTML dashboard: hosts with their state and the edge's request and fetch rates, per host the
/// stored versions, diffs, the fetch log and the propagation timeline, with refetch, purge and
/// release forms (`DashboardActions.swift`), probe runs (`DashboardProbes.swift`) and the settings.
/// Plain server-rendered HTML and inline SVG, no JavaScript; lists and running probes refresh
/// themselves (a meta refresh every few seconds, which `?live=off` turns off).
///
/// Access uses the admin token through a login form: a correct token opens a server-side session
/// (a random id in an HttpOnly, SameSite=Strict cookie, valid 12 hours, revoked at sign-out), so
/// the cookie opens the dashboard only, never the admin API (which takes the bearer token alone),
/// and the token itself never appears in a URL, a log or a cookie. Each session has a random
/// CSRF token that every state-changing form (actions, sign-out) must carry.
struct DashboardRoutes: Sendable {
    let edge: Edge
    let token: String
    let sessions = DashboardSessions()
    /// Served over HTTPS: the session cookie is `Secure`.
    var secure = false
    /// The server's own probes, when it runs them.
    var probes: ProbeRunner? = nil
    /// The Prometheus text of `/metrics`: the request and fetch figures on the home page are read
    /// from it (one source of numbers, no second count on the hot path).
    var metricsText: (@Sendable () -> [UInt8])? = nil
    let rates = RateSampler()

    /// Seconds between a live page's refreshes.
    static let refreshSeconds = 5

    static let cookieName = "aasa_edge_session"

    func register(on router: Router<EdgeRequestContext>) {
        router.get("/") { request, _ in
            guard let session = session(request) else { return Self.redirect("/login") }
            let query = request.uri.queryParameters
            let text = query.get("q").map { String($0.prefix(256)).lowercased() }.flatMap { $0.isEmpty ? nil : $0 }
            let state = query.get("state").flatMap { Self.states.contains($0) ? $0 : nil }
            let live = Self.isLive(request)
            let body = statsBox() + (await hostsPage(after: query.get("after").map { String($0) }, query: text, state: state))
            return page("aasa-edge", Self.liveSwitch(request, live: live) + body, session: session, refresh: live ? Self.refreshSeconds : nil)
        }
        router.get("/login") { request, _ in
            session(request) != nil ? Self.redirect("/") : page("Sign in · aasa-edge", Self.loginForm(error: nil), session: nil)
        }
        router.post("/login") { request, _ in
            let body = try await request.body.collect(upTo: 16 << 10)
            let presented = Self.formValue("token", in: String(buffer: body)) ?? ""
            guard AdminRoutes.constantTimeEqual(Array(presented.utf8), Array(token.utf8)) else {
                return page("Sign in · aasa-edge", Self.loginForm(error: "That is not this edge's admin token."), status: .unauthorized,
                            session: nil)
            }
            let id = sessions.open(now: Date().timeIntervalSince1970)
            var response = Self.redirect("/")
            response.headers[.setCookie] = "\(Self.cookieName)=\(id); Path=/; HttpOnly; SameSite=Strict; Max-Age=\(Int(DashboardSessions.lifetime))"
                + (secure ? "; Secure" : "")
            return response
        }
        router.post("/logout") { request, _ in
            guard let session = session(request) else { return Self.redirect("/login") }
            let body = try await request.body.collect(upTo: 16 << 10)
            let presented = Self.formValue("csrf", in: String(buffer: body)) ?? ""
            guard AdminRoutes.constantTimeEqual(Array(presented.utf8), Array(session.csrf.utf8)) else {
                return page("Sign out", "<p class=\"error\">This form has expired; sign out from a page of this dashboard.</p>",
                            status: .forbidden, session: session)
            }
            sessions.close(session.id)
            var response = Self.redirect("/login")
            response.headers[.setCookie] = "\(Self.cookieName)=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0"
            return response
        }
        router.get("/dashboard/hosts/:host") { request, context in
            guard let session = session(request) else { return Self.redirect("/login") }
            let host = try Self.host(context)
            guard let status = await edge.domain(host) else {
                return page("Unknown host", "<p>No such host: \(Self.escape(host.description))</p>", status: .notFound, session: session)
            }
            let live = Self.isLive(request)
            let body = Self.liveSwitch(request, live: live) + (try await hostPage(host, status, session: session))
            return page(host.description, body, session: session, refresh: live ? Self.refreshSeconds : nil)
        }
        router.get("/dashboard/hosts/:host/versions/:version") { request, context in
            guard let session = session(request) else { return Self.redirect("/login") }
            let host = try Self.host(context)
            guard let version = context.parameters.get("version").flatMap({ Int($0) }),
                  let snapshot = try await edge.store.snapshot(host: host.description, version: version) else {
                return page("Unknown version", "<p>No such version.</p>", status: .notFound, session: session)
            }
            let text = String(decoding: snapshot.body, as: UTF8.self)
            let html = """
                \(Self.back(host))
                <h2>\(Self.escape(host.description)) version \(version)</h2>
                <p>\(snapshot.body.count) bytes · sha256 <code>\(snapshot.sha256)</code></p>
                <pre>\(Self.escape(text))</pre>
                """
            return page("\(host) v\(version)", html, session: session)
        }
        router.get("/dashboard/hosts/:host/diff") { request, context in
            guard let session = session(request) else { return Self.redirect("/login") }
            let host = try Self.host(context)
            let query = request.uri.queryParameters
            guard let from = query.get("from").flatMap({ Int($0) }), let to = query.get("to").flatMap({ Int($0) }) else {
                return page("Diff", "<p>Give from and to version numbers.</p>", status: .badRequest, session: session)
            }
            let diff: AASADiff
            do {
                diff = try await HistoryViews.diff(edge.store, host: host.description, from: from, to: to)
            } catch {
                return page("Diff", "<p>\(Self.escape(String(describing: error)))</p>", status: .notFound, session: session)
            }
            let body = diff.isEmpty ? "no semantic difference" : diff.lines.joined(separator: "\n")
            return page("\(host) v\(from) → v\(to)", """
                \(Self.back(host))
                <h2>\(Self.escape(host.description)): version \(from) → \(to)</h2>
                <pre>\(Self.escape(body))</pre>
                """, session: session)
        }
        registerActions(on: router)
        registerProbes(on: router)
    }

    /// The live session the request's cookie names, if any.
    func session(_ request: Request) -> DashboardSessions.Session? {
        guard let cookies = request.headers[.cookie] else { return nil }
        let now = Date().timeIntervalSince1970
        for part in cookies.split(separator: ";") {
            let pair = part.trimmingCharacters(in: .whitespaces)
            guard pair.hasPrefix(Self.cookieName + "=") else { continue }
            if let session = sessions.session(String(pair.dropFirst(Self.cookieName.count + 1)), now: now) { return session }
        }
        return nil
    }

    // MARK: pages

    static let states = ["fresh", "stale", "failing", "purged"]
    /// Hosts per page of the host list (the admin list's paging underneath).
    static let pageSize = 100

    func hostsPage(after: String? = nil, query: String? = nil, state: String? = nil) async -> String {
        let now = Date().timeIntervalSince1970
        let (domains, next) = await edge.domainPage(limit: Self.pageSize, after: after, state: state, query: query)
        var rows = ""
        for d in domains {
            let link = "/dashboard/hosts/\(Self.escape(Self.pathSegment(d.domain)))"
            rows += "<tr><td><a href=\"\(link)\">\(Self.escape(d.domain))</a></td>"
            rows += "<td class=\"state-\(Self.escape(d.state))\">\(Self.escape(d.state))</td><td>\(Self.serving(d))</td>"
            rows += "<td>\(d.version.map(String.init) ?? "–")</td>"
            rows += "<td>\(d.fetchedAt.map { Self.duration(now - $0) } ?? "–")</td>"
            rows += "<td>\(d.expiresAt.map { $0 > now ? Self.duration($0 - now) : "expired" } ?? "–")</td>"
            rows += "<td>\(d.lastFailure.map { Self.escape($0.reason) + " <small>" + Self.time($0.at) + "</small>" } ?? "–")</td></tr>\n"
        }
        func link(after: String?) -> String {
            var parts: [String] = []
            if let query { parts.append("q=" + (query.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")) }
            if let state { parts.append("state=" + state) }
            if let after { parts.append("after=" + (after.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")) }
            return Self.escape("/" + (parts.isEmpty ? "" : "?" + parts.joined(separator: "&")))
        }
        let options = ([""] + Self.states).map { value in
            "<option value=\"\(value)\"\(value == (state ?? "") ? " selected" : "")>\(value.isEmpty ? "any state" : value)</option>"
        }.joined()
        let filter = """
            <form method="get" action="/" class="filter"><input type="search" name="q" value="\(Self.escape(query ?? ""))" placeholder="part of a host name" aria-label="host name contains">\
            <select name="state" aria-label="state">\(options)</select><button type="submit">Filter</button></form>

            """
        let filtered = query != nil || state != nil || after != nil
        let empty = filtered ? "<p>No host matches.</p>" : "<p>No hosts yet: ask for one at <code>/a/v1/{host}</code>.</p>"
        let pager = (after != nil ? "<a href=\"\(link(after: nil))\">← first page</a> " : "")
            + (next.map { "<a href=\"\(link(after: $0))\" rel=\"next\">next \(Self.pageSize) →</a>" } ?? "")
        let table = domains.isEmpty ? empty : """
            <table>
            <thead><tr><th>host</th><th>state</th><th>serving</th><th>version</th><th>age</th><th>TTL left</th><th>last failure</th></tr></thead>
            <tbody>
            \(rows)</tbody>
            </table>
            """
        let heading = "<h2>Hosts\(after == nil && next == nil ? " (\(domains.count))" : "")</h2>\n"
        return heading + Self.stateKey + filter + table + (pager.isEmpty ? "" : "\n<p class=\"pager\">\(pager)</p>\n")
    }

    /// What clients get now, in words: `serving v3 (stale)`, `serving the failure`, `serving nothing`.
    static func serving(_ d: DomainStatus) -> String {
        switch d.serving {
        case "fresh", "stale": return "serving " + (d.version.map { "v\($0)" } ?? "a copy") + (d.serving == "stale" ? " (stale)" : "")
        case "failure": return "serving the failure"
        default: return "serving nothing"
        }
    }

    /// One colour and one word per state, everywhere on the dashboard.
    static let stateKey = """
        <p class="key"><span class="state-fresh">fresh: within --ttl</span><span class="state-stale">stale: past --ttl, refetched on the next request</span>\
        <span class="state-failing">failing: the last fetch failed</span><span class="state-purged">purged: purged by an operator</span></p>

        """

    func hostPage(_ host: OriginHost, _ status: DomainStatus, session: DashboardSessions.Session) async throws -> String {
        let now = Date().timeIntervalSince1970
        let key = host.description
        let store = edge.store
        let snapshots = try await store.snapshots(host: key)
        let fetches = try await store.fetches(host: key, limit: 50)
        let propagation = try await edge.propagationVersions(host) ?? []
        let base = "/dashboard/hosts/\(Self.escape(Self.pathSegment(key)))"

        var html = Self.back(nil) + "<h2>\(Self.escape(key))</h2>\n<table class=\"facts\">\n"
        html += "<tr><th>state</th><td class=\"state-\(Self.escape(status.state))\">\(Self.escape(status.state)) · \(Self.serving(status))</td></tr>\n"
        html += "<tr><th>version</th><td>\(status.version.map(String.init) ?? "–")</td></tr>\n"
        html += "<tr><th>fetched</th><td>\(status.fetchedAt.map { Self.time($0) + " (" + Self.duration(now - $0) + " ago)" } ?? "–")</td></tr>\n"
        html += "<tr><th>expires</th><td>\(status.expiresAt.map { Self.time($0) + ($0 > now ? " (in " + Self.duration($0 - now) + ")" : " (expired)") } ?? "–")</td></tr>\n"
        html += "<tr><th>app IDs</th><td>\((status.appIDs ?? []).map { "<code>\(Self.escape($0))</code>" }.joined(separator: " "))</td></tr>\n"
        if let failure = status.lastFailure {
            html += "<tr><th>last failure</th><td>\(Self.escape(failure.reason)) <small>\(Self.time(failure.at))</small><br><code>\(Self.escape(failure.details))</code></td></tr>\n"
        }
        html += "</table>\n" + actionForms(host, session: session)

        html += "<h3>Versions (\(snapshots.count))</h3>\n<table>\n<thead><tr><th>version</th><th>size</th><th>sha256</th><th>first fetched</th><th>last confirmed</th><th>valid</th><th>diff</th></tr></thead>\n<tbody>\n"
        for (index, s) in snapshots.enumerated() {
            let previous = index + 1 < snapshots.count ? snapshots[index + 1].version : nil
            html += "<tr><td><a href=\"\(base)/versions/\(s.version)\">v\(s.version)</a></td><td>\(s.size) B</td>"
            html += "<td><code>\(s.sha256.prefix(16))…</code></td><td>\(Self.time(s.firstFetchedAt))</td><td>\(Self.time(s.lastConfirmedAt))</td>"
            html += "<td>\(s.valid ? "yes" : "no")</td>"
            html += "<td>\(previous.map { "<a href=\"\(base)/diff?from=\($0)&amp;to=\(s.version)\">v\($0) → v\(s.version)</a>" } ?? "–")</td></tr>\n"
        }
        html += "</tbody>\n</table>\n"

        html += "<h3>Propagation</h3>\n" + PropagationPlot.svg(propagation)
        if !propagation.isEmpty {
            html += "<table>\n<thead><tr><th>version</th><th>origin changed</th><th>first served</th><th>last served previous</th><th>clients</th><th>p50</th><th>p95</th><th>max</th><th>clients behind</th></tr></thead>\n<tbody>\n"
            for v in propagation {
                func seconds(_ s: Double?) -> String { s.map { String(format: "%.1f s", $0) } ?? "–" }
                let window = (v.originLastSeenPrevious.map { Self.time($0) + " – " } ?? "") + Self.time(v.originFirstSeen)
                html += "<tr><td>v\(v.version)</td><td>\(window)</td><td>\(v.firstServedAt.map(Self.time) ?? "–")</td>"
                html += "<td>\(v.lastServedPrevious.map(Self.time) ?? "–")</td><td>\(v.clientDelays.count)</td>"
                html += "<td>\(seconds(Propagation.percentile(v.clientDelays, 50)))</td><td>\(seconds(Propagation.percentile(v.clientDelays, 95)))</td>"
                html += "<td>\(seconds(v.clientDelays.last))</td><td>\(v.clientsBehind.count)</td></tr>\n"
            }
            html += "</tbody>\n</table>\n"
        }

        html += "<h3>Fetch log (newest \(fetches.count))</h3>\n<table>\n<thead><tr><th>at</th><th>trigger</th><th>outcome</th><th>status</th><th>reason</th><th>duration</th><th>version</th></tr></thead>\n<tbody>\n"
        for f in fetches {
            html += "<tr><td>\(Self.time(f.at))</td><td>\(Self.escape(f.trigger))</td><td class=\"outcome-\(Self.escape(f.outcome))\">\(Self.escape(f.outcome))</td>"
            html += "<td>\(f.status.map(String.init) ?? "–")</td><td>\(f.reason.map(Self.escape) ?? "")</td>"
            html += "<td>\(String(format: "%.1f ms", f.durationMs))</td><td>\(f.version.map { "v\($0)" } ?? "–")</td></tr>\n"
        }
        html += "</tbody>\n</table>\n"
        return html
    }

    // MARK: helpers

    func page(_ title: String, _ body: String, status: HTTPResponse.Status = .ok, session: DashboardSessions.Session?,
              refresh: Int? = nil) -> Response {
        let signOut = session.map {
            "<form method=\"post\" action=\"/logout\"><input type=\"hidden\" name=\"csrf\" value=\"\($0.csrf)\"><button>Sign out</button></form>"
        } ?? ""
        let html = """
            <!DOCTYPE html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <title>\(Self.escape(title))</title>\(refresh.map { "\n<meta http-equiv=\"refresh\" content=\"\($0)\">" } ?? "")
            <style>
            body { font-family: system-ui, sans-serif; margin: 1.5rem; color: #222; }
            header { display: flex; justify-content: space-between; align-items: center; border-bottom: 1px solid #ccc; margin-bottom: 1rem; }
            header h1 { font-size: 1.2rem; } header a { color: inherit; text-decoration: none; }
            table { border-collapse: collapse; margin-bottom: 1.2rem; } th, td { border-bottom: 1px solid #e4e4e4; padding: 0.3rem 0.7rem; text-align: left; vertical-align: top; }
            th { background: #f4f4f4; } code, pre { font-family: ui-monospace, monospace; font-size: 0.9em; }
            pre { background: #f7f7f7; padding: 0.8rem; overflow: auto; max-width: 100%; white-space: pre-wrap; }
            .state-fresh, .outcome-updated { color: #1b7a2e; } .state-stale { color: #8a5a00; }
            .state-failing, .outcome-failed { color: #b3261e; } .state-purged { color: #5f5f5f; }
            .key span { margin-right: 1rem; } nav a { margin-right: 1rem; } .live { float: right; font-size: 0.85em; color: #555; }
            .actions form { display: inline-block; margin: 0 0.5rem 1rem 0; } .result { background: #eef6ee; padding: 0.6rem 0.8rem; }
            .stats { display: flex; flex-wrap: wrap; gap: 0.4rem 1.6rem; background: #f7f7f7; padding: 0.6rem 0.8rem; margin-bottom: 1rem; }
            .stats b { font-size: 1.1em; } label { display: block; margin: 0.4rem 0; } textarea { width: 32rem; max-width: 100%; }
            .error { color: #b3261e; } svg { max-width: 100%; height: auto; }
            </style>
            </head>
            <body>
            <header><h1><a href="/">aasa-edge</a></h1>\(session == nil ? "" : Self.navigation)\(signOut)</header>
            <main>
            \(body)
            </main>
            </body>
            </html>

            """
        return Response(status: status, headers: Self.htmlHeaders, body: .init(byteBuffer: ByteBuffer(string: html)))
    }

    static let htmlHeaders: HTTPFields = [
        .contentType: "text/html; charset=utf-8",
        .cacheControl: "no-store",
        .contentSecurityPolicy: "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        .xContentTypeOptions: "nosniff",
        .referrerPolicy: "no-referrer",
    ]

    static func loginForm(error: String?) -> String {
        """
        <h2>Sign in</h2>
        <p>Enter this edge's admin token (the <code>--admin-token</code> value, or the <code>admin-token</code> file beside the store).</p>
        \(error.map { "<p class=\"error\">\(escape($0))</p>" } ?? "")
        <form method="post" action="/login">
        <label>Admin token <input type="password" name="token" autocomplete="current-password" autofocus required></label>
        <button type="submit">Sign in</button>
        </form>
        """
    }

    static func redirect(_ location: String) -> Response {
        Response(status: .seeOther, headers: [.location: location, .cacheControl: "no-store"])
    }

    static func host(_ context: EdgeRequestContext) throws -> OriginHost {
        let text = context.parameters.get("host") ?? ""
        do { return try OriginHost(text) } catch { throw HTTPError(.badRequest, message: "invalid host") }
    }

    static func back(_ host: OriginHost?) -> String {
        guard let host else { return "<p><a href=\"/\">← all hosts</a></p>\n" }
        return "<p><a href=\"/dashboard/hosts/\(escape(pathSegment(host.description)))\">← \(escape(host.description))</a></p>\n"
    }

    /// A host name is already restricted to a path-safe alphabet; ':' (port) is fine in a segment.
    static func pathSegment(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(CharacterSet(charactersIn: "/?#"))) ?? text
    }

    static func escape(_ text: String) -> String { Markup.escape(text) }

    static func time(_ unix: Double) -> String { RFC3339.string(unix) }

    static func duration(_ seconds: Double) -> String {
        let s = Int(max(0, seconds).rounded())
        if s < 120 { return "\(s) s" }
        if s < 7200 { return "\(s / 60) min" }
        if s < 172_800 { return String(format: "%.1f h", Double(s) / 3600) }
        return String(format: "%.1f d", Double(s) / 86400)
    }

    /// The value of `name` in an `application/x-www-form-urlencoded` body.
    static func formValue(_ name: String, in body: String) -> String? {
        for pair in body.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, parts[0] == name else { continue }
            return String(parts[1]).replacingOccurrences(of: "+", with: " ").removingPercentEncoding
        }
        return nil
    }
}

extension HTTPField.Name {
    static let contentSecurityPolicy = Self("Content-Security-Policy")!
    static let xContentTypeOptions = Self("X-Content-Type-Options")!
    static let referrerPolicy = Self("Referrer-Policy")!
}

/// Dashboard sign-ins: random ids kept on the server with an expiry, at most `maximum` at once
/// (the oldest closed first), closed at sign-out.
final class DashboardSessions: @unchecked Sendable {
    struct Session: Sendable {
        let id: String
        /// Carried by every state-changing form of this session's pages.
        let csrf: String
        let expires: Double
    }

    static let lifetime = 43_200.0
    static let maximum = 1_000
    private let lock = NSLock()
    private var sessions: [String: Session] = [:]

    static func randomHex() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }

    /// A new session's id.
    func open(now: Double) -> String {
        let session = Session(id: Self.randomHex(), csrf: Self.randomHex(), expires: now + Self.lifetime)
        lock.lock()
        defer { lock.unlock() }
        sessions = sessions.filter { $0.value.expires > now }
        if sessions.count >= Self.maximum, let oldest = sessions.min(by: { $0.value.expires < $1.value.expires }) {
            sessions[oldest.key] = nil
        }
        sessions[session.id] = session
        return session.id
    }

    func session(_ id: String, now: Double) -> Session? {
        lock.lock()
        defer { lock.unlock() }
        guard let session = sessions[id], session.expires > now else { return nil }
        return session
    }

    func close(_ id: String) {
        lock.lock()
        sessions[id] = nil
        lock.unlock()
    }
}
