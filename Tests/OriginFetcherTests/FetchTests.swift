import EdgeModel
import AASAEngine
import Foundation
import OriginFetcher
import TestOrigin
import Testing

/// One test origin for the suite (starting it generates a CA and certificates).
let origin: TestOrigin = try! TestOrigin()

let aasa = #"{"applinks":{"details":[{"appIDs":["ABCDE12345.com.example.app"],"components":[{"/":"/buy/*"}]}]}}"#

/// A fetcher sending `host` to the test origin, trusting its CA.
func fetcher(for hosts: [String], timeout: Double = 3, caFile: String? = origin.caFile, resolve: [String] = [],
             allowPrivate: Bool = false) -> OriginFetcher {
    OriginFetcher(configuration: FetcherConfiguration(timeout: timeout, connectTo: hosts.map(origin.connectTo),
                                                      resolve: resolve, caFile: caFile, allowPrivateOrigins: allowPrivate))
}

func fetch(_ host: String, timeout: Double = 3, validators: Validators? = nil) async throws -> FetchResult {
    let f = fetcher(for: [host], timeout: timeout)
    defer { f.shutdown() }
    return await f.fetch(try OriginHost(host), validators: validators)
}

func failure(_ result: FetchResult, sourceLocation: SourceLocation = #_sourceLocation) throws -> OriginFailure {
    try #require(result.failure, "expected a failure, got \(result.outcome)", sourceLocation: sourceLocation)
}

@Suite(.serialized) struct FetchSuccessTests {
    @Test func fetchesWithApplesRequestShape() async throws {
        try origin.serve("ok.lab.test", body: aasa,
                         headers: ["Content-Type": "application/octet-stream", "Cache-Control": "max-age=60",
                                   "Last-Modified": "Wed, 01 Jan 2025 00:00:00 GMT"], etag: "\"v1\"")
        let result = try await fetch("ok.lab.test")
        #expect(result.outcome == .fetched)
        #expect(result.isUsable)
        #expect(result.status == 200 && result.statusLine == "200 OK")
        #expect(result.body == Array(aasa.utf8))
        #expect(result.sha256 == SHA256.hex(Array(aasa.utf8)))
        #expect(result.etag == "\"v1\"")
        #expect(result.lastModified == "Wed, 01 Jan 2025 00:00:00 GMT")
        #expect(result.contentType == "application/octet-stream")  // recorded, not required
        #expect(result.cacheControl == "max-age=60")
        #expect(result.connectedIP == "127.0.0.1" && result.connectedPort == origin.httpsPort)
        #expect(result.timings.total > 0 && result.timings.tls >= result.timings.connect && result.timings.firstByte > 0)
        #expect(result.url == "https://ok.lab.test/.well-known/apple-app-site-association")
        let request = try origin.lastRequestHeaders("ok.lab.test")
        #expect(request[":request-line"] == "GET /.well-known/apple-app-site-association HTTP/1.1")
        #expect(request["user-agent"] == "AASA-Bot/1.0.0")
        #expect(request["accept"] == "application/json")
        #expect(request["host"] == "ok.lab.test")
        #expect(request["if-none-match"] == nil)
    }

    @Test func conditionalRequestGetsNotModified() async throws {
        try origin.serve("cond.lab.test", body: aasa, etag: "\"abc\"")
        let result = try await fetch("cond.lab.test", validators: Validators(etag: "\"abc\"", lastModified: "Wed, 01 Jan 2025 00:00:00 GMT"))
        #expect(result.outcome == .notModified)
        #expect(result.status == 304)
        let request = try origin.lastRequestHeaders("cond.lab.test")
        #expect(request["if-none-match"] == "\"abc\"")
        #expect(request["if-modified-since"] == "Wed, 01 Jan 2025 00:00:00 GMT")
        // A stale validator gets the full body.
        #expect(try await fetch("cond.lab.test", validators: Validators(etag: "\"old\"")).outcome == .fetched)
    }

    @Test func bodyOfExactlyTheLimitIsAccepted() async throws {
        let padding = FetcherConfiguration.maximumBodySize - #"{"pad":""}"#.utf8.count
        try origin.serve("limit.lab.test", body: #"{"pad":""# + String(repeating: "x", count: padding) + #""}"#)
        let result = try await fetch("limit.lab.test")
        #expect(result.outcome == .fetched)
        #expect(result.body.count == 131_072)
    }

    @Test func concurrentFetchesAllComplete() async throws {
        let hosts = (0..<24).map { "c\($0).lab.test" }
        for host in hosts { try origin.set(host, ["status": 200, "body": .string(aasa), "delay": 0.3]) }
        let f = fetcher(for: hosts)
        defer { f.shutdown() }
        let results = await withTaskGroup(of: FetchResult.self) { group in
            for host in hosts { group.addTask { await f.fetch(try! OriginHost(host)) } }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.count == 24)
        #expect(results.allSatisfy { $0.outcome == .fetched })
        for host in hosts { #expect(try origin.requestCount(host) == 1) }
    }

    @Test func sequentialFetchesReuseTheConnection() async throws {
        try origin.serve("reuse.lab.test", body: aasa)
        let f = fetcher(for: ["reuse.lab.test"])
        defer { f.shutdown() }
        for _ in 0..<3 { #expect(await f.fetch(try OriginHost("reuse.lab.test")).outcome == .fetched) }
        #expect(try origin.requestCount("reuse.lab.test") == 3)
        #expect(try origin.connectionCount("reuse.lab.test") == 1)
    }

    @Test func privateAddressAllowedInLabMode() async throws {
        try origin.serve("private.lab.test", body: aasa)
        let host = try OriginHost("private.lab.test:\(origin.httpsPort)")
        let f = fetcher(for: [], resolve: ["private.lab.test:\(origin.httpsPort):127.0.0.1"], allowPrivate: true)
        defer { f.shutdown() }
        #expect(await f.fetch(host).outcome == .fetched)
    }
}

@Suite(.serialized) struct FetchFailureTests {
    @Test func statusOtherThan200() async throws {
        try origin.set("missing.lab.test", ["status": 404, "body": "nope"])
        let f404 = try failure(try await fetch("missing.lab.test"))
        #expect(f404.reason == "SWCERR00101 Bad HTTP Response: 404 Not Found")
        #expect(f404.detailsJSON == #"{"status":"404 Not Found"}"#)
        #expect(f404.tryDirect == false)

        try origin.set("broken.lab.test", ["status": 500, "reason": "Oops Broken", "body": "x"])
        #expect(try failure(try await fetch("broken.lab.test")).reason == "SWCERR00101 Bad HTTP Response: 500 Oops Broken")

        try origin.set("nophrase.lab.test", ["status": 403, "reason": "", "body": "x"])
        #expect(try failure(try await fetch("nophrase.lab.test")).reason == "SWCERR00101 Bad HTTP Response: 403 Forbidden")
    }

    @Test(arguments: [(301, "Moved Permanently"), (302, "Found")])
    func redirectsAreReportedNeverFollowed(status: Int, phrase: String) async throws {
        let host = "redirect\(status).lab.test"
        try origin.set(host, ["status": .number(JSONNumber(String(status))), "reason": .string(phrase),
                              "headers": ["Location": "http://target.lab.test/.well-known/apple-app-site-association"]])
        try origin.serve("target.lab.test", body: aasa)
        let before = try origin.requestCount("target.lab.test")
        let f = try failure(try await fetch(host))
        #expect(f.reason == "SWCERR00101 Bad HTTP Response: \(status) \(phrase)")
        #expect(f.details["location"] == "http://target.lab.test/.well-known/apple-app-site-association")
        #expect(f.tryDirect == false)
        #expect(try origin.requestCount("target.lab.test") == before)
    }

    @Test(arguments: [true, false])
    func oversizeBody(withContentLength: Bool) async throws {
        let host = withContentLength ? "big-cl.lab.test" : "big-stream.lab.test"
        try origin.set(host, ["status": 200, "oversize": 200_000, "contentLength": .bool(withContentLength)])
        let f = try failure(try await fetch(host))
        #expect(f.code == .tooLarge)
        #expect(f.detailsJSON == #"{"limit":131072}"#)
        #expect(f.tryDirect == false)
    }

    @Test(arguments: [("notjson.lab.test", "<html>hello</html>"), ("emptybody.lab.test", ""), ("array.lab.test", "[1,2]")])
    func invalidJSON(host: String, body: String) async throws {
        try origin.serve(host, body: body)
        let f = try failure(try await fetch(host))
        #expect(f.code == .invalidJSON)
        #expect(f.details["cause"] != nil)
        #expect(f.tryDirect == false)
    }

    @Test func connectionClosedMidBody() async throws {
        try origin.set("midbody.lab.test", ["status": 200, "body": .string(aasa), "closeMidBody": true])
        let f = try failure(try await fetch("midbody.lab.test"))
        #expect(f.code == .connectionFailed)
        #expect(f.tryDirect)
    }

    @Test func connectionResetWithoutResponse() async throws {
        try origin.set("reset.lab.test", ["reset": true])
        #expect(try failure(try await fetch("reset.lab.test")).code == .connectionFailed)
    }

    @Test func connectionRefused() async throws {
        let closedPort = try freePort()
        let f = OriginFetcher(configuration: FetcherConfiguration(timeout: 3, connectTo: ["refused.lab.test:443:127.0.0.1:\(closedPort)"], caFile: origin.caFile))
        defer { f.shutdown() }
        let failure = try failure(await f.fetch(try OriginHost("refused.lab.test")))
        #expect(failure.code == .connectionFailed)
        #expect(failure.reason == "SWCERR00203 Connection Failed")
        #expect(failure.tryDirect)
    }

    @Test func timeoutWaitingForHeaders() async throws {
        try origin.set("slow.lab.test", ["status": 200, "body": .string(aasa), "delay": 5])
        let f = try failure(try await fetch("slow.lab.test", timeout: 1))
        #expect(f.code == .timeout)
        #expect(f.details["phase"] == "headers")
        #expect(f.tryDirect)
    }

    @Test func timeoutDuringASlowDrip() async throws {
        try origin.set("drip.lab.test", ["status": 200, "body": .string(aasa), "drip": ["bytes": 4, "interval": 0.2]])
        let f = try failure(try await fetch("drip.lab.test", timeout: 1))
        #expect(f.code == .timeout)
        #expect(f.details["phase"] == "body")
    }

    @Test func acceptAndNeverAnswer() async throws {
        try origin.set("silent.lab.test", ["neverAnswer": true])
        let f = try failure(try await fetch("silent.lab.test", timeout: 1))
        #expect(f.code == .timeout)
        #expect(f.details["phase"] == "headers")
    }

    @Test func handshakeThatNeverCompletes() async throws {
        let f = try failure(try await fetch("hang.lab.test", timeout: 1))
        #expect(f.code == .timeout)
        #expect(f.details["phase"] == "tls")
    }

    @Test(arguments: ["expired.lab.test", "wronghost.lab.test", "unknownca.lab.test"])
    func badCertificates(host: String) async throws {
        try origin.serve(host, body: aasa)
        let f = try failure(try await fetch(host))
        #expect(f.code == .tlsFailure, "\(f)")
        #expect(f.tryDirect)
        #expect(try origin.requestCount(host) == 0)
    }

    @Test func untrustedWithoutTheLabCA() async throws {
        try origin.serve("ok.lab.test", body: aasa)
        let f = fetcher(for: ["ok.lab.test"], caFile: nil)
        defer { f.shutdown() }
        #expect(try failure(await f.fetch(try OriginHost("ok.lab.test"))).code == .tlsFailure)
    }

    @Test func dnsFailure() async throws {
        let f = OriginFetcher(configuration: FetcherConfiguration(timeout: 3))
        defer { f.shutdown() }
        let failure = try failure(await f.fetch(try OriginHost("no-such-host.invalid")))
        #expect(failure.code == .dnsFailure, "\(failure)")
        #expect(failure.tryDirect)
        #expect(failure.details["cause"] != nil)
    }

    @Test func privateAddressRefusedWithoutTouchingIt() async throws {
        // --resolve (unlike --connect-to) is subject to the policy; no outside DNS involved.
        try origin.serve("private.lab.test", body: aasa)
        let before = try origin.requestCount("private.lab.test")
        let host = try OriginHost("private.lab.test:\(origin.httpsPort)")
        let f = fetcher(for: [], resolve: ["private.lab.test:\(origin.httpsPort):127.0.0.1"])
        defer { f.shutdown() }
        let failure = try failure(await f.fetch(host))
        #expect(failure.reason == "SWCERR00202 Connections to private/reserved IP addresses are not allowed")
        #expect(failure.detailsJSON == #"{"address":"127.0.0.1"}"#)
        #expect(failure.tryDirect == false)
        #expect(try origin.requestCount("private.lab.test") == before)
    }
}

/// A port nothing listens on.
func freePort() throws -> Int { try TestPostgres.freePort() }

/// A parent edge's own answers (tiers), from a stand-in parent: the test origin answering
/// `/a/v1/{host}` with what an edge would send, including what a real edge cannot be made to
/// send on demand (a 503).
@Suite(.serialized) struct ParentAnswerTests {
    static let parent = "parent.lab.test"

    func fetchFromParent(_ host: String = "child.lab.test") async throws -> FetchResult {
        let f = fetcher(for: [Self.parent])
        defer { f.shutdown() }
        return await f.fetch(try OriginHost(host), fromParent: "https://\(Self.parent)", via: "1.1 child (aasa-edge/test)")
    }

    @Test func aCopyCarriesTheParentsHeadersAndSendsVia() async throws {
        try origin.serve(Self.parent, body: aasa, headers: ["Age": "42", "X-Cache": "hit-fresh", "Via": "1.1 top (aasa-edge/test)"])
        let result = try await fetchFromParent()
        #expect(result.outcome == .fetched && result.body == Array(aasa.utf8))
        #expect(result.upstream == UpstreamHeaders(xCache: "hit-fresh", via: "1.1 top (aasa-edge/test)"))
        #expect(result.upstreamAge == 42)
        let sent = try origin.lastRequestHeaders(Self.parent)
        #expect(sent["via"] == .string("1.1 child (aasa-edge/test)"))
        #expect(sent[":request-line"] == .string("GET /a/v1/child.lab.test HTTP/1.1"))
        #expect(sent["if-none-match"] == nil, "unconditional")
    }

    @Test func theFailureFormIsTheOriginsFailureWordForWord() async throws {
        let reason = "SWCERR00301 Timeout"
        try origin.set(Self.parent, .object(JSONObject([
            JSONMember("status", 404), JSONMember("body", "Not Found\n"),
            JSONMember("headers", .object(JSONObject([
                JSONMember("Apple-Failure-Reason", .string(reason)),
                JSONMember("Apple-Failure-Details", #"{"cause":"timed out after 5 s while awaiting headers","phase":"headers"}"#),
                JSONMember("Apple-Try-Direct", "true"), JSONMember("X-Cache", "miss"), JSONMember("Age", "3"),
            ]))),
        ])))
        let result = try await fetchFromParent()
        let failure = try failure(result)
        #expect(failure.reason == reason && failure.code == .timeout && failure.tryDirect)
        #expect(failure.details["phase"] == .string("headers"))
        #expect(result.upstream?.xCache == "miss" && result.upstreamAge == 3)
    }

    @Test func a404WithoutTheFailureFormIsABadResponse() async throws {
        try origin.set(Self.parent, .object(JSONObject([JSONMember("status", 404), JSONMember("body", "no such route")])))
        #expect(try failure(try await fetchFromParent()).code == .badHTTPResponse)
        // An unknown code in the reason is not passed on either.
        try origin.set(Self.parent, .object(JSONObject([
            JSONMember("status", 404),
            JSONMember("headers", .object(JSONObject([JSONMember("Apple-Failure-Reason", "SWCERR99999 Made Up")]))),
        ])))
        #expect(try failure(try await fetchFromParent()).code == .badHTTPResponse)
    }

    @Test func the508IsALoopAndThe503IsTheParentsShortage() async throws {
        try origin.set(Self.parent, .object(JSONObject([JSONMember("status", 508), JSONMember("body", "loop")])))
        #expect(try await fetchFromParent().outcome == .loopDetected)
        try origin.set(Self.parent, .object(JSONObject([
            JSONMember("status", 503), JSONMember("headers", .object(JSONObject([JSONMember("Retry-After", "5")]))),
        ])))
        guard case .local(let problem) = try await fetchFromParent().outcome else {
            Issue.record("a parent's 503 is not the origin's failure")
            return
        }
        #expect(problem.resource == .parent && problem.cause.contains("Retry-After: 5"))
    }
}
