import CachePolicy
import EdgeCore
import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import OriginFetcher

/// Answers client requests the edge can serve from memory (a fresh copy, a cached failure) right
/// on the event loop, ahead of the router: no task, no async channel, no actor hop. Everything
/// else — misses, refreshes, admin, dashboard, bad hosts — passes through to Hummingbird
/// unchanged. The edge decides (`Edge.serveFromMemory`); this handler only translates, with the
/// same `ClientRoutes.parts` the router uses, so both paths answer alike.
///
/// Ordering with pipelined requests: while a request handed to the router has not been answered
/// (its response `.end` has not passed outbound), later requests go to the router too, so
/// responses leave in request order.
///
/// Slow and idle clients: a connection that sends no complete request head for `clientTimeout`
/// (between one and two periods: a per-connection tick, not a timer per request) while nothing of
/// its own is in progress is closed — slowloris heads, idle keep-alive.
final class HitFastPath: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let edge: Edge
    private let cache: HitResponseCache
    /// The ledger's client for this connection when it sends no `X-Client-ID`: (User-Agent, client).
    private var connectionClient: (userAgent: String, client: String)?
    /// The answer to the request being read (its body and end are swallowed), or nil.
    private var answer: Answer?
    /// A context between NIO's HTTP/1 encoder and the HTTPTypes codec: prebuilt NIOHTTP1 response
    /// heads are written from there, skipping the HTTPTypes → NIOHTTP1 conversion per hit. (Not
    /// below the encoder: it pairs each response with the method its decoder recorded, so every
    /// response must pass through it.)
    private var http1Out: ChannelHandlerContext?

    enum Answer {
        /// A head and body for the HTTPTypes codec.
        case typed(HTTPResponse, ByteBuffer?)
        /// A prebuilt HTTP/1 head and body for NIO's encoder.
        case http1(HTTPResponseHead, ByteBuffer?)
    }
    /// Requests passed to the router and not yet answered.
    private var routed = 0
    private let clientTimeout: TimeAmount?
    /// Request heads seen, and the count at the previous tick of the idle check.
    private var heads = 0
    private var headsAtLastTick = 0
    private var tick: Scheduled<Void>?

    init(edge: Edge, cache: HitResponseCache, clientTimeout: TimeAmount?) {
        self.edge = edge
        self.cache = cache
        self.clientTimeout = clientTimeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { scheduleTick(context) }
        // Before the version-independent types drop the HTTP version, make "close after this
        // response" explicit for HTTP/1.0 requests, for this handler and for Hummingbird alike.
        if let codec = try? context.pipeline.syncOperations.handler(type: HTTP1ToHTTPServerCodec.self) {
            try? context.pipeline.syncOperations.addHandler(ExplicitConnectionClose(), position: .before(codec))
            http1Out = try? context.pipeline.syncOperations.context(handlerType: ExplicitConnectionClose.self)
        }
    }

    func channelActive(context: ChannelHandlerContext) {
        scheduleTick(context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        tick?.cancel()
        tick = nil
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        tick?.cancel()
        tick = nil
        http1Out = nil
    }

    private func scheduleTick(_ context: ChannelHandlerContext) {
        guard let clientTimeout, tick == nil else { return }
        tick = context.eventLoop.assumeIsolatedUnsafeUnchecked().scheduleTask(in: clientTimeout) {
            self.tick = nil
            let idle = self.heads == self.headsAtLastTick && self.routed == 0 && self.answer == nil
            self.headsAtLastTick = self.heads
            if idle {
                context.close(promise: nil)
            } else {
                self.scheduleTick(context)
            }
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        if let pending = answer {
            if case .end = part {
                answer = nil
                switch pending {
                case .http1(let head, let body):
                    if let http1Out {
                        http1Out.write(NIOAny(HTTPServerResponsePart.head(head)), promise: nil)
                        if let body { http1Out.write(NIOAny(HTTPServerResponsePart.body(.byteBuffer(body))), promise: nil) }
                        http1Out.writeAndFlush(NIOAny(HTTPServerResponsePart.end(nil)), promise: nil)
                    }
                case .typed(let head, let body):
                    context.write(wrapOutboundOut(.head(head)), promise: nil)
                    if let body { context.write(wrapOutboundOut(.body(body)), promise: nil) }
                    context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
                }
            }
            return
        }
        if case .head(let request) = part {
            heads &+= 1
            if routed == 0, let prepared = prepare(request, context: context) {
                answer = prepared
                return
            }
            routed += 1
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { routed = max(0, routed - 1) }
        context.write(data, promise: promise)
    }

    private func prepare(_ request: HTTPRequest, context: ChannelHandlerContext) -> Answer? {
        let isHead = request.method == .head
        guard request.method == .get || isHead, let path = request.path else { return nil }
        let raw: Substring
        let utf8 = path.utf8
        if utf8.starts(with: "/a/v1/".utf8) {
            // Byte-wise (no grapheme work): the host runs to the query, if any.
            let start = utf8.index(utf8.startIndex, offsetBy: 6)
            raw = path[start..<(utf8[start...].firstIndex(of: UInt8(ascii: "?")) ?? utf8.endIndex)]
        } else if path == "/.well-known/apple-app-site-association" || path == "/apple-app-site-association" {
            guard request.headerFields[.secondHost] == nil else { return nil }  // the router answers 400
            guard let name = ClientRoutes.hostName(fromAuthority: Substring(request.authority ?? "")) else { return nil }
            raw = name
        } else {
            return nil
        }
        // A connection that asks to close is left to the router, which manages that.
        if let connection = request.headerFields[.connection], connection.lowercased().contains("close") { return nil }
        guard let host = cache.host(raw, edge: edge) else { return nil }
        guard let reply = edge.serveFromMemory(host, client: client(request, context)) else { return nil }
        switch reply {
        case .copy(_, _, let outcome, _), .failure(_, _, let outcome, _): edge.metrics.request(outcome)
        }
        let built = cache.parts(reply, host: host, ifNoneMatch: request.headerFields[.ifNoneMatch], configuration: edge.configuration.cache)
        if http1Out != nil, let head = built.http1Head {
            return .http1(head, isHead ? nil : built.body)
        }
        return .typed(built.head, isHead ? nil : built.body)
    }

    /// `X-Client-ID`, else address + User-Agent (the address formatted once per connection).
    private func client(_ request: HTTPRequest, _ context: ChannelHandlerContext) -> String {
        if let id = request.headerFields[.clientID], !id.isEmpty { return id }
        let userAgent = request.headerFields[.userAgent] ?? ""
        if let known = connectionClient, known.userAgent == userAgent { return known.client }
        let client = (context.remoteAddress?.ipAddress ?? "unknown") + " " + userAgent
        connectionClient = (userAgent, client)
        return client
    }
}

/// What the fast path reuses across requests: parsed and allowed hosts by their raw spelling,
/// and per host the last response head built (valid while the version, `Age`, `Cache-Status` and
/// `Date` it carries are unchanged, so at most one build per host per second) with its body
/// buffer (shared, never copied per hit).
final class HitResponseCache: @unchecked Sendable {
    private struct Built {
        let version: Int
        let age: Int
        let cacheStatus: String
        let date: String
        let head: HTTPResponse
        let body: ByteBuffer?
        /// `head` as NIOHTTP1 builds it.
        let http1Head: HTTPResponseHead
    }

    /// A response for the fast path: always the typed parts; for a copy without a conditional
    /// request also its NIOHTTP1 head, shared by every hit on the host within the second.
    struct Prepared {
        let head: HTTPResponse
        let body: ByteBuffer?
        let http1Head: HTTPResponseHead?
    }

    private let lock = NIOLock()
    private var hosts: [Substring: OriginHost] = [:]
    private var built: [String: Built] = [:]
    private static let limit = 50_000
    /// Built heads hold a body buffer each, outside `--memory-cache-mb`: keep only a hot set
    /// (about 25 MB at 3 KB per entry), rebuilt from the memory cache when it is cleared.
    private static let builtLimit = 8_192

    /// The host for a raw spelling, when it parses and the edge serves it.
    func host(_ raw: Substring, edge: Edge) -> OriginHost? {
        if let known = lock.withLock({ hosts[raw] }) { return known }
        guard let host = try? OriginHost(String(raw)), edge.configuration.isAllowed(host) else { return nil }
        lock.withLock {
            if hosts.count >= Self.limit { hosts.removeAll(keepingCapacity: true) }
            hosts[raw] = host
        }
        return host
    }

    func parts(_ reply: EdgeReply, host: OriginHost, ifNoneMatch: String?, configuration: CacheConfiguration) -> Prepared {
        guard ifNoneMatch == nil, case .copy(let snapshot, let age, _, let cacheStatus) = reply else {
            let (head, body) = Self.build(reply, host: host, ifNoneMatch: ifNoneMatch, configuration: configuration)
            return Prepared(head: head, body: body, http1Head: nil)
        }
        let date = HTTPDate.now()
        let key = host.description
        let previous = lock.withLock { built[key] }
        if let previous, previous.version == snapshot.version, previous.age == age, previous.cacheStatus == cacheStatus, previous.date == date {
            return Prepared(head: previous.head, body: previous.body, http1Head: previous.http1Head)
        }
        var (head, body) = Self.build(reply, host: host, ifNoneMatch: nil, configuration: configuration)
        if let previous, previous.version == snapshot.version, let shared = previous.body { body = shared }
        let http1Head = HTTPResponseHead(version: .http1_1, status: HTTPResponseStatus(statusCode: head.status.code),
                                         headers: HTTPHeaders(head.headerFields))
        let entry = Built(version: snapshot.version, age: age, cacheStatus: cacheStatus, date: date, head: head, body: body,
                          http1Head: http1Head)
        lock.withLock {
            if built.count >= Self.builtLimit { built.removeAll(keepingCapacity: true) }
            built[key] = entry
        }
        return Prepared(head: head, body: body, http1Head: http1Head)
    }

    private static func build(_ reply: EdgeReply, host: OriginHost, ifNoneMatch: String?, configuration: CacheConfiguration) -> (HTTPResponse, ByteBuffer?) {
        var (head, body) = ClientRoutes.parts(reply, host: host, ifNoneMatch: ifNoneMatch, cache: configuration)
        head.headerFields[.contentLength] = String(body?.readableBytes ?? 0)
        return (head, body)
    }
}

/// Marks requests that HTTP/1 rules do not keep alive (HTTP/1.0 without `keep-alive`) with
/// `Connection: close`, which survives the conversion to HTTPTypes; the version does not.
final class ExplicitConnectionClose: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head(var head) = unwrapInboundIn(data), !head.isKeepAlive,
           !head.headers[canonicalForm: "connection"].contains(where: { $0.lowercased() == "close" }) {
            head.headers.replaceOrAdd(name: "connection", value: "close")
            context.fireChannelRead(wrapInboundOut(.head(head)))
            return
        }
        context.fireChannelRead(data)
    }
}
