import CachePolicy
import EdgeCore
import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import OriginFetcher

/// Answers client requests the edge can serve from memory (a fresh copy, a cached failure) from
/// the raw bytes, at the very front of the connection's pipeline: no HTTP parser object, no
/// HTTPTypes conversion, no task, no actor hop; a copy's response is a prebuilt byte buffer
/// (head and body, rebuilt at most once per host per second) written as is. Everything else —
/// misses, refreshes, admin, dashboard, bad hosts, anything outside `RequestHeadScanner`'s strict
/// subset — passes to NIO's HTTP/1 parser and Hummingbird's router unchanged. The edge decides
/// (`Edge.serveFromMemory`); this handler only translates, with the same `ClientRoutes.parts`
/// the router uses, so both paths answer alike.
///
/// Framing: requests are handed to NIO whole (the scanner framed them, and they have no body), so
/// NIO's parser is always between requests when this handler answers one itself; it never sees
/// those, and its encoder (which pairs each response with a request it parsed) never sees their
/// responses. Once a request falls outside the subset, this connection's bytes all go to NIO.
///
/// Ordering with pipelined requests: while a request handed to the router is unanswered (see
/// `RequestTracker`), later requests go to the router too, so responses leave in request order.
final class HitFastPath: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let edge: Edge
    private let cache: HitResponseCache
    private let connection: ConnectionState
    /// Bytes of a request head not complete yet.
    private var pending: ByteBuffer?
    /// A request fell outside the scanner's subset: NIO's parser has the connection from here on.
    private var passthrough = false
    /// Responses written and not flushed yet (flushed once per read batch).
    private var unflushed = false
    /// Per connection (clients usually ask for one host with one User-Agent), so most hits parse
    /// no host and format no client: the raw bytes last seen and what they stood for.
    private var lastHost: (raw: [UInt8], fromAuthority: Bool, host: OriginHost)?
    private var lastUserAgent: (raw: [UInt8], client: String)?
    /// The last copy response written, reused while nothing in it changes.
    private var lastWire: HitResponseCache.Wire?

    init(edge: Edge, cache: HitResponseCache, connection: ConnectionState) {
        self.edge = edge
        self.cache = cache
        self.connection = connection
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if passthrough {
            context.fireChannelRead(data)
            return
        }
        var buffer = unwrapInboundIn(data)
        if var previous = pending {
            pending = nil
            previous.writeBuffer(&buffer)
            buffer = previous
        }
        while buffer.readableBytes > 0 {
            switch buffer.withUnsafeReadableBytes({ RequestHeadScanner.scan($0) }) {
            case .incomplete:
                pending = buffer
                return
            case .unsupported:
                passthrough = true
                context.fireChannelRead(wrapInboundOut(buffer))
                return
            case .head(let head):
                if connection.routed == 0, let response = buffer.withUnsafeReadableBytes({ answer(head, $0, context) }) {
                    buffer.moveReaderIndex(forwardBy: head.length)
                    connection.heads &+= 1
                    context.write(NIOAny(response), promise: nil)
                    unflushed = true
                } else {
                    // Counted as routed by `RequestTracker` as NIO's parser passes it up.
                    context.fireChannelRead(wrapInboundOut(buffer.readSlice(length: head.length)!))
                }
            }
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if unflushed {
            unflushed = false
            context.flush()
        }
        context.fireChannelReadComplete()
    }

    func channelInactive(context: ChannelHandlerContext) {
        pending = nil
        context.fireChannelInactive()
    }

    /// The response bytes for a request the edge answers from memory, else nil (route it).
    private func answer(_ head: RequestHeadScanner.Head, _ bytes: UnsafeRawBufferPointer, _ context: ChannelHandlerContext) -> ByteBuffer? {
        // HTTP/1.1 requires a Host header; a request without one is the router's (and its 400's).
        guard let hostField = head.host else { return nil }
        let target = UnsafeRawBufferPointer(rebasing: bytes[head.target])
        let raw: UnsafeRawBufferPointer
        let fromAuthority: Bool
        if target.starts(with: "/a/v1/".utf8) {
            let name = target.dropFirst(6)
            raw = UnsafeRawBufferPointer(rebasing: name[..<(name.firstIndex(of: UInt8(ascii: "?")) ?? name.endIndex)])
            fromAuthority = false
        } else if target.elementsEqual("/.well-known/apple-app-site-association".utf8) || target.elementsEqual("/apple-app-site-association".utf8) {
            raw = UnsafeRawBufferPointer(rebasing: bytes[hostField])
            fromAuthority = true
        } else {
            return nil
        }
        guard let host = host(raw, fromAuthority: fromAuthority) else { return nil }
        guard let reply = edge.serveFromMemory(host, client: client(head, bytes, context)) else { return nil }
        switch reply {
        case .copy(_, _, let outcome, _), .failure(_, _, let outcome, _): edge.metrics.request(outcome)
        }
        if head.ifNoneMatch == nil, case .copy(let snapshot, let age, _, let cacheStatus) = reply {
            let second = HTTPDate.second()
            let wire: HitResponseCache.Wire
            if let last = lastWire, last.carries(host, version: snapshot.version, age: age, cacheStatus: cacheStatus, second: second) {
                wire = last
            } else {
                wire = cache.wire(reply, host: host, configuration: edge.configuration.cache)
                lastWire = wire
            }
            return head.isHead ? wire.bytes.getSlice(at: wire.bytes.readerIndex, length: wire.headLength) : wire.bytes
        }
        let ifNoneMatch = head.ifNoneMatch.map { String(decoding: UnsafeRawBufferPointer(rebasing: bytes[$0]), as: UTF8.self) }
        let (response, body) = HitResponseCache.build(reply, host: host, ifNoneMatch: ifNoneMatch, configuration: edge.configuration.cache)
        var out = context.channel.allocator.buffer(capacity: 512 + (body?.readableBytes ?? 0))
        HitResponseCache.writeHead(response, into: &out)
        if !head.isHead, var body { out.writeBuffer(&body) }
        return out
    }

    /// The host named by raw target or Host-header bytes, when it parses and the edge serves it.
    private func host(_ raw: UnsafeRawBufferPointer, fromAuthority: Bool) -> OriginHost? {
        if let last = lastHost, last.fromAuthority == fromAuthority, last.raw.elementsEqual(raw) { return last.host }
        var text = Substring(String(decoding: raw, as: UTF8.self))
        if fromAuthority {
            guard let name = ClientRoutes.hostName(fromAuthority: text) else { return nil }
            text = name
        }
        guard let host = cache.host(text, edge: edge) else { return nil }
        lastHost = (Array(raw), fromAuthority, host)
        return host
    }

    /// `X-Client-ID`, else address + User-Agent (formatted once per connection and User-Agent).
    private func client(_ head: RequestHeadScanner.Head, _ bytes: UnsafeRawBufferPointer, _ context: ChannelHandlerContext) -> String {
        if let id = head.clientID, !id.isEmpty { return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[id]), as: UTF8.self) }
        let userAgent = head.userAgent.map { UnsafeRawBufferPointer(rebasing: bytes[$0]) } ?? UnsafeRawBufferPointer(start: nil, count: 0)
        if let last = lastUserAgent, last.raw.elementsEqual(userAgent) { return last.client }
        let client = (context.remoteAddress?.ipAddress ?? "unknown") + " " + String(decoding: userAgent, as: UTF8.self)
        lastUserAgent = (Array(userAgent), client)
        return client
    }
}

/// What one connection's handlers share (all on its event loop).
final class ConnectionState {
    /// Requests passed to the router and not yet answered.
    var routed = 0
    /// Request heads seen (answered by either path): the idle check's measure of progress.
    var heads = 0
}

/// Sits after the HTTP codecs: counts the requests the router has to answer (a head passed up,
/// its response's `.end` passed down), so `HitFastPath` keeps responses in request order, and
/// closes idle connections. It installs `HitFastPath` at the front of the pipeline and
/// `ExplicitConnectionClose` before the HTTPTypes codec.
///
/// Slow and idle clients: a connection that sends no complete request head for `clientTimeout`
/// (between one and two periods: a per-connection tick, not a timer per request) while nothing of
/// its own is in progress is closed — slowloris heads, idle keep-alive.
final class RequestTracker: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let edge: Edge
    private let cache: HitResponseCache
    private let connection = ConnectionState()
    private let clientTimeout: TimeAmount?
    private var headsAtLastTick = 0
    private var tick: Scheduled<Void>?

    init(edge: Edge, cache: HitResponseCache, clientTimeout: TimeAmount?) {
        self.edge = edge
        self.cache = cache
        self.clientTimeout = clientTimeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { scheduleTick(context) }
        let pipeline = context.pipeline.syncOperations
        // Before the version-independent types drop the HTTP version, make "close after this
        // response" explicit for HTTP/1.0 requests, for Hummingbird.
        if let codec = try? pipeline.handler(type: HTTP1ToHTTPServerCodec.self) {
            try? pipeline.addHandler(ExplicitConnectionClose(), position: .before(codec))
        }
        // In front of NIO's HTTP/1 encoder and decoder: its writes go straight to the socket.
        if let encoder = try? pipeline.handler(type: HTTPResponseEncoder.self) {
            try? pipeline.addHandler(HitFastPath(edge: edge, cache: cache, connection: connection), position: .before(encoder))
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
    }

    private func scheduleTick(_ context: ChannelHandlerContext) {
        guard let clientTimeout, tick == nil else { return }
        tick = context.eventLoop.assumeIsolatedUnsafeUnchecked().scheduleTask(in: clientTimeout) {
            self.tick = nil
            let idle = self.connection.heads == self.headsAtLastTick && self.connection.routed == 0
            self.headsAtLastTick = self.connection.heads
            if idle {
                context.close(promise: nil)
            } else {
                self.scheduleTick(context)
            }
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head = unwrapInboundIn(data) {
            connection.heads &+= 1
            connection.routed += 1
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { connection.routed = max(0, connection.routed - 1) }
        context.write(data, promise: promise)
    }
}

/// What the fast path shares across connections: parsed and allowed hosts by their raw spelling,
/// and per host the last copy response built as bytes (valid while the version, `Age`,
/// `Cache-Status` and `Date` it carries are unchanged, so at most one build per host per second).
final class HitResponseCache: @unchecked Sendable {
    /// A copy's whole HTTP/1.1 response: status line, fields, blank line, body.
    struct Wire {
        let host: OriginHost
        let version: Int
        let age: Int
        let cacheStatus: String
        /// The `Date` second it carries.
        let second: Int
        let bytes: ByteBuffer
        /// The status line and fields with the blank line: the answer to `HEAD`.
        let headLength: Int

        /// Whether these bytes are the answer for a copy with these values in this second.
        func carries(_ host: OriginHost, version: Int, age: Int, cacheStatus: String, second: Int) -> Bool {
            self.host == host && self.version == version && self.age == age && self.second == second && self.cacheStatus == cacheStatus
        }
    }

    private let lock = NIOLock()
    private var hosts: [Substring: OriginHost] = [:]
    private var built: [OriginHost: Wire] = [:]
    /// Parsed hosts kept (cleared wholesale when reached); connections also remember their last.
    private static let limit = 4_096
    /// Built responses hold a body each, outside `--memory-cache-mb`: keep only a hot set (about
    /// 25 MB at 3 KB per entry), rebuilt from the memory cache when it is cleared.
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

    /// The response bytes for a copy (`reply` must be `.copy`), shared by every hit on the host
    /// within the second.
    func wire(_ reply: EdgeReply, host: OriginHost, configuration: CacheConfiguration) -> Wire {
        guard case .copy(let snapshot, let age, _, let cacheStatus) = reply else { preconditionFailure("wire(_:) takes a copy") }
        let second = HTTPDate.second()
        let previous = lock.withLock { built[host] }
        if let previous, previous.carries(host, version: snapshot.version, age: age, cacheStatus: cacheStatus, second: second) {
            return previous
        }
        let (head, body) = Self.build(reply, host: host, ifNoneMatch: nil, configuration: configuration)
        var bytes = ByteBuffer()
        bytes.reserveCapacity(600 + (body?.readableBytes ?? 0))
        Self.writeHead(head, into: &bytes)
        let headLength = bytes.readableBytes
        if let body { bytes.writeImmutableBuffer(body) }
        let wire = Wire(host: host, version: snapshot.version, age: age, cacheStatus: cacheStatus, second: second, bytes: bytes,
                        headLength: headLength)
        lock.withLock {
            if built.count >= Self.builtLimit { built.removeAll(keepingCapacity: true) }
            built[host] = wire
        }
        return wire
    }

    /// The router's response parts for a reply, with `Content-Length` (not on a 304: it has no
    /// body, and a length there would have to be the 200's).
    static func build(_ reply: EdgeReply, host: OriginHost, ifNoneMatch: String?, configuration: CacheConfiguration) -> (HTTPResponse, ByteBuffer?) {
        var (head, body) = ClientRoutes.parts(reply, host: host, ifNoneMatch: ifNoneMatch, cache: configuration)
        if head.status != .notModified { head.headerFields[.contentLength] = String(body?.readableBytes ?? 0) }
        return (head, body)
    }

    /// An HTTP/1.1 status line and fields with the closing blank line. The values come from
    /// `HTTPFields`, which admits no CR or LF in them.
    static func writeHead(_ head: HTTPResponse, into buffer: inout ByteBuffer) {
        buffer.writeStaticString("HTTP/1.1 ")
        buffer.writeString(String(head.status.code))
        buffer.writeStaticString(" ")
        buffer.writeString(head.status.reasonPhrase)
        buffer.writeStaticString("\r\n")
        for field in head.headerFields {
            buffer.writeString(field.name.rawName)
            buffer.writeStaticString(": ")
            buffer.writeString(field.value)
            buffer.writeStaticString("\r\n")
        }
        buffer.writeStaticString("\r\n")
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
