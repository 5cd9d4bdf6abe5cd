import AASAEngine
import EdgeCore
import EdgeModel
import Foundation
import HTTPTypes
import Hummingbird
import NIOConcurrencyHelpers
import NIOCore

/// The dashboard's operations (refetch, soft and hard purge, release), its figures and its
/// settings page. Every form posts the session's CSRF token; a hard purge asks for confirmation
/// first; each action answers with a page saying what it did.
extension DashboardRoutes {
    static let navigation = """
        <nav><a href="/">Hosts</a><a href="/dashboard/probes">Probes</a><a href="/dashboard/release">Release</a>\
        <a href="/dashboard/settings">Settings</a></nav>
        """

    func registerActions(on router: Router<EdgeRequestContext>) {
        router.post("/dashboard/hosts/:host/refetch") { request, context in
            let (session, form) = try await authorizedForm(request)
            guard let session else { return Self.redirect("/login") }
            guard form != nil else { return expired(session) }
            let host = try Self.host(context)
            guard edge.storeAvailable else { return storeDown(session) }
            let result = await edge.refetch(host)
            var line = "Refetched <b>\(Self.escape(host.description))</b>: \(Self.escape(result.outcome))"
            if let version = result.version { line += ", now version \(version)" }
            if let previous = result.previousVersion, previous != result.version { line += " (was \(previous))" }
            if let failure = result.failure { line += " — <code>\(Self.escape(failure.reason))</code>" }
            line += String(format: " in %.1f ms.", result.durationMs)
            return page("Refetched \(host)", Self.back(host) + "<p class=\"result\">\(line)</p>", session: session)
        }
        router.post("/dashboard/hosts/:host/purge") { request, context in
            let (session, form) = try await authorizedForm(request)
            guard let session else { return Self.redirect("/login") }
            guard let form else { return expired(session) }
            let host = try Self.host(context)
            let soft = Self.formValue("mode", in: form) != "hard"
            if !soft, Self.formValue("confirm", in: form) != "yes" {
                // A hard purge drops the copy: say what it does and ask once more.
                return page("Hard purge \(host)?", """
                    \(Self.back(host))
                    <h2>Hard purge \(Self.escape(host.description))?</h2>
                    <p>The copy leaves this edge's memory; the next request for it waits for the origin (a miss), and until then \
                    clients get nothing from the cache. The stored versions stay.</p>
                    <form method="post" action="\(Self.hostPath(host))/purge">\(Self.csrfField(session))\
                    <input type="hidden" name="mode" value="hard"><input type="hidden" name="confirm" value="yes">\
                    <button type="submit">Hard purge</button> <a href="\(Self.hostPath(host))">Cancel</a></form>
                    """, session: session)
            }
            guard edge.storeAvailable else { return storeDown(session) }
            guard await edge.purge(host, soft: soft) != nil else {
                return page("Unknown host", "<p>No such host: \(Self.escape(host.description))</p>", status: .notFound, session: session)
            }
            let effect = soft ? "marked stale: it is served as hit-stale while one background refetch runs"
                : "dropped: the next request fetches from the origin"
            return page("Purged \(host)", Self.back(host) + "<p class=\"result\">\(soft ? "Soft" : "Hard") purge of <b>\(Self.escape(host.description))</b>: the copy is \(effect).</p>",
                        session: session)
        }
        router.get("/dashboard/release") { request, _ in
            guard let session = session(request) else { return Self.redirect("/login") }
            return page("Release", Self.releaseForm(session, appIDs: "", domains: "", error: nil), session: session)
        }
        router.post("/dashboard/release") { request, _ in
            let (session, form) = try await authorizedForm(request)
            guard let session else { return Self.redirect("/login") }
            guard let form else { return expired(session) }
            let appText = Self.formValue("appIDs", in: form) ?? ""
            let domainText = Self.formValue("domains", in: form) ?? ""
            let appIDs = Self.list(appText)
            var hosts: [OriginHost] = []
            for name in Self.list(domainText) {
                guard let host = try? OriginHost(name), edge.configuration.isAllowed(host) else {
                    return page("Release", Self.releaseForm(session, appIDs: appText, domains: domainText,
                                                            error: "'\(name)' is not a host this edge serves."), status: .badRequest, session: session)
                }
                hosts.append(host)
            }
            guard !appIDs.isEmpty || !hosts.isEmpty else {
                return page("Release", Self.releaseForm(session, appIDs: appText, domains: domainText, error: "Give app IDs or domains."),
                            status: .badRequest, session: session)
            }
            guard edge.storeAvailable else { return storeDown(session) }
            let (results, skipped) = await edge.release(appIDs: appIDs, hosts: hosts)
            var rows = ""
            for r in results {
                rows += "<tr><td><a href=\"\(Self.hostPath(r.host))\">\(Self.escape(r.host.description))</a></td>"
                rows += "<td class=\"outcome-\(Self.escape(r.outcome))\">\(Self.escape(r.outcome))</td>"
                rows += "<td>\(r.previousVersion.map { "v\($0)" } ?? "–") → \(r.version.map { "v\($0)" } ?? "–")</td>"
                rows += "<td>\(r.failure.map { Self.escape($0.reason) } ?? "")</td><td>\(String(format: "%.1f ms", r.durationMs))</td></tr>\n"
            }
            let counts = ["updated", "unchanged", "failed"].map { outcome in "\(results.filter { $0.outcome == outcome }.count) \(outcome)" }
            var html = "<h2>Release</h2>\n<p class=\"result\">Refetched \(results.count) host(s): \(counts.joined(separator: ", ")).</p>\n"
            if !skipped.isEmpty { html += "<p>Outside --allow-domain, not fetched: \(skipped.map(Self.escape).joined(separator: ", "))</p>\n" }
            if !results.isEmpty {
                html += "<table>\n<thead><tr><th>host</th><th>outcome</th><th>version</th><th>failure</th><th>duration</th></tr></thead>\n<tbody>\n\(rows)</tbody>\n</table>\n"
            }
            html += "<p><a href=\"/dashboard/release\">Another release</a></p>\n"
            return page("Release", html, session: session)
        }
        router.get("/dashboard/settings") { request, _ in
            guard let session = session(request) else { return Self.redirect("/login") }
            return page("Settings", settingsPage(), session: session)
        }
    }

    /// The session and the form body when its CSRF token is the session's; the form is nil when
    /// the token is missing or wrong (an expired page, or a forged request).
    func authorizedForm(_ request: Request) async throws -> (DashboardSessions.Session?, String?) {
        guard let session = session(request) else { return (nil, nil) }
        let body = String(buffer: try await request.body.collect(upTo: 64 << 10))
        let presented = Self.formValue("csrf", in: body) ?? ""
        guard AdminRoutes.constantTimeEqual(Array(presented.utf8), Array(session.csrf.utf8)) else { return (session, nil) }
        return (session, body)
    }

    func expired(_ session: DashboardSessions.Session) -> Response {
        page("Form expired", "<p class=\"error\">This form has expired; go back, reload the page and try again.</p>", status: .forbidden,
             session: session)
    }

    func storeDown(_ session: DashboardSessions.Session) -> Response {
        page("Store unavailable", "<p class=\"error\">The shared store is unavailable; try again once it is back.</p>",
             status: .serviceUnavailable, session: session)
    }

    static func csrfField(_ session: DashboardSessions.Session) -> String {
        "<input type=\"hidden\" name=\"csrf\" value=\"\(session.csrf)\">"
    }

    static func hostPath(_ host: OriginHost) -> String { "/dashboard/hosts/\(escape(pathSegment(host.description)))" }

    /// Items separated by commas, spaces or lines.
    static func list(_ text: String) -> [String] {
        text.split(whereSeparator: { $0 == "," || $0.isWhitespace }).map(String.init)
    }

    /// The host page's buttons.
    func actionForms(_ host: OriginHost, session: DashboardSessions.Session) -> String {
        let path = Self.hostPath(host)
        let csrf = Self.csrfField(session)
        return """
            <div class="actions">\
            <form method="post" action="\(path)/refetch">\(csrf)<button type="submit">Refetch now</button></form>\
            <form method="post" action="\(path)/purge">\(csrf)<input type="hidden" name="mode" value="soft"><button type="submit">Soft purge</button></form>\
            <form method="post" action="\(path)/purge">\(csrf)<input type="hidden" name="mode" value="hard"><button type="submit">Hard purge…</button></form>\
            </div>

            """
    }

    static func releaseForm(_ session: DashboardSessions.Session, appIDs: String, domains: String, error: String?) -> String {
        """
        <h2>Release</h2>
        <p>Models an App Store release: refetches every host whose current file names one of the app IDs (team prefix compared \
        upper-cased), plus the domains listed, --refetch-concurrency at a time.</p>
        \(error.map { "<p class=\"error\">\(escape($0))</p>" } ?? "")
        <form method="post" action="/dashboard/release">\(csrfField(session))
        <label>App IDs (TEAMID.bundle.id, one per line or comma-separated)<br><textarea name="appIDs" rows="3">\(escape(appIDs))</textarea></label>
        <label>Domains (optional)<br><textarea name="domains" rows="3">\(escape(domains))</textarea></label>
        <button type="submit">Release</button>
        </form>
        """
    }

    // MARK: live pages

    /// Live unless `live=off` is in the query.
    static func isLive(_ request: Request) -> Bool { request.uri.queryParameters.get("live") != "off" }

    /// The switch between a page that refreshes itself and a paused one (the rest of the query kept).
    static func liveSwitch(_ request: Request, live: Bool) -> String {
        let kept = (request.uri.query ?? "").split(separator: "&").filter { !$0.hasPrefix("live=") }
        let base = request.uri.path + (kept.isEmpty ? "" : "?" + kept.joined(separator: "&"))
        let paused = base + (kept.isEmpty ? "?" : "&") + "live=off"
        return live
            ? "<p class=\"live\">updating every \(refreshSeconds) s · <a href=\"\(escape(paused))\">pause</a></p>\n"
            : "<p class=\"live\">paused · <a href=\"\(escape(base))\">resume updates</a></p>\n"
    }

    // MARK: figures

    /// Requests by outcome, hit ratio, request and origin-fetch rates, hosts in memory: read from
    /// the `/metrics` text.
    func statsBox() -> String {
        guard let metricsText else { return "" }
        let samples = MetricsText.parse(String(decoding: metricsText(), as: UTF8.self))
        func sum(_ name: String, _ label: String? = nil, in values: [String]? = nil) -> Double {
            samples.filter { $0.name == name && (values == nil || values!.contains($0.labels[label ?? ""] ?? "")) }.map(\.value).reduce(0, +)
        }
        let answered = sum("aasa_edge_requests_total", "outcome", in: ["hit-fresh", "hit-stale", "failure-hit", "miss", "revalidated", "failure-miss"])
        let hits = sum("aasa_edge_requests_total", "outcome", in: ["hit-fresh", "hit-stale", "failure-hit"])
        let requests = sum("aasa_edge_requests_total")
        let fetches = sum("aasa_edge_origin_fetches_total")
        let failed = sum("aasa_edge_origin_fetches_total", "result", in: ["failed"])
        let now = Date().timeIntervalSince1970
        let (requestRate, fetchRate, window) = rates.rates(requests: requests, fetches: fetches, now: now, since: edge.startedAt)
        let hosts = edge.hostsInMemory
        func number(_ value: Double) -> String { value >= 1e6 ? String(format: "%.1f M", value / 1e6) : String(Int(value)) }
        return """
            <div class="stats"><span><b>\(number(requests))</b> requests</span>\
            <span>hit ratio <b>\(answered > 0 ? String(format: "%.1f %%", 100 * hits / answered) : "–")</b></span>\
            <span><b>\(String(format: "%.1f", requestRate))</b> requests/s</span>\
            <span><b>\(number(fetches))</b> origin fetches (\(number(failed)) failed), <b>\(String(format: "%.2f", fetchRate))</b>/s</span>\
            <span><b>\(hosts)</b> hosts in memory</span>\
            <span>rates over the last \(Self.duration(window)); up \(Self.duration(now - edge.startedAt))</span></div>

            """
    }

    func settingsPage() -> String {
        let c = edge.configuration
        func row(_ name: String, _ value: String) -> String { "<tr><th>\(name)</th><td>\(Self.escape(value))</td></tr>\n" }
        func seconds(_ value: Double) -> String { value == value.rounded() ? "\(Int(value)) s" : "\(value) s" }
        var html = "<h2>Settings</h2>\n<p>As this edge was started (flags and AASA_EDGE_* variables); change them by restarting it.</p>\n<table class=\"facts\">\n"
        html += row("node (--node-id)", c.node) + row("version", c.version)
        html += row("store", edge.isShared ? "PostgreSQL, shared with other edges" : "SQLite (embedded)")
        html += row("parent (--parent)", edge.parentURL ?? "none: fetches from the origins")
        html += row("--ttl", seconds(c.cache.ttl)) + row("--failure-ttl", seconds(c.cache.failureTTL))
        html += row("--stale-if-error", seconds(c.cache.staleIfError)) + row("--stale-while-revalidate", seconds(c.cache.staleWhileRevalidate))
        html += row("--allow-domain", c.allowDomains.isEmpty ? "every domain" : c.allowDomains.joined(separator: ", "))
        html += row("--refetch-concurrency", String(c.refetchConcurrency)) + row("--origin-concurrency", String(c.originConcurrency))
        html += row("--origin-timeout", seconds(edge.originTimeout))
        html += row("--memory-cache-mb", String(c.memoryBudgetBytes >> 20)) + row("--max-tracked-clients", String(c.maxTrackedClients))
        html += row("--ledger-retention-days", String(format: "%g", c.ledgerRetention / 86_400))
        if c.pendingWriteLimit > 0, edge.isShared { html += row("--store-backlog", String(c.pendingWriteLimit)) }
        html += row("probes at once", probes.map { String($0.limit) } ?? "none (not run by this server)")
        return html + "</table>\n"
    }
}

/// Samples of the request and fetch counters, for rates over roughly the last minutes.
final class RateSampler: Sendable {
    private let samples = NIOLockedValueBox<[(at: Double, requests: Double, fetches: Double)]>([])

    /// Per-second rates over the last minutes: since the oldest sample kept that is at least 10 s
    /// old (samples are kept 5 minutes), else since `since` (the edge's start); and that window
    /// in seconds.
    func rates(requests: Double, fetches: Double, now: Double, since: Double) -> (Double, Double, Double) {
        samples.withLockedValue { list in
            list.removeAll { now - $0.at > 300 }
            let base = list.first.flatMap { now - $0.at >= 10 ? $0 : nil } ?? (at: since, requests: 0, fetches: 0)
            // At most one sample a second, however often the page is asked for (300 at most).
            if list.last.map({ now - $0.at >= 1 }) ?? true { list.append((now, requests, fetches)) }
            let window = max(1, now - base.at)
            return ((requests - base.requests) / window, (fetches - base.fetches) / window, window)
        }
    }
}

/// Prometheus text, read back: one sample per line, its name, labels and value.
enum MetricsText {
    struct Sample {
        let name: String
        let labels: [String: String]
        let value: Double
    }

    static func parse(_ text: String) -> [Sample] {
        text.split(separator: "\n").compactMap { line in
            guard !line.hasPrefix("#"), let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { return nil }
            let series = line[..<space]
            guard let brace = series.firstIndex(of: "{") else { return Sample(name: String(series), labels: [:], value: value) }
            var labels: [String: String] = [:]
            for pair in series[series.index(after: brace)...].dropLast().split(separator: ",") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                guard parts.count == 2 else { continue }
                labels[String(parts[0])] = String(parts[1].trimmingCharacters(in: CharacterSet(charactersIn: "\"")))
            }
            return Sample(name: String(series[..<brace]), labels: labels, value: value)
        }
    }
}
