import AASAEngine
import Foundation
import TestOrigin
import Testing
import TestSupport

/// Random interleavings of requests, origin changes and failures, 304s, hard and soft purges,
/// refetches, releases, purges landing while a revalidation is in flight, and restarts, run
/// against the real binary and compared at every step with a small reference model of the
/// contract: what each request is served (status, version, `X-Cache`) and, after every restart,
/// what the store kept (the admin view's `state` and `version`).
///
/// The edge runs with `--ttl 0` and `--failure-ttl 0`, so every request asks the origin (a
/// conditional request when a copy is held) and timing never decides an outcome.
@Suite(.serialized) struct CacheModelTests {
    /// The contract, reduced to one host.
    struct Model {
        enum Purge: String { case none, soft, hard }
        /// The origin's content generation, nil while it fails.
        var origin: Int? = 0
        /// The generation the origin serves when it recovers.
        var generation = 0
        /// The stored current version and the generation it holds.
        var copy: (version: Int, generation: Int)?
        var versions: [Int: Int] = [:]  // generation -> version
        var purge = Purge.none
        var lastFetchFailed = false
        /// The store has a row for the host (any fetch, even a failed one, makes it).
        var known = false

        struct Answer: Equatable, CustomStringConvertible {
            let status: Int
            let version: Int?
            let xCache: String?
            var description: String { "\(status) v\(version.map(String.init) ?? "-") \(xCache ?? "-")" }
        }

        /// A fetch's effect on the copy; whether it answered 304 (the copy confirmed).
        mutating func fetch(conditional: Bool) -> (ok: Bool, notModified: Bool) {
            known = true
            guard let g = origin else {
                lastFetchFailed = true
                return (false, false)
            }
            lastFetchFailed = false
            if conditional, let copy, copy.generation == g {
                purge = .none
                return (true, true)
            }
            let version = versions[g] ?? ((versions.values.max() ?? 0) + 1)
            versions[g] = version
            copy = (version, g)
            purge = .none
            return (true, false)
        }

        /// A client request: what it is served, and whether a background refresh follows.
        mutating func request() -> (Answer, refresh: Bool) {
            if let copy, purge == .soft {
                return (Answer(status: 200, version: copy.version, xCache: "hit-stale"), true)
            }
            let held = purge == .hard ? nil : copy
            let (ok, notModified) = fetch(conditional: held != nil)
            if ok, let copy {
                return (Answer(status: 200, version: copy.version, xCache: notModified ? "hit-fresh" : "miss"), false)
            }
            if let held { return (Answer(status: 200, version: held.version, xCache: "hit-stale"), false) }
            return (Answer(status: 404, version: nil, xCache: "miss"), false)
        }

        /// Refetch, release or a background refresh: a fetch, conditional when a copy is held.
        mutating func refetch() { _ = fetch(conditional: copy != nil && purge != .hard) }

        /// The admin view's state.
        var state: String {
            if purge != .none { return "purged" }
            return lastFetchFailed ? "failing" : "stale"
        }
    }

    static let app = "ABCDE12345.com.example.model"

    static func body(_ generation: Int) -> String { aasaBody(app, path: "/g\(generation)/*") }

    /// Runs `steps` random steps on a fresh host and store; returns the steps taken, for messages.
    func run(seed: UInt64, steps: Int) throws {
        let host = "model\(seed).lab.test"
        let etag = { (g: Int) in "\"g\(g)\"" }
        var model = Model()
        var rng = SeededGenerator(seed: seed)
        func setOrigin(delay: Double = 0) throws {
            if let g = model.origin {
                try origin.set(host, ["status": 200, "body": .string(Self.body(g)), "etag": .string(etag(g)), "delay": .number(JSONNumber(String(delay)))])
            } else {
                try origin.set(host, ["status": 503])
            }
        }
        try setOrigin()
        let db = temporaryDB()
        let flags = ["--ttl", "0", "--failure-ttl", "0"]
        var edge = try startEdge(hosts: [host], db: db, extra: flags)
        defer { edge.stop() }
        var trail: [String] = []

        func fetchCount() throws -> Int { try json(try edge.admin("GET", "/domains/\(host)/fetches?limit=1000"))["fetches"]?.arrayValue?.count ?? 0 }
        func checkStore(_ when: String) throws {
            let response = try edge.admin("GET", "/domains/\(host)")
            guard model.known else {
                #expect(response.status == 404, "seed \(seed) \(when): the edge knows a host the model does not; \(trail)")
                return
            }
            let status = try json(response)
            #expect(status["state"]?.stringValue == model.state, "seed \(seed) \(when): state \(status["state"] ?? .null), model \(model.state); \(trail)")
            #expect(status["version"]?.numberInt == model.copy?.version, "seed \(seed) \(when): version \(status["version"] ?? .null), model \(model.copy?.version as Int?); \(trail)")
        }

        for _ in 0..<steps {
            let roll = Int.random(in: 0..<100, using: &rng)
            switch roll {
            case 0..<35:
                let before = try fetchCount()
                let (expected, refresh) = model.request()
                let r = try edge.get("/a/v1/\(host)")
                let answer = Model.Answer(status: r.status, version: r["aasa-edge-version"].flatMap { Int($0) }, xCache: r["x-cache"])
                trail.append("request→\(answer)")
                #expect(answer == expected, "seed \(seed): served \(answer), model \(expected); \(trail)")
                if refresh {
                    // The soft purge's background refresh: wait for it, then apply it to the model.
                    #expect(eventually(5) { ((try? fetchCount()) ?? 0) > before }, "seed \(seed): no background refresh; \(trail)")
                    usleep(50_000)
                    model.refetch()
                }
            case 35..<47:
                model.generation += 1
                if model.origin != nil { model.origin = model.generation }
                try setOrigin()
                trail.append("origin g\(model.generation)")
            case 47..<55:
                model.origin = model.origin == nil ? model.generation : nil
                try setOrigin()
                trail.append(model.origin == nil ? "origin fails" : "origin recovers")
            case 55..<62, 62..<68:
                let soft = roll >= 62
                let answer = try edge.admin("POST", "/domains/\(host)/purge" + (soft ? "?soft=true" : ""))
                #expect(answer.status == (model.known ? 200 : 404), "seed \(seed): purge answered \(answer.status); \(trail)")
                // A soft purge marks a held copy stale; it does not undo a hard purge.
                if model.known { model.purge = soft && model.purge != .hard ? .soft : .hard }
                trail.append(soft ? "soft purge" : "hard purge")
            case 68..<76:
                _ = try edge.admin("POST", "/domains/\(host)/refetch")
                model.refetch()
                trail.append("refetch")
            case 76..<82:
                let answer = try json(try edge.admin("POST", "/releases", body: #"{"appIDs":["\#(Self.app)"]}"#))
                let refetched = (answer["results"]?.arrayValue ?? []).count
                // A release refetches the host when its stored copy names the app.
                #expect(refetched == (model.copy != nil ? 1 : 0), "seed \(seed): release refetched \(refetched); \(trail)")
                if model.copy != nil { model.refetch() }
                trail.append("release")
            case 82..<90:
                // A purge lands while a conditional revalidation is in flight (answered 304).
                guard let copy = model.copy, model.purge == .none, model.origin == copy.generation else { continue }
                let soft = Bool.random(using: &rng)
                try setOrigin(delay: 0.6)
                let current = edge
                let refetch = Thread { _ = try? current.admin("POST", "/domains/\(host)/refetch") }
                refetch.start()
                usleep(200_000)
                #expect(try edge.admin("POST", "/domains/\(host)/purge" + (soft ? "?soft=true" : "")).status == 200)
                usleep(700_000)
                try setOrigin()
                model.purge = soft ? .soft : .hard
                model.lastFetchFailed = false
                trail.append(soft ? "soft purge during 304" : "hard purge during 304")
            default:
                edge.stop()
                edge = try startEdge(hosts: [host], db: db, extra: flags)
                trail.append("restart")
                try checkStore("after a restart")
            }
        }
        edge.stop()
        edge = try startEdge(hosts: [host], db: db, extra: flags)
        try checkStore("after the final restart")
    }

    @Test(arguments: [UInt64(1), 2, 3, 4, 5, 6])
    func randomInterleavingsMatchTheModel(seed: UInt64) throws {
        try run(seed: seed, steps: 45)
    }
}
