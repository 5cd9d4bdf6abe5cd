import AASAEngine
import CachePolicy
import EdgeCore
import EdgeModel
import PropagationAnalysis
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import Logging
import NIOCore
import NIOPosix

/// The HTTP face of the edge: Apple's CDN routes, the admin API, health. It translates requests
/// and `EdgeReply` values into responses; every decision is made by `Edge` and `CachePolicy`.
public enum EdgeServer {
    /// - Parameters:
    ///   - metricsText: renders the metrics registry in Prometheus text format.
    ///   - clientTimeout: seconds a client connection may go without sending a complete request
    ///     head (slowloris, idle keep-alive) before it is closed; nil: never.
    ///   - eventLoops: threads serving connections; nil: NIO's shared group, one per core.
    ///   - maxConnections: open client connections; beyond it new ones are closed at once.
    ///   - tls: PEM files of the certificate chain and private key: serve HTTPS instead of HTTP.
    public static func application(edge: Edge, adminToken: String, host: String, port: Int, clientTimeout: Double? = 60,
                                   eventLoops: Int? = nil, maxConnections: Int = 10_000,
                                   tls: (certificate: String, key: String)? = nil, probes: ProbeRunner? = nil, logger: Logger,
                                   metricsText: @escaping @Sendable () -> [UInt8],
                                   onListening: @escaping @Sendable (Int) -> Void) throws -> some ApplicationProtocol {
        let router = Router(context: EdgeRequestContext.self)
        router.add(middleware: RequireHost())
        let client = ClientRoutes(edge: edge)
        let hitCache = HitResponseCache(budget: edge.configuration.prebuiltBudgetBytes)
        let idle = clientTimeout.map { TimeAmount.nanoseconds(Int64($0 * 1e9)) }
        let connections = ConnectionLimit(maximum: maxConnections)
        // HEAD is registered explicitly: the router does not derive it for wildcard routes.
        router.get("/a/v1/**") { request, context in await client.cdn(request, context) }
        router.head("/a/v1/**") { request, context in await client.cdn(request, context).createHeadResponse() }
        for path in ["/.well-known/apple-app-site-association", "/apple-app-site-association"] {
            router.get(RouterPath(path)) { request, context in await client.hostRouted(request, context) }
            router.head(RouterPath(path)) { request, context in await client.hostRouted(request, context).createHeadResponse() }
        }
        router.get("/healthz") { _, _ in Response.text(.ok, "ok\n") }
        router.get("/readyz") { _, _ in
            // A shared store may be down while the edge serves on from memory: ready, and says so.
            if edge.isShared {
                let available = edge.storeAvailable
                return Response.json(.ok, AdminJSON.StoreHealth(available: available))
            }
            do {
                try await edge.checkReady()
                return Response.text(.ok, "ready\n")
            } catch {
                return Response.text(.serviceUnavailable, "not ready: the store is not writable: \(error)\n")
            }
        }
        router.get("/metrics") { _, _ in
            await edge.updateGauges()
            edge.metrics.memory(prebuilt: hitCache.builtBytes)
            return Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                            body: .init(byteBuffer: ByteBuffer(bytes: metricsText())))
        }
        let admin = AdminRoutes(edge: edge, token: adminToken)
        let adminGroup = router.group("/admin/v1")
        admin.register(on: adminGroup)
        if let probes { ProbeRoutes(admin: admin, probes: probes).register(on: adminGroup) }
        DashboardRoutes(edge: edge, token: adminToken, secure: tls != nil, probes: probes, metricsText: metricsText).register(on: router)
        let http1 = HTTPServerBuilder.http1(configuration: .init(additionalChannelHandlers: [
            RequestTracker(edge: edge, cache: hitCache, clientTimeout: idle, limit: connections),
        ]))
        var server = http1
        if let tls {
            let configuration = TLSConfiguration.makeServerConfiguration(
                certificateChain: try NIOSSLCertificate.fromPEMFile(tls.certificate).map { .certificate($0) },
                privateKey: .privateKey(try NIOSSLPrivateKey(file: tls.key, format: .pem)))
            server = try .tls(http1, tlsConfiguration: configuration)
        }
        return Application(
            router: router,
            server: server,
            configuration: ApplicationConfiguration(address: .hostname(host, port: port), backlog: 2048),
            onServerRunning: { channel in onListening(channel.localAddress?.port ?? port) },
            // A group of its own lives as long as the process (the server runs until exit).
            eventLoopGroupProvider: eventLoops.map { .shared(MultiThreadedEventLoopGroup(numberOfThreads: $0)) } ?? .singleton,
            logger: logger
        )
    }
}

struct ClientRoutes: Sendable {
    let edge: Edge

    /// `GET /a/v1/{host}`: the host is the raw request target after the prefix, up to a query
    /// string (ignored). Not the parsed URI path: that would drop a `#fragment`, which has no
    /// place in a request target, and make `a.test#x` look like `a.test`.
    func cdn(_ request: Request, _ context: EdgeRequestContext) async -> Response {
        let target = request.head.path ?? ""
        let raw = String(target.dropFirst("/a/v1/".count).prefix { $0 != "?" })
        let query = target.firstIndex(of: "?").map { target[target.index(after: $0)...] } ?? ""
        return await answer(rawHost: raw, request: request, context: context, bypass: Self.isBypass(query: query))
    }

    /// Whether a `Via` value has an entry by `node` (`1.1 NODE (comment)`, comma-separated).
    static func names(via: String, node: String) -> Bool {
        via.split(separator: ",").contains { entry in
            let parts = entry.split(separator: " ", omittingEmptySubsequences: true)
            return parts.count >= 2 && parts[1] == node
        }
    }

    /// `mode=developer`, `managed` or `developer+managed` (case-insensitive, compared after
    /// percent-decoding only: `+` stays `+`) among the query's parameters: the modes that bypass
    /// Apple's CDN. Any other query is ignored, as before.
    static func isBypass(query: Substring) -> Bool {
        query.split(separator: "&").contains { item in
            guard let equals = item.firstIndex(of: "="), item[..<equals] == "mode" else { return false }
            let value = String(item[item.index(after: equals)...]).removingPercentEncoding?.lowercased()
            return ["developer", "managed", "developer+managed"].contains(value ?? "")
        }
    }

    /// `/.well-known/apple-app-site-association` and `/apple-app-site-association`: the Host header
    /// without its port names the host.
    func hostRouted(_ request: Request, _ context: EdgeRequestContext) async -> Response {
        guard request.headers[.secondHost] == nil else {
            edge.metrics.request(.rejected)
            return .text(.badRequest, "invalid host: more than one Host header\n")
        }
        guard let name = Self.hostName(fromAuthority: Substring(request.head.authority ?? "")) else {
            edge.metrics.request(.rejected)
            return .text(.badRequest, "invalid host: the Host header's port is not one number from 1 to 65535\n")
        }
        let authority = String(name)
        return await answer(rawHost: authority, request: request, context: context)
    }

    /// The name in a Host header, without the port (the edge's own listening port, not the
    /// origin's); nil when a port is there but is not 1–65535 (`a.test:0`, `a.test:443:443`).
    static func hostName(fromAuthority authority: Substring) -> Substring? {
        guard let colon = authority.lastIndex(of: ":"), !authority.hasSuffix("]") else { return authority }
        guard OriginHost.port(authority[authority.index(after: colon)...]) != nil else { return nil }
        let name = authority[..<colon]
        return name.contains(":") ? nil : name
    }

    /// The ledger's client identity (`ClientIdentity`): `X-Client-ID`, else address + User-Agent.
    static func client(_ request: Request, _ context: EdgeRequestContext) -> String {
        ClientIdentity.make(clientID: request.headers[.clientID]?.utf8, address: context.remoteAddress?.ipAddress ?? "unknown",
                            userAgent: (request.headers[.userAgent] ?? "").utf8)
    }

    /// Why a client request names no host this edge serves: `400` or `403`, one line.
    struct Rejection: Error {
        let status: HTTPResponse.Status
        let line: String
    }

    /// The one decision on a requested host, for the router and the hit fast path alike: it must
    /// parse as a DNS name (the contract's grammar) and be inside `--allow-domain`.
    static func resolve(_ raw: String, configuration: EdgeConfiguration) -> Result<OriginHost, Rejection> {
        let host: OriginHost
        do {
            host = try OriginHost(raw)
        } catch {
            return .failure(Rejection(status: .badRequest, line: "invalid host: \(error.reason)"))
        }
        guard configuration.isAllowed(host) else {
            return .failure(Rejection(status: .forbidden, line: "domain not allowed by this edge: \(host.name)"))
        }
        return .success(host)
    }

    private func answer(rawHost: String, request: Request, context: EdgeRequestContext, bypass: Bool = false) async -> Response {
        let host: OriginHost
        switch Self.resolve(rawHost, configuration: edge.configuration) {
        case .success(let resolved):
            host = resolved
        case .failure(let rejection):
            edge.metrics.request(.rejected)
            return .text(rejection.status, rejection.line + "\n")
        }
        let via = request.headers[.via]
        let reply: EdgeReply
        if let via, Self.names(via: via, node: edge.configuration.node) {
            reply = .loopDetected(upstreamVia: nil)
        } else {
            reply = bypass ? await edge.bypass(host) : await edge.serve(host, client: Self.client(request, context), via: via)
        }
        edge.metrics.request(reply.outcome)
        return Self.response(reply, host: host, request: request, configuration: edge.configuration)
    }

    static func response(_ reply: EdgeReply, host: OriginHost, request: Request, configuration: EdgeConfiguration) -> Response {
        let (head, body) = parts(reply, host: host, ifNoneMatch: request.headers[.ifNoneMatch], configuration: configuration)
        return Response(status: head.status, headers: head.headerFields, body: body.map { .init(byteBuffer: $0) } ?? .init())
    }

    /// Whether an `If-None-Match` value names `etag` (or is `*`).
    static func condition(_ ifNoneMatch: String, matches etag: String) -> Bool {
        ifNoneMatch.split(separator: ",").contains { item in
            let tag = item.trimmingCharacters(in: .whitespaces)
            return tag == etag || tag == "*"
        }
    }

    /// The response to a client request, as a head and a body: shared by the router and the hit
    /// fast path so that both answer byte for byte alike.
    static func parts(_ reply: EdgeReply, host: OriginHost, ifNoneMatch: String?, configuration: EdgeConfiguration) -> (HTTPResponse, ByteBuffer?) {
        let cache = configuration.cache
        var headers: HTTPFields = [:]
        headers.reserveCapacity(15)
        headers[.date] = HTTPDate.now()
        headers[.appleFrom] = host.originURL
        headers[.via] = configuration.via
        /// Behind a parent edge, its entries come first: one per tier, this edge's last.
        func carryOn(_ upstream: UpstreamHeaders?, _ outcome: CacheOutcome) {
            if let via = upstream?.via, !via.isEmpty { headers[.via] = via + ", " + configuration.via }
            guard let xCache = outcome.xCache else { return }
            if let above = upstream?.xCache, !above.isEmpty {
                headers[.xCache] = above + ", " + xCache
            } else {
                headers[.xCache] = xCache
            }
        }
        switch reply {
        case .copy(let snapshot, let age, let outcome, let cacheStatus):
            headers[.appleOriginFormat] = "json"
            headers[.cacheControl] = outcome == .bypass ? "no-store" : "max-age=\(Int(cache.ttl)),public"
            headers[.age] = String(age)
            headers[.eTag] = snapshot.etag
            carryOn(outcome == .bypass ? nil : snapshot.upstream, outcome)
            headers[.cacheStatus] = cacheStatus
            if outcome != .bypass { headers[.edgeVersion] = String(snapshot.version) }  // a bypass stores no version
            if let condition = ifNoneMatch, Self.condition(condition, matches: snapshot.etag) {
                return (HTTPResponse(status: .notModified, headerFields: headers), nil)
            }
            headers[.contentType] = "application/json"
            return (HTTPResponse(status: .ok, headerFields: headers), ByteBuffer(bytes: snapshot.body))
        case .failure(let failure, let age, let outcome, let cacheStatus):
            headers[.contentType] = "text/plain; charset=utf-8"
            headers[.appleFailureReason] = failure.reason
            headers[.appleFailureDetails] = failure.details
            headers[.appleTryDirect] = failure.tryDirect ? "true" : "false"
            headers[.cacheControl] = outcome == .bypass ? "no-store" : "max-age=\(Int(cache.failureTTL)),public"
            headers[.age] = String(age)
            carryOn(outcome == .bypass ? nil : failure.upstream, outcome)
            headers[.cacheStatus] = cacheStatus
            return (HTTPResponse(status: .notFound, headerFields: headers), ByteBuffer(string: "Not Found\n"))
        case .unavailable(_, let detail, let retryAfter):
            headers[.contentType] = "text/plain; charset=utf-8"
            headers[.retryAfter] = String(retryAfter)
            headers[.cacheControl] = "no-store"
            headers[.cacheStatus] = CacheOutcome.unavailable.cacheStatus(ttl: 0)
            return (HTTPResponse(status: .serviceUnavailable, headerFields: headers), ByteBuffer(string: "service unavailable: \(detail)\n"))
        case .loopDetected(let upstreamVia):
            headers[.contentType] = "text/plain; charset=utf-8"
            headers[.cacheControl] = "no-store"
            if let upstreamVia, !upstreamVia.isEmpty { headers[.via] = upstreamVia + ", " + configuration.via }
            let line = upstreamVia == nil ? "loop detected: this request already passed through \(configuration.node)\n"
                : "loop detected: the parent edge saw this request come round again (check each tier's --parent)\n"
            return (HTTPResponse(status: .init(code: 508, reasonPhrase: "Loop Detected"), headerFields: headers), ByteBuffer(string: line))
        }
    }
}

struct AdminRoutes: Sendable {
    let edge: Edge
    let token: String

    func register(on group: RouterGroup<EdgeRequestContext>) {
        group.get("/domains") { request, _ in
            try authorize(request)
            let query = request.uri.queryParameters
            let given = query.get("limit")
            guard let limit = given.map({ Int($0) }) ?? 1000, (1...10_000).contains(limit) else {
                throw AdminError(.badRequest, "limit must be a number from 1 to 10000")
            }
            let state = query.get("state")
            if let state, !["fresh", "stale", "failing", "purged"].contains(state) {
                throw AdminError(.badRequest, "state must be fresh, stale, failing or purged")
            }
            let page = await edge.domainPage(limit: limit, after: query.get("after"), state: state,
                                       query: query.get("q").map { String($0.prefix(256)).lowercased() })
            return Response.json(.ok, AdminJSON.DomainList(domains: page.domains.map(AdminJSON.Domain.init), next: page.next))
        }
        group.get("/nodes") { request, _ in
            try authorize(request)
            let nodes = try await history { try await edge.nodes() }
            return Response.json(.ok, AdminJSON.Nodes(nodes))
        }
        group.get("/domains/:host") { request, context in
            try authorize(request)
            let host = try parseHost(context.parameters.get("host") ?? "")
            guard let status = await edge.domain(host) else { throw AdminError(.notFound, "unknown host \(host)") }
            return Response.json(.ok, AdminJSON.DomainDetail(status))
        }
        group.post("/domains/:host/refetch") { request, context in
            try authorize(request)
            try requireStore()
            let host = try allowedHost(context.parameters.get("host") ?? "")
            return Response.json(.ok, AdminJSON.Refetch(await edge.refetch(host)))
        }
        group.post("/domains/:host/purge") { request, context in
            try authorize(request)
            try requireStore()
            let host = try parseHost(context.parameters.get("host") ?? "")
            let softText = request.uri.queryParameters.get("soft") ?? "false"
            guard ["true", "1", "false", "0"].contains(softText) else { throw AdminError(.badRequest, "soft must be true, false, 1 or 0") }
            let soft = softText == "true" || softText == "1"
            guard await edge.purge(host, soft: soft) != nil else { throw AdminError(.notFound, "unknown host \(host)") }
            return Response.json(.ok, AdminJSON.Purge(domain: host.description, soft: soft))
        }
        group.get("/domains/:host/snapshots") { request, context in
            try authorize(request)
            let host = try parseHost(context.parameters.get("host") ?? "")
            return Response.json(.ok, try await history { try await HistoryViews.snapshots(edge.store, host: host.description) })
        }
        group.get("/domains/:host/snapshots/:version") { request, context in
            try authorize(request)
            let host = try parseHost(context.parameters.get("host") ?? "")
            guard let version = context.parameters.get("version").flatMap({ Int($0) }) else {
                throw AdminError(.badRequest, "the version must be a number")
            }
            let bytes = try await history { try await HistoryViews.snapshotBytes(edge.store, host: host.description, version: version) }
            return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
        }
        group.get("/domains/:host/diff") { request, context in
            try authorize(request)
            let host = try parseHost(context.parameters.get("host") ?? "")
            let query = request.uri.queryParameters
            var from = query.get("from").flatMap { Int($0) }
            var to = query.get("to").flatMap { Int($0) }
            if (query.get("from") != nil && from == nil) || (query.get("to") != nil && to == nil) {
                throw AdminError(.badRequest, "from and to must be version numbers")
            }
            if from == nil || to == nil {
                // Without both, compare the two newest versions.
                guard try await history({ try await edge.store.host(host.description) }) != nil else { throw AdminError(.notFound, "unknown host \(host)") }
                let versions = try await history { try await edge.store.versions(host: host.description) }
                guard versions.count >= 2 else {
                    throw AdminError(.notFound, "\(host) has fewer than two versions: give from and to")
                }
                to = to ?? versions.last
                from = from ?? versions.dropLast().last
            }
            let diff = try await history { try await HistoryViews.diff(edge.store, host: host.description, from: from!, to: to!) }
            return Response.json(.ok, diff.json)
        }
        group.get("/domains/:host/fetches") { request, context in
            try authorize(request)
            let host = try parseHost(context.parameters.get("host") ?? "")
            let given = request.uri.queryParameters.get("limit")
            guard let limit = given.map({ Int($0) }) ?? 50, (1...1000).contains(limit) else {
                throw AdminError(.badRequest, "limit must be a number from 1 to 1000")
            }
            return Response.json(.ok, try await history { try await HistoryViews.fetches(edge.store, host: host.description, limit: limit) })
        }
        group.get("/domains/:host/propagation") { request, context in
            try authorize(request)
            let host = try parseHost(context.parameters.get("host") ?? "")
            guard let ledger = try await history({ try await edge.propagation(host) }) else { throw AdminError(.notFound, "unknown host \(host)") }
            return Response.json(.ok, ledger)
        }
        group.post("/releases") { request, context in
            try authorize(request)
            try requireStore()
            let body = try await request.body.collect(upTo: 1 << 20)
            guard case .object(let object)? = try? JSONReader.parse(String(buffer: body)) else {
                throw AdminError(.badRequest, "the body must be a JSON object {\"appIDs\":[…],\"domains\":[…]}")
            }
            if let unknown = object.keys.first(where: { $0 != "appIDs" && $0 != "domains" }) {
                throw AdminError(.badRequest, "unknown key '\(unknown)': the body has appIDs and domains only")
            }
            func strings(_ key: String) throws -> [String] {
                guard let value = object[key] else { return [] }
                guard let list = value.arrayValue, list.allSatisfy({ $0.stringValue != nil }) else {
                    throw AdminError(.badRequest, "'\(key)' must be an array of strings")
                }
                return list.compactMap(\.stringValue)
            }
            let appIDs = try strings("appIDs")
            let hosts = try strings("domains").map(allowedHost)
            let (results, skipped) = await edge.release(appIDs: appIDs, hosts: hosts)
            return Response.json(.ok, AdminJSON.Release(results: results, skipped: skipped))
        }
    }

    /// Runs a store read (a history view, probe runs), mapping its problems to admin errors.
    func history<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let problem as HistoryViews.Problem {
            switch problem {
            case .unknownHost, .unknownVersion: throw AdminError(.notFound, problem.description)
            case .unreadableVersion: throw AdminError(.badRequest, problem.description)
            }
        } catch {
            throw AdminError(.internalServerError, "the store could not be read: \(error)")
        }
    }

    /// Admin writes need the store: while a shared store is unreachable they answer `503`.
    func requireStore() throws {
        guard edge.storeAvailable else { throw AdminError(.serviceUnavailable, "the shared store is unavailable; try again once it is back") }
    }

    /// `Authorization: Bearer <token>` (the scheme in any case, RFC 9110 §11.1), compared in
    /// constant time.
    func authorize(_ request: Request) throws {
        guard Self.constantTimeEqual(Self.bearerToken(request.headers[.authorization] ?? ""), Array(token.utf8)) else {
            throw AdminError(.unauthorized, "missing or invalid bearer token")
        }
    }

    /// The credentials of a `Bearer` Authorization value, or nothing.
    static func bearerToken(_ header: String) -> [UInt8] {
        let bytes = Array(header.utf8)
        guard bytes.count > 7, String(decoding: bytes[0..<6], as: UTF8.self).lowercased() == "bearer", bytes[6] == UInt8(ascii: " ") else { return [] }
        return Array(bytes[7...].drop { $0 == UInt8(ascii: " ") })
    }

    /// Equal bytes, in time that depends only on the expected length.
    static func constantTimeEqual(_ presented: [UInt8], _ expected: [UInt8]) -> Bool {
        var difference = UInt8(presented.count == expected.count ? 0 : 1)
        for i in 0..<expected.count { difference |= expected[i] ^ (i < presented.count ? presented[i] : 0) }
        return difference == 0
    }

    /// The `{host}` path segment, percent-decoded (clients encode the port's ':' as %3A).
    func parseHost(_ segment: String) throws -> OriginHost {
        let text = segment.removingPercentEncoding ?? segment
        do { return try OriginHost(text) } catch { throw AdminError(.badRequest, "invalid host '\(text)': \(error.reason)") }
    }

    func allowedHost(_ text: String) throws -> OriginHost {
        let host = try parseHost(text)
        guard edge.configuration.isAllowed(host) else { throw AdminError(.forbidden, "domain not allowed by this edge: \(host.name)") }
        return host
    }
}

/// A request without `Host` (nor an absolute-form target naming the authority) is answered `400`
/// on every route (RFC 9112 §3.2: the server must reject it).
struct RequireHost: RouterMiddleware {
    func handle(_ request: Request, context: EdgeRequestContext,
                next: (Request, EdgeRequestContext) async throws -> Response) async throws -> Response {
        guard let authority = request.head.authority, !authority.isEmpty else {
            return .text(.badRequest, "a request needs a Host header\n")
        }
        return try await next(request, context)
    }
}

/// The request context: Hummingbird's, plus the client's address.
public struct EdgeRequestContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let remoteAddress: SocketAddress?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
    }
}

/// An admin error: JSON `{"error": "…"}` with its status.
struct AdminError: HTTPResponseError {
    let status: HTTPResponse.Status
    let message: String
    init(_ status: HTTPResponse.Status, _ message: String) {
        self.status = status
        self.message = message
    }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        var response = Response.json(status, AdminJSON.Problem(message))
        if status == .unauthorized { response.headers[.wwwAuthenticate] = "Bearer" }
        return response
    }
}

extension Response {
    static func text(_ status: HTTPResponse.Status, _ text: String) -> Response {
        Response(status: status, headers: [.contentType: "text/plain; charset=utf-8"], body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    /// `value` as compact JSON (`JSONValueEncoder`: members in declaration order, absent ones `null`).
    static func json(_ status: HTTPResponse.Status, _ value: some Encodable) -> Response {
        let text: String
        do {
            text = try JSONValueEncoder().string(value)
        } catch {
            // Only a non-finite number fails to encode; no body built here carries one.
            return .text(.internalServerError, "the answer could not be written as JSON: \(error)")
        }
        return Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: text + "\n")))
    }
}

/// Header names of Apple's CDN and of the edge, parsed once rather than per response.
extension HTTPField.Name {
    /// The first `Host` becomes the request's authority; any further one stays a field (RFC 9112
    /// §3.2: a request with more than one Host is answered 400).
    static let secondHost = Self("Host")!
    static let clientID = Self("X-Client-ID")!
    static let appleFrom = Self("Apple-From")!
    static let appleOriginFormat = Self("Apple-Origin-Format")!
    static let xCache = Self("X-Cache")!
    static let cacheStatus = Self("Cache-Status")!
    static let edgeVersion = Self("AASA-Edge-Version")!
    static let appleFailureReason = Self("Apple-Failure-Reason")!
    static let appleFailureDetails = Self("Apple-Failure-Details")!
    static let appleTryDirect = Self("Apple-Try-Direct")!
}

/// The `Date` header value, formatted once per second.
enum HTTPDate {
    private static let cache = NSLock()
    nonisolated(unsafe) private static var formattedSecond = 0
    nonisolated(unsafe) private static var text = ""

    /// The current Unix second, as `now()` formats it.
    static func second() -> Int {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME_COARSE, &spec)
        return spec.tv_sec
    }

    static func now() -> String {
        let now = second()
        cache.lock()
        defer { cache.unlock() }
        if now != formattedSecond {
            formattedSecond = now
            text = format(now)
        }
        return text
    }

    static func format(_ unix: Int) -> String {
        var t = time_t(unix)
        var parts = tm()
        gmtime_r(&t, &parts)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        return String(format: "%@, %02d %@ %04d %02d:%02d:%02d GMT", days[Int(parts.tm_wday)], parts.tm_mday,
                      months[Int(parts.tm_mon)], parts.tm_year + 1900, parts.tm_hour, parts.tm_min, parts.tm_sec)
    }
}
