import AASAEngine
import EdgeCore
import EdgeModel
import Foundation
import Hummingbird
import PropagationAnalysis

/// `/admin/v1/probes…`: the probe runs in the store (the server's own and `aasa-edge probe`'s),
/// and probes run inside the server (at most `ProbeRunner.limit` at once).
struct ProbeRoutes: Sendable {
    let admin: AdminRoutes
    let probes: ProbeRunner

    /// Bounds of a probe started over the API: observations no closer than this, a run no longer
    /// than a week, and ended after `maximumTicks` observations of each side whatever its duration
    /// (what a run stores, and what its detail and plot read back).
    static let minimumInterval = 0.2
    static let maximumDuration = 604_800.0
    static let maximumTicks = 100_000

    func register(on group: RouterGroup<EdgeRequestContext>) {
        group.get("/probes") { request, _ in
            try admin.authorize(request)
            let given = request.uri.queryParameters.get("limit")
            guard let limit = given.map({ Int($0) }) ?? 100, (1...1000).contains(limit) else {
                throw AdminError(.badRequest, "limit must be a number from 1 to 1000")
            }
            let runs = try await admin.history { try await admin.edge.store.probeRunList(limit: limit) }
            var items: [Summary] = []
            for run in runs {
                let records = try await admin.history { try await admin.edge.store.probeRun(run.id)?.1 ?? [] }
                items.append(summary(run, changes: ProbeAnalysis.changes(records).count))
            }
            return Response.json(.ok, List(probes: items))
        }
        group.post("/probes") { request, _ in
            try admin.authorize(request)
            try admin.requireStore()
            let configuration = try await parseStart(request)
            do {
                let id = try await probes.start(configuration)
                var response = Response.json(.accepted, Started(id: id))
                response.headers[.location] = "/admin/v1/probes/\(id)"
                return response
            } catch let error as ProbeRunner.StartError {
                switch error {
                case .busy(let limit):
                    var response = Response.json(.tooManyRequests, AdminJSON.Problem("\(limit) probes are running (the limit): stop one first"))
                    response.headers[.retryAfter] = "60"
                    return response
                case .store(let problem):
                    throw AdminError(.serviceUnavailable, "the store did not record the probe: \(problem)")
                }
            }
        }
        group.get("/probes/:id") { request, context in
            try admin.authorize(request)
            let (run, records) = try await find(context)
            return Response.json(.ok, Detail(run: run, state: state(run), records: records))
        }
        group.get("/probes/:id/plot.svg") { request, context in
            try admin.authorize(request)
            let (run, records) = try await find(context)
            let svg = ProbePlot.svg(host: run.host, cdnURL: run.cdnURL, records: records, changes: ProbeAnalysis.changes(records))
            return Response(status: .ok, headers: [.contentType: "image/svg+xml"], body: .init(byteBuffer: ByteBuffer(string: svg)))
        }
        group.delete("/probes/:id") { request, context in
            try admin.authorize(request)
            let (run, _) = try await find(context)
            guard probes.stop(run.id) else {
                throw AdminError(.conflict, "probe \(run.id) is not running in this server (\(state(run)))")
            }
            return Response.json(.ok, Stopping(id: run.id, state: "stopping"))
        }
    }

    /// `{"host","cdnURL","interval","duration","untilConverged"}`: the host inside
    /// `--allow-domain`, the CDN URL an http(s) template (default Apple's), the bounds above.
    func parseStart(_ request: Request) async throws -> ProbeConfiguration {
        let body = try await request.body.collect(upTo: 64 << 10)
        guard case .object(let object)? = try? JSONReader.parse(String(buffer: body)) else {
            throw AdminError(.badRequest, #"the body must be a JSON object {"host","cdnURL","interval","duration","untilConverged"}"#)
        }
        let known: Set = ["host", "cdnURL", "interval", "duration", "untilConverged"]
        if let unknown = object.keys.first(where: { !known.contains($0) }) {
            throw AdminError(.badRequest, "unknown key '\(unknown)': the body has \(known.sorted().joined(separator: ", "))")
        }
        guard let hostText = object["host"]?.stringValue else { throw AdminError(.badRequest, "'host' (a string) is required") }
        func number(_ key: String) throws -> Double? {
            guard let given = object[key] else { return nil }
            guard case .number(let n) = given, n.doubleValue.isFinite else {
                throw AdminError(.badRequest, "'\(key)' must be a number of seconds")
            }
            return n.doubleValue
        }
        var untilConverged = false
        if let given = object["untilConverged"] {
            guard case .bool(let flag) = given else { throw AdminError(.badRequest, "'untilConverged' must be true or false") }
            untilConverged = flag
        }
        var cdnURL: String?
        if let given = object["cdnURL"] {
            guard let text = given.stringValue else { throw AdminError(.badRequest, "'cdnURL' must be a string") }
            cdnURL = text
        }
        return try configuration(host: hostText, cdnURL: cdnURL, interval: try number("interval"), duration: try number("duration"),
                                 untilConverged: untilConverged)
    }

    /// A probe's settings from the API or the dashboard's form, checked: the host inside
    /// `--allow-domain`, the CDN URL an http(s) template of printable ASCII (default Apple's),
    /// the interval and duration within the bounds above (defaults 60 s and 3600 s).
    func configuration(host hostText: String, cdnURL: String?, interval: Double?, duration: Double?, untilConverged: Bool) throws
        -> ProbeConfiguration {
        let host = try admin.allowedHost(hostText)
        let interval = interval ?? 60
        guard interval >= Self.minimumInterval else { throw AdminError(.badRequest, "'interval' must be at least \(Self.minimumInterval) s") }
        let duration = duration ?? 3600
        guard (0...Self.maximumDuration).contains(duration) else {
            throw AdminError(.badRequest, "'duration' must be 0 to \(Int(Self.maximumDuration)) s")
        }

        let template = cdnURL ?? ProbeConfiguration.appleCDNTemplate
        guard template.hasPrefix("http://") || template.hasPrefix("https://"), template.utf8.count <= 2048,
              template.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw AdminError(.badRequest, "'cdnURL' must be an http:// or https:// URL template of printable ASCII ({host} is replaced)")
        }
        return ProbeConfiguration(host: host, cdnTemplate: template, interval: interval, duration: duration, untilConverged: untilConverged,
                                  maximumTicks: Self.maximumTicks)
    }

    func find(_ context: EdgeRequestContext) async throws -> (ProbeRun, [ProbeRecord]) {
        guard let id = context.parameters.get("id").flatMap({ Int64($0) }) else { throw AdminError(.badRequest, "the probe id must be a number") }
        guard let found = try await admin.history({ try await admin.edge.store.probeRun(id) }) else { throw AdminError(.notFound, "unknown probe \(id)") }
        return found
    }

    /// A run's state as a reader wants it: `running` while it runs here (or, when another process
    /// records it, while its observations keep coming), `interrupted` when it stopped without
    /// saying so; else how it ended.
    func state(_ run: ProbeRun) -> String {
        guard run.state == "running" else { return run.state }
        if probes.isRunning(run.id) { return "running" }
        let last = run.lastObservedAt ?? run.startedAt
        return Date().timeIntervalSince1970 - last < 2 * run.interval + 30 ? "running" : "interrupted"
    }

    func summary(_ run: ProbeRun, changes: Int) -> Summary {
        Summary(id: run.id, host: run.host, cdnURL: run.cdnURL, startedAt: Timestamp(run.startedAt, milliseconds: true),
                endedAt: Timestamp.of(run.endedAt, milliseconds: true), state: state(run), changes: changes)
    }

    /// Observations paired by tick: a tick's origin and CDN requests start together, so either may
    /// come first in time order; each pair is the next one of each source.
    static func pairs(_ records: [ProbeRecord]) -> [(origin: ProbeRecord, cdn: ProbeRecord?)] {
        var pairs: [(origin: ProbeRecord, cdn: ProbeRecord?)] = []
        var waitingCDN: ProbeRecord?
        for record in records {
            if record.source == "origin" {
                pairs.append((record, waitingCDN))
                waitingCDN = nil
            } else if let last = pairs.indices.last, pairs[last].cdn == nil {
                pairs[last].cdn = record
            } else {
                waitingCDN = record
            }
        }
        return pairs
    }
}

extension ProbeRoutes {
    /// A run in `GET /probes`.
    struct Summary: Encodable {
        let id: Int64
        let host: String
        let cdnURL: String
        let startedAt: Timestamp
        let endedAt: Timestamp?
        let state: String
        let changes: Int
    }

    /// `GET /probes`, newest first.
    struct List: Encodable {
        let probes: [Summary]
    }

    /// `POST /probes` (202, with `Location`).
    struct Started: Encodable {
        let id: Int64
    }

    struct Stopping: Encodable {
        let id: Int64
        let state: String
    }

    /// `GET /probes/{id}`: the `probe --json` object with its observations listed instead of
    /// counted, then the run's own fields.
    struct Detail: Encodable {
        let host: String
        let cdnURL: String
        let observations: [Observation]
        let converged: Bool
        let changes: [ProbeAnalysis.Report.Change]
        let id: Int64
        let startedAt: Timestamp
        let endedAt: Timestamp?
        let state: String

        init(run: ProbeRun, state: String, records: [ProbeRecord]) {
            let changes = ProbeAnalysis.changes(records)
            host = run.host
            cdnURL = run.cdnURL
            observations = ProbeRoutes.pairs(records).map(Observation.init)
            converged = ProbeAnalysis.converged(changes)
            self.changes = changes.map(ProbeAnalysis.Report.Change.init)
            id = run.id
            startedAt = Timestamp(run.startedAt, milliseconds: true)
            endedAt = Timestamp.of(run.endedAt, milliseconds: true)
            self.state = state
        }
    }

    /// One tick: a version is the first 10 hex digits of a 200's SHA-256 (what `probe` prints),
    /// null for anything else.
    struct Observation: Encodable {
        let at: Timestamp
        let originVersion: String?
        let cdnVersion: String?
        let originStatus: Int?
        let cdnStatus: Int?

        init(_ pair: (origin: ProbeRecord, cdn: ProbeRecord?)) {
            func version(_ r: ProbeRecord?) -> String? {
                guard let r, r.status == 200, let sha = r.sha256 else { return nil }
                return String(sha.prefix(10))
            }
            at = Timestamp(pair.origin.at, milliseconds: true)
            originVersion = version(pair.origin)
            cdnVersion = version(pair.cdn)
            originStatus = pair.origin.status
            cdnStatus = pair.cdn?.status
        }
    }
}
