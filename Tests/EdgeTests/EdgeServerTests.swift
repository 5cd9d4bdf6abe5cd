import AASAEngine
import Dispatch
import Foundation
import EdgeModel
import OriginFetcher
import SnapshotStore
import TestOrigin
import Testing

let origin: TestOrigin = try! TestOrigin()

func aasaBody(_ app: String = "ABCDE12345.com.example.app", path: String = "/buy/*") -> String {
    #"{"applinks":{"details":[{"appIDs":["\#(app)"],"components":[{"/":"\#(path)"}]}]}}"#
}

func temporaryDB() -> String {
    FileManager.default.temporaryDirectory.appendingPathComponent("edge-\(UUID().uuidString)/var/aasa-edge.sqlite").path
}

/// An edge in front of the test origin for `hosts`.
func startEdge(hosts: [String], db: String = temporaryDB(), extra: [String] = []) throws -> EdgeProcess {
    try EdgeProcess(db: db, arguments: hosts.flatMap { ["--connect-to", origin.connectTo($0)] } + ["--ca-file", origin.caFile] + extra)
}

func json(_ response: TestHTTP.Response) throws -> JSONObject {
    try #require(try JSONReader.parse(response.text).objectValue, "not JSON: \(response.text)")
}

/// `count` hosts `NAME<i>.lab.test` on the test origin, each serving a valid file of about
/// `bytes` bytes (a webcredentials entry and padding).
func serveLargeFiles(count: Int, named name: String, bytes: Int) throws -> [String] {
    let padding = String(repeating: "x", count: bytes)
    let hosts = (0..<count).map { "\(name)\($0).lab.test" }
    for (i, host) in hosts.enumerated() {
        try origin.serve(host, body: #"{"webcredentials":{"apps":["ABCDE12345.com.app\#(i)"]},"pad":"\#(padding)"}"#)
    }
    return hosts
}

/// Waits (bounded) until `condition` holds.
func eventually(_ seconds: Double = 10, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if try condition() { return true }
        usleep(50_000)
    }
    return try condition()
}

@Suite(.serialized) struct ClientRouteTests {
    @Test func missThenHitThenNotModifiedAndHead() throws {
        let host = "serve.lab.test"
        let body = aasaBody()
        try origin.serve(host, body: body, headers: ["Content-Type": "application/octet-stream"])
        let edge = try startEdge(hosts: [host], extra: ["--ttl", "600"])
        defer { edge.stop() }

        let miss = try edge.get("/a/v1/\(host)")
        #expect(miss.status == 200)
        #expect(miss.text == body)
        #expect(miss["content-type"] == "application/json")
        #expect(miss["content-length"] == String(body.utf8.count))
        #expect(miss["apple-from"] == "https://serve.lab.test/.well-known/apple-app-site-association")
        #expect(miss["apple-origin-format"] == "json")
        #expect(miss["cache-control"] == "max-age=600,public")
        #expect(miss["age"] == "0")
        #expect(miss["etag"] == "\"" + SHA256.hex(Array(body.utf8)).prefix(32) + "\"")
        #expect(miss["x-cache"] == "miss")
        #expect(miss["cache-status"] == "aasa-edge; fwd=uri-miss; stored")
        #expect(miss["aasa-edge-version"] == "1")
        #expect(miss["date"] != nil)

        let hit = try edge.get("/a/v1/SERVE.lab.test?ignored=1")
        #expect(hit.status == 200 && hit.text == body)
        #expect(hit["x-cache"] == "hit-fresh")
        #expect(hit["cache-status"]?.hasPrefix("aasa-edge; hit; ttl=") == true)

        let notModified = try edge.get("/a/v1/\(host)", headers: ["If-None-Match": miss["etag"]!])
        #expect(notModified.status == 304)
        #expect(notModified.body.isEmpty)
        #expect(notModified["etag"] == miss["etag"] && notModified["x-cache"] == "hit-fresh")

        let head = try TestHTTP.request(port: edge.port, method: "HEAD", path: "/a/v1/\(host)")
        #expect(head.status == 200 && head.body.isEmpty)
        #expect(head["content-length"] == String(body.utf8.count))

        let routed = try edge.get("/.well-known/apple-app-site-association", headers: ["Host": "\(host):8080"])
        #expect(routed.status == 200 && routed.text == body)
        #expect(try edge.get("/apple-app-site-association", headers: ["Host": host]).status == 200)
        #expect(try origin.requestCount(host) == 1)
    }

    @Test func failureFormThenCachedFailure() throws {
        let host = "fail404.lab.test"
        try origin.set(host, ["status": 404])
        let edge = try startEdge(hosts: [host], extra: ["--failure-ttl", "900"])
        defer { edge.stop() }
        let first = try edge.get("/a/v1/\(host)")
        #expect(first.status == 404)
        #expect(first.text == "Not Found\n")
        #expect(first["content-type"] == "text/plain; charset=utf-8")
        #expect(first["apple-failure-reason"] == "SWCERR00101 Bad HTTP Response: 404 Not Found")
        #expect(first["apple-failure-details"] == #"{"status":"404 Not Found"}"#)
        #expect(first["apple-from"] == "https://fail404.lab.test/.well-known/apple-app-site-association")
        #expect(first["apple-try-direct"] == "false")
        #expect(first["cache-control"] == "max-age=900,public")
        #expect(first["x-cache"] == "miss")
        #expect(first["cache-status"] == "aasa-edge; fwd=uri-miss; fwd-status=404")
        let second = try edge.get("/a/v1/\(host)")
        #expect(second.status == 404)
        #expect(second["x-cache"] == "hit-fresh")
        #expect(second["cache-status"]?.hasSuffix("detail=failure") == true)
        #expect(try origin.requestCount(host) == 1)
    }

    @Test func timeoutFailureSaysTryDirect() throws {
        let host = "failslow.lab.test"
        try origin.set(host, ["status": 200, "body": .string(aasaBody()), "delay": 3])
        let edge = try startEdge(hosts: [host], extra: ["--origin-timeout", "0.5"])
        defer { edge.stop() }
        let r = try edge.get("/a/v1/\(host)")
        #expect(r.status == 404)
        #expect(r["apple-failure-reason"] == "SWCERR00301 Timeout")
        #expect(r["apple-try-direct"] == "true")
    }

    /// Every failure kind reaches the client in Apple's 404 form with the right reason and
    /// Try-Direct (the fetcher's own tests cover the mapping in detail).
    @Test(arguments: [
        ("form-301.lab.test", ["status": 301, "headers": ["Location": "https://elsewhere.test/"]] as JSONValue, "SWCERR00101 Bad HTTP Response: 301 Moved Permanently", "false"),
        ("form-big.lab.test", ["status": 200, "oversize": 200_000] as JSONValue, "SWCERR00401 Too Large", "false"),
        ("form-html.lab.test", ["status": 200, "body": "<html></html>"] as JSONValue, "SWCERR00402 Invalid JSON", "false"),
        ("form-cut.lab.test", ["status": 200, "body": "{\"applinks\":{}}", "closeMidBody": true] as JSONValue, "SWCERR00203 Connection Failed", "true"),
        ("expired.lab.test", ["status": 200, "body": "{}"] as JSONValue, "SWCERR00204 TLS Failure", "true"),
    ])
    func failureForms(host: String, behaviour: JSONValue, reason: String, tryDirect: String) throws {
        try origin.set(host, behaviour)
        let edge = try startEdge(hosts: [host])
        defer { edge.stop() }
        let r = try edge.get("/a/v1/\(host)")
        #expect(r.status == 404)
        #expect(r["apple-failure-reason"] == reason)
        #expect(r["apple-try-direct"] == tryDirect)
        #expect((try? JSONReader.parse(r["apple-failure-details"] ?? ""))?.objectValue != nil)
        #expect(r.text == "Not Found\n")
    }

    @Test func privateAddressesAreRefusedUnlessAllowed() throws {
        let host = "form-private.lab.test"
        try origin.serve(host, body: aasaBody())
        let resolve = ["--resolve", "\(host):\(origin.httpsPort):127.0.0.1", "--ca-file", origin.caFile]
        let strict = try EdgeProcess(db: temporaryDB(), arguments: resolve)
        defer { strict.stop() }
        let refused = try strict.get("/a/v1/\(host):\(origin.httpsPort)")
        #expect(refused.status == 404)
        #expect(refused["apple-failure-reason"] == "SWCERR00202 Connections to private/reserved IP addresses are not allowed")
        #expect(refused["apple-failure-details"] == #"{"address":"127.0.0.1"}"#)
        let lab = try EdgeProcess(db: temporaryDB(), arguments: resolve + ["--allow-private-origins"])
        defer { lab.stop() }
        #expect(try lab.get("/a/v1/\(host):\(origin.httpsPort)").status == 200)
    }

    @Test func staleIfErrorKeepsServingTheGoodCopy() throws {
        let host = "stale.lab.test"
        try origin.serve(host, body: aasaBody())
        let edge = try startEdge(hosts: [host], extra: ["--ttl", "1", "--failure-ttl", "60"])
        defer { edge.stop() }
        #expect(try edge.get("/a/v1/\(host)")["x-cache"] == "miss")
        try origin.set(host, ["status": 500])
        usleep(1_300_000)  // let the copy expire (TTL 1 s)
        let stale = try edge.get("/a/v1/\(host)")
        #expect(stale.status == 200)
        #expect(stale.text == aasaBody())
        #expect(stale["x-cache"] == "hit-stale")
        #expect(stale["aasa-edge-version"] == "1")
        #expect(Int(stale["age"] ?? "") ?? 0 >= 1)
        let again = try edge.get("/a/v1/\(host)")
        #expect(again["x-cache"] == "hit-stale")
        #expect(try origin.requestCount(host) == 2)  // the failure is cached: no third fetch
        let status = try json(try edge.admin("GET", "/domains/\(host)"))
        #expect(status["state"] == "failing")
        #expect(status["lastFailure"]?.objectValue?["reason"] == "SWCERR00101 Bad HTTP Response: 500 Internal Server Error")
    }

    @Test(arguments: ["127.0.0.1", "localhost", "a..b.test", "-x.lab.test", "x_y.lab.test", "lab.test.", "ex%61mple.com",
                      "xn--.lab.test:0", "a.lab.test:70000", "foo.123"])
    func badHostsAre400AndNeverFetched(host: String) throws {
        let edge = try startEdge(hosts: [])
        defer { edge.stop() }
        let r = try edge.get("/a/v1/\(host)")
        #expect(r.status == 400, "\(host)")
        #expect(r["content-type"] == "text/plain; charset=utf-8")
        #expect(r.text.hasPrefix("invalid host") && r.text.split(separator: "\n").count == 1)
    }

    @Test func allowlistRefusesOtherDomains() throws {
        let edge = try startEdge(hosts: ["in.lab.test"], extra: ["--allow-domain", "lab.test"])
        defer { edge.stop() }
        try origin.serve("in.lab.test", body: aasaBody())
        #expect(try edge.get("/a/v1/in.lab.test").status == 200)
        let refused = try edge.get("/a/v1/evillab.test")
        #expect(refused.status == 403)
        #expect(refused["x-cache"] == nil)
        #expect(try edge.admin("POST", "/domains/other.example/refetch").status == 403)
    }

    @Test func concurrentColdRequestsShareOneOriginFetch() throws {
        let host = "herd.lab.test"
        try origin.set(host, ["status": 200, "body": .string(aasaBody()), "delay": 0.5])
        let edge = try startEdge(hosts: [host])
        defer { edge.stop() }
        let count = 200
        let responses = try concurrently(Array(0..<count)) { _ in try? edge.get("/a/v1/\(host)") }
        #expect(responses.filter { $0?.status == 200 }.count == count)
        #expect(try origin.requestCount(host) == 1)
        #expect(responses.contains { $0?["cache-status"]?.hasSuffix("collapsed") == true })
    }

    @Test func restartServesWhatWasCachedWithItsTrueAge() throws {
        let host = "restart.lab.test"
        try origin.serve(host, body: aasaBody())
        let db = temporaryDB()
        let first = try startEdge(hosts: [host], db: db, extra: ["--ttl", "600"])
        #expect(try first.get("/a/v1/\(host)")["aasa-edge-version"] == "1")
        #expect(first.stop() == 0)  // SIGTERM → graceful exit 0
        usleep(1_100_000)
        let second = try startEdge(hosts: [host], db: db, extra: ["--ttl", "600"])
        defer { second.stop() }
        // Before any request loads the body, the admin view already knows the copy is fresh.
        let listed = try #require(try json(try second.admin("GET", "/domains"))["domains"]?.arrayValue?.first?.objectValue)
        #expect(listed["state"] == "fresh" && listed["version"] == 1 && listed["fetchedAt"] != .null)
        let r = try second.get("/a/v1/\(host)")
        #expect(r.status == 200)
        #expect(r["x-cache"] == "hit-fresh")
        #expect(r["aasa-edge-version"] == "1")
        #expect(Int(r["age"] ?? "") ?? 0 >= 1)
        #expect(try origin.requestCount(host) == 1)
    }
}

@Suite(.serialized) struct LedgerAndMemoryTests {
    @Test func servedEventsReachTheStoreWithClientIdentities() throws {
        let host = "ledger.lab.test"
        try origin.serve(host, body: aasaBody())
        let db = temporaryDB()
        let edge = try startEdge(hosts: [host], db: db)
        #expect(try edge.get("/a/v1/\(host)", headers: ["X-Client-ID": "device-1"]).status == 200)
        #expect(try edge.get("/a/v1/\(host)", headers: ["X-Client-ID": "device-2"]).status == 200)
        #expect(try edge.get("/a/v1/\(host)", headers: ["User-Agent": "swcd-test"]).status == 200)
        #expect(try edge.get("/a/v1/127.0.0.1").status == 400)  // rejected: not recorded
        #expect(edge.stop() == 0)  // a graceful stop writes what is buffered
        let served = try SnapshotStore(path: db).served(host: host)
        #expect(served.map(\.client) == ["device-1", "device-2", "127.0.0.1 swcd-test"])
        #expect(served.allSatisfy { $0.version == 1 })
    }

    @Test func evictedHostsAreReadBackFromTheStore() throws {
        // Twelve ~120 KB files through a 1 MB memory budget: some leave memory, none is lost.
        let hosts = try serveLargeFiles(count: 12, named: "mem", bytes: 120_000)
        let edge = try startEdge(hosts: hosts, extra: ["--memory-cache-mb", "1"])
        defer { edge.stop() }
        for host in hosts { #expect(try edge.get("/a/v1/\(host)")["x-cache"] == "miss") }
        for (i, host) in hosts.enumerated() {
            let r = try edge.get("/a/v1/\(host)")
            #expect(r.status == 200 && r["x-cache"] == "hit-fresh")
            #expect(r.text.contains("ABCDE12345.com.app\(i)\""))
            #expect(try origin.requestCount(host) == 1)
        }
    }
}

@Suite(.serialized) struct AdminRouteTests {
    @Test func tokenRequired() throws {
        let edge = try startEdge(hosts: [])
        defer { edge.stop() }
        let none = try TestHTTP.request(port: edge.port, path: "/admin/v1/domains")
        #expect(none.status == 401)
        #expect(try json(none)["error"] != nil)
        #expect(try edge.admin("GET", "/domains", token: "wrong").status == 401)
        #expect(try edge.admin("GET", "/domains").status == 200)
        #expect(try edge.admin("GET", "/domains/never.lab.test").status == 404)
        #expect(try edge.admin("POST", "/domains/never.lab.test/purge").status == 404)
        #expect(try edge.admin("GET", "/domains/127.0.0.1").status == 400)
    }

    @Test func generatedTokenIsWrittenWithMode0600AndReused() throws {
        let db = temporaryDB()
        let process = Process()
        process.executableURL = EdgeProcess.binary
        process.arguments = ["serve", "--port", "0", "--db", db]
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        let tokenFile = URL(fileURLWithPath: db).deletingLastPathComponent().appendingPathComponent("admin-token").path
        #expect(eventually { FileManager.default.fileExists(atPath: tokenFile) })
        process.terminate()
        process.waitUntilExit()
        let attributes = try FileManager.default.attributesOfItem(atPath: tokenFile)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        let token = try String(contentsOfFile: tokenFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(token.count == 64)
        let printed = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(!printed.contains(token), "the generated token was printed")
        #expect(printed.contains(tokenFile))
        // A second start reuses it.
        let again = try EdgeProcess(db: db, arguments: [], adminToken: "")
        defer { again.stop() }
        #expect(try again.admin("GET", "/domains", token: token).status == 200)
        #expect(!again.log.contains(token))
    }

    @Test func refetchUpdatedUnchangedFailed() throws {
        let host = "refetch.lab.test"
        try origin.serve(host, body: aasaBody(path: "/v1/*"))
        let edge = try startEdge(hosts: [host])
        defer { edge.stop() }
        let created = try json(try edge.admin("POST", "/domains/\(host)/refetch"))
        #expect(created["outcome"] == "updated" && created["version"] == 1 && created["previousVersion"] == .null)
        #expect(created.keys == ["domain", "outcome", "version", "previousVersion", "failure", "durationMs"])
        let same = try json(try edge.admin("POST", "/domains/\(host)/refetch"))
        #expect(same["outcome"] == "unchanged" && same["version"] == 1)
        try origin.serve(host, body: aasaBody(path: "/v2/*"))
        let updated = try json(try edge.admin("POST", "/domains/\(host)/refetch"))
        #expect(updated["outcome"] == "updated" && updated["version"] == 2 && updated["previousVersion"] == 1)
        #expect(try edge.get("/a/v1/\(host)").text == aasaBody(path: "/v2/*"))
        try origin.set(host, ["status": 503])
        let failed = try edge.admin("POST", "/domains/\(host)/refetch")
        #expect(failed.status == 200)
        let failedJSON = try json(failed)
        #expect(failedJSON["outcome"] == "failed" && failedJSON["version"] == 2)
        #expect(failedJSON["failure"]?.objectValue?["reason"] == "SWCERR00101 Bad HTTP Response: 503 Service Unavailable")
        // The good copy is still served (within stale-if-error; it is still fresh here).
        #expect(try edge.get("/a/v1/\(host)").text == aasaBody(path: "/v2/*"))
        let detail = try json(try edge.admin("GET", "/domains/\(host)"))
        #expect(detail["appIDs"] == ["ABCDE12345.com.example.app"])
        #expect(detail["version"] == 2)
    }

    /// `--event-loops N` runs exactly N threads serving connections (named by NIO), 0 one per core.
    @Test(arguments: [1, 3]) func eventLoopsSetsTheServingThreads(_ loops: Int) throws {
        let host = "loops\(loops).lab.test"
        try origin.serve(host, body: aasaBody())
        let edge = try startEdge(hosts: [host], extra: ["--event-loops", String(loops)])
        defer { edge.stop() }
        #expect(try edge.get("/a/v1/\(host)").status == 200)
        let tasks = "/proc/\(edge.pid)/task"
        let names = try FileManager.default.contentsOfDirectory(atPath: tasks).compactMap {
            try? String(contentsOfFile: "\(tasks)/\($0)/comm", encoding: .utf8)
        }
        #expect(names.filter { $0.hasPrefix("NIO-ELT") || $0.hasPrefix("NIO-SGLTN") }.count == loops, "\(names)")
    }

    @Test func hardAndSoftPurge() throws {
        let host = "purge.lab.test"
        try origin.serve(host, body: aasaBody())
        let edge = try startEdge(hosts: [host])
        defer { edge.stop() }
        _ = try edge.get("/a/v1/\(host)")
        #expect(try json(try edge.admin("POST", "/domains/\(host)/purge?soft=true"))["purge"] == "soft")
        let stale = try edge.get("/a/v1/\(host)")
        #expect(stale.status == 200 && stale["x-cache"] == "hit-stale")
        #expect(try eventually { try origin.requestCount(host) == 2 })  // one background refetch
        #expect(try eventually { try edge.get("/a/v1/\(host)")["x-cache"] == "hit-fresh" })
        #expect(try json(try edge.admin("POST", "/domains/\(host)/purge"))["purge"] == "hard")
        let miss = try edge.get("/a/v1/\(host)")
        #expect(miss["x-cache"] == "miss")
        #expect(try origin.requestCount(host) == 3)
        // Hard purge, then the origin fails: the failure form, though the snapshot stays in history.
        _ = try edge.admin("POST", "/domains/\(host)/purge")
        try origin.set(host, ["status": 404])
        #expect(try edge.get("/a/v1/\(host)").status == 404)
        #expect(try json(try edge.admin("GET", "/domains/\(host)"))["version"] == 1)
    }

    /// A hard purge that lands while a request's revalidation is at the origin (found by the soak
    /// as a rare 404 "no usable copy"): the waiting request gets the copy its 304 confirmed, and
    /// the purge still stands — the next request fetches anew.
    @Test func hardPurgeDuringARevalidation() throws {
        let host = "purge-race.lab.test"
        try origin.serve(host, body: aasaBody(), etag: "\"r1\"")
        let edge = try startEdge(hosts: [host], extra: ["--ttl", "1"])
        defer { edge.stop() }
        #expect(try edge.get("/a/v1/\(host)")["x-cache"] == "miss")
        usleep(1_200_000)  // expired: the next request revalidates
        try origin.set(host, ["status": 200, "body": .string(aasaBody()), "etag": "\"r1\"", "delay": 1])
        let answers = try concurrently([0, 1]) { i -> TestHTTP.Response? in
            if i == 0 { return try edge.get("/a/v1/\(host)") }
            usleep(400_000)  // the revalidation is at the origin now
            #expect(try edge.admin("POST", "/domains/\(host)/purge").status == 200)
            return nil
        }
        let answered = try #require(answers[0])
        #expect(answered.status == 200, "\(answered.status) \(answered["apple-failure-reason"] ?? "")")
        #expect(answered.text == aasaBody())
        try origin.set(host, ["status": 200, "body": .string(aasaBody()), "etag": "\"r1\""])
        #expect(try edge.get("/a/v1/\(host)")["x-cache"] == "miss", "the purge stands after the 304")
    }

    @Test func releaseRefetchesExactlyTheHostsNamingTheApp() throws {
        let hosts = ["rel-a.lab.test", "rel-b.lab.test", "rel-c.lab.test", "rel-d.lab.test"]
        try origin.serve(hosts[0], body: aasaBody("ABCDE12345.com.shipping.app"))
        try origin.serve(hosts[1], body: aasaBody("ABCDE12345.com.other.app"))
        try origin.serve(hosts[2], body: aasaBody("abcde12345.com.shipping.app"))
        try origin.serve(hosts[3], body: aasaBody("ABCDE12345.com.other.app"))
        let edge = try startEdge(hosts: hosts)
        defer { edge.stop() }
        for host in hosts.prefix(3) { #expect(try edge.get("/a/v1/\(host)").status == 200) }
        let before = try hosts.map(origin.requestCount)
        let response = try edge.admin("POST", "/releases", body: #"{"appIDs":["abcde12345.com.shipping.app"],"domains":["rel-d.lab.test"]}"#)
        #expect(response.status == 200)
        let object = try json(response)
        let domains = try #require(object["results"]?.arrayValue).compactMap { $0.objectValue?["domain"]?.stringValue }
        #expect(Set(domains) == ["rel-a.lab.test", "rel-c.lab.test", "rel-d.lab.test"])
        #expect(object["unchanged"] == 2 && object["updated"] == 1 && object["failed"] == 0)
        let after = try hosts.map(origin.requestCount)
        #expect(zip(before, after).map { $1 - $0 } == [1, 0, 1, 1])
        #expect(try edge.admin("POST", "/releases", body: "[1]").status == 400)
        #expect(try edge.admin("POST", "/releases", body: #"{"domains":["127.0.0.1"]}"#).status == 400)
        let listing = try #require(try json(try edge.admin("GET", "/domains"))["domains"]?.arrayValue)
        #expect(listing.count == 4)
        #expect(listing.first?.objectValue?.keys == ["domain", "state", "serving", "version", "fetchedAt", "expiresAt", "lastFailure"])
    }
}

/// A value behind a lock, for the threads of the herd test.
final class Locked<Value>: @unchecked Sendable {
    private var value: Value
    private let lock = NSLock()
    init(_ value: Value) { self.value = value }
    func withLock<T>(_ body: (inout Value) -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body(&value)
    }
}

/// Runs `body` for every element on its own thread (not `concurrentPerform`, which uses one
/// thread per core) and returns the results in order.
func concurrently<T: Sendable, R: Sendable>(_ items: [T], _ body: @escaping @Sendable (T) throws -> R) throws -> [R] {
    let results = Locked<[Int: Result<R, Error>]>([:])
    let group = DispatchGroup()
    for (i, item) in items.enumerated() {
        group.enter()
        Thread {
            let r = Result { try body(item) }
            results.withLock { $0[i] = r }
            group.leave()
        }.start()
    }
    group.wait()
    let collected = results.withLock { $0 }
    return try (0..<items.count).map { try collected[$0]!.get() }
}
