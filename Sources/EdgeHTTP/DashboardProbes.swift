import AASAEngine
import EdgeCore
import EdgeModel
import Foundation
import Hummingbird
import PropagationAnalysis

/// The dashboard's probe pages: the runs in the store, one run with its plot, changes and
/// observations, a form that starts a probe inside the server and a button that stops one.
extension DashboardRoutes {
    func registerProbes(on router: Router<EdgeRequestContext>) {
        router.get("/dashboard/probes") { request, _ in
            guard let session = session(request) else { return Self.redirect("/login") }
            let live = Self.isLive(request)
            let body = Self.liveSwitch(request, live: live) + (try await probeList(session, form: ProbeForm(), error: nil))
            return page("Probes", body, session: session, refresh: live ? Self.refreshSeconds : nil)
        }
        router.post("/dashboard/probes") { request, _ in
            let (session, body) = try await authorizedForm(request)
            guard let session else { return Self.redirect("/login") }
            guard let body else { return expired(session) }
            let form = ProbeForm(body)
            guard let probes, let routes = probeRoutes else {
                return page("Probes", "<p class=\"error\">This server does not run probes.</p>", status: .notFound, session: session)
            }
            let problem: String
            let status: HTTPResponse.Status
            do {
                guard let interval = Double(form.interval), let duration = Double(form.duration) else {
                    throw AdminError(.badRequest, "the interval and the duration are numbers of seconds")
                }
                let configuration = try routes.configuration(host: form.host, cdnURL: form.cdnURL.isEmpty ? nil : form.cdnURL,
                                                             interval: interval, duration: duration, untilConverged: form.untilConverged)
                let id = try await probes.start(configuration)
                return Self.redirect("/dashboard/probes/\(id)")
            } catch let error as AdminError {
                (problem, status) = (error.message, error.status)
            } catch ProbeRunner.StartError.busy(let limit) {
                (problem, status) = ("\(limit) probes are running (the limit): stop one first.", .tooManyRequests)
            } catch {
                (problem, status) = ("The store did not record the probe: \(error)", .serviceUnavailable)
            }
            return page("Probes", try await probeList(session, form: form, error: problem), status: status, session: session)
        }
        router.get("/dashboard/probes/:id") { request, context in
            guard let session = session(request) else { return Self.redirect("/login") }
            guard let id = context.parameters.get("id").flatMap({ Int64($0) }),
                  let (run, records) = try await edge.store.probeRun(id) else {
                return page("Unknown probe", "<p>No such probe run.</p>", status: .notFound, session: session)
            }
            let state = probeRoutes?.state(run) ?? run.state
            let live = Self.isLive(request) && state == "running"
            let body = (state == "running" ? Self.liveSwitch(request, live: live) : "") + probePage(run, records, state: state, session: session)
            return page("Probe \(id)", body, session: session, refresh: live ? Self.refreshSeconds : nil)
        }
        router.post("/dashboard/probes/:id/stop") { request, context in
            let (session, body) = try await authorizedForm(request)
            guard let session else { return Self.redirect("/login") }
            guard body != nil else { return expired(session) }
            guard let id = context.parameters.get("id").flatMap({ Int64($0) }) else {
                return page("Unknown probe", "<p>No such probe run.</p>", status: .notFound, session: session)
            }
            guard probes?.stop(id) == true else {
                return page("Probe \(id)", "<p class=\"error\">Probe \(id) is not running in this server.</p> <p><a href=\"/dashboard/probes/\(id)\">Back</a></p>",
                            status: .conflict, session: session)
            }
            return Self.redirect("/dashboard/probes/\(id)")
        }
    }

    /// The API's checks and states, shared with the dashboard.
    var probeRoutes: ProbeRoutes? { probes.map { ProbeRoutes(admin: AdminRoutes(edge: edge, token: token), probes: $0) } }

    /// What the start form holds (kept when it comes back with an error).
    struct ProbeForm {
        var host = ""
        var cdnURL = ProbeConfiguration.appleCDNTemplate
        var interval = "60"
        var duration = "3600"
        var untilConverged = true

        init() {}

        init(_ body: String) {
            host = DashboardRoutes.formValue("host", in: body)?.trimmingCharacters(in: .whitespaces) ?? ""
            cdnURL = DashboardRoutes.formValue("cdnURL", in: body)?.trimmingCharacters(in: .whitespaces) ?? ""
            interval = DashboardRoutes.formValue("interval", in: body)?.trimmingCharacters(in: .whitespaces) ?? ""
            duration = DashboardRoutes.formValue("duration", in: body)?.trimmingCharacters(in: .whitespaces) ?? ""
            untilConverged = DashboardRoutes.formValue("untilConverged", in: body) == "on"
        }
    }

    func probeList(_ session: DashboardSessions.Session, form: ProbeForm, error: String?) async throws -> String {
        let runs = try await edge.store.probeRunList(limit: 100)
        var rows = ""
        for run in runs {
            let records = try await edge.store.probeRun(run.id)?.1 ?? []
            let changes = ProbeAnalysis.changes(records)
            let state = probeRoutes?.state(run) ?? run.state
            let delay = changes.last?.delaySeconds.map { String(format: "%.1f s", $0) } ?? "–"
            rows += "<tr><td><a href=\"/dashboard/probes/\(run.id)\">\(run.id)</a></td><td>\(Self.escape(run.host))</td>"
            rows += "<td><code>\(Self.escape(run.cdnURL))</code></td><td>\(Self.time(run.startedAt))</td>"
            rows += "<td class=\"probe-\(Self.escape(state))\">\(Self.escape(state))</td><td>\(changes.count)</td><td>\(delay)</td></tr>\n"
        }
        var html = "<h2>Probes</h2>\n<p>Each run watches an origin and a CDN side by side and measures how long each origin change takes to reach the CDN "
            + "(<code>aasa-edge probe</code> runs on this store are listed too).</p>\n"
        html += runs.isEmpty ? "<p>No probe runs yet.</p>\n" : """
            <table>
            <thead><tr><th>run</th><th>host</th><th>CDN URL</th><th>started</th><th>state</th><th>changes</th><th>last delay</th></tr></thead>
            <tbody>
            \(rows)</tbody>
            </table>

            """
        guard probes != nil else { return html }
        html += """
            <h3>Start a probe</h3>
            \(error.map { "<p class=\"error\">\(Self.escape($0))</p>" } ?? "")
            <form method="post" action="/dashboard/probes">\(Self.csrfField(session))
            <label>Host <input name="host" value="\(Self.escape(form.host))" placeholder="app.lab.test" required></label>
            <label>CDN URL ({host} is replaced) <input name="cdnURL" size="60" value="\(Self.escape(form.cdnURL))"></label>
            <label>Interval (s, at least \(ProbeRoutes.minimumInterval)) <input name="interval" value="\(Self.escape(form.interval))"></label>
            <label>Duration (s) <input name="duration" value="\(Self.escape(form.duration))"></label>
            <label><input type="checkbox" name="untilConverged"\(form.untilConverged ? " checked" : "")> stop once the CDN serves the origin's latest change</label>
            <button type="submit">Start</button>
            </form>

            """
        return html
    }

    func probePage(_ run: ProbeRun, _ records: [ProbeRecord], state: String, session: DashboardSessions.Session) -> String {
        let changes = ProbeAnalysis.changes(records)
        var html = "<p><a href=\"/dashboard/probes\">← all probes</a></p>\n<h2>Probe \(run.id): \(Self.escape(run.host))</h2>\n<table class=\"facts\">\n"
        html += "<tr><th>CDN</th><td><code>\(Self.escape(run.cdnURL))</code></td></tr>\n"
        html += "<tr><th>state</th><td class=\"probe-\(Self.escape(state))\">\(Self.escape(state))</td></tr>\n"
        html += "<tr><th>started</th><td>\(Self.time(run.startedAt))</td></tr>\n"
        html += "<tr><th>ended</th><td>\(run.endedAt.map(Self.time) ?? "–")</td></tr>\n"
        html += "<tr><th>interval</th><td>\(String(format: "%g", run.interval)) s</td></tr>\n"
        html += "<tr><th>observations</th><td>\(records.count)</td></tr>\n</table>\n"
        if state == "running", probes?.isRunning(run.id) == true {
            html += "<form method=\"post\" action=\"/dashboard/probes/\(run.id)/stop\">\(Self.csrfField(session))<button type=\"submit\">Stop this probe</button></form>\n"
        }
        html += ProbePlot.svg(host: run.host, cdnURL: run.cdnURL, records: records, changes: changes) + "\n"
        if !changes.isEmpty {
            html += "<h3>Changes</h3>\n<table>\n<thead><tr><th>origin changed</th><th>to</th><th>CDN caught up</th><th>delay</th></tr></thead>\n<tbody>\n"
            for c in changes {
                html += "<tr><td>\(Self.time(c.originChangedAt))\(c.observedAtStart ? " (differed at start)" : "")</td><td><code>\(c.sha256.prefix(10))</code></td>"
                html += "<td>\(c.cdnCaughtUpAt.map(Self.time) ?? "not yet")</td>"
                html += "<td>\(c.delaySeconds.map { String(format: "%@%.1f s", c.observedAtStart ? "≥ " : "", $0) } ?? "–")</td></tr>\n"
            }
            html += "</tbody>\n</table>\n"
        }
        let pairs = ProbeRoutes.pairs(records)
        html += "<h3>Observations (newest \(min(pairs.count, 200)) of \(pairs.count))</h3>\n"
        html += "<table>\n<thead><tr><th>at</th><th>origin</th><th>CDN</th><th>CDN Age</th><th>CDN X-Cache</th></tr></thead>\n<tbody>\n"
        func describe(_ r: ProbeRecord?) -> String {
            guard let r else { return "–" }
            if r.status == 200, let sha = r.sha256 { return "200 <code>\(sha.prefix(10))</code>" }
            return r.status.map(String.init).map { $0 + (r.failureReason.map { " " + Self.escape($0) } ?? "") } ?? Self.escape(r.error ?? "no answer")
        }
        for pair in pairs.suffix(200).reversed() {
            html += "<tr><td>\(Self.time(pair.origin.at))</td><td>\(describe(pair.origin))</td><td>\(describe(pair.cdn))</td>"
            html += "<td>\(pair.cdn?.age.map(String.init) ?? "–")</td><td>\(pair.cdn?.xCache.map(Self.escape) ?? "–")</td></tr>\n"
        }
        return html + "</tbody>\n</table>\n"
    }
}
