import CachePolicy
import EdgeCore
import EdgeModel
import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1

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
final class HitFastPath: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let edge: Edge
    private let cache: HitResponseCache
    private let connection: ConnectionState
    /// Bytes of requests not answered yet: an incomplete head, or what arrived while paused.
    private var pending: ByteBuffer?
    /// Where the scan of the incomplete head at the start of `pending` stopped.
    private var checkpoint: RequestHeadScanner.Checkpoint?
    /// A request fell outside the scanner's subset: NIO's parser has the connection from here on.
    private var passthrough = false
    /// Responses written and not flushed yet (flushed once per read batch).
    private var unflushed = false
    /// Backpressure: the channel stopped being writable (its answers waiting reached the high
    /// water mark, 64 KiB) so no request is answered and nothing more is read from the client
    /// until they drain to the low mark.
    private var paused = false
    /// A `read()` held back while paused, passed on when the answers have drained.
    private var readWithheld = false
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
        if paused {
            // Only what one read loop already took from the socket: reads are held back.
            pending = buffer
            return
        }
        answerRequests(in: &buffer, context: context)
    }

    /// Answers or routes the complete requests in `buffer`, keeping the rest in `pending`; stops
    /// (pauses) when the channel is no longer writable.
    private func answerRequests(in buffer: inout ByteBuffer, context: ChannelHandlerContext) {
        while buffer.readableBytes > 0 {
            if !context.channel.isWritable {
                pending = buffer
                paused = true
                flushIfNeeded(context)
                return
            }
            let (result, resume) = buffer.withUnsafeReadableBytes { RequestHeadScanner.scan($0, resumingAt: checkpoint) }
            checkpoint = resume
            switch result {
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
                    connection.progress &+= 1
                    context.write(NIOAny(response), promise: nil)
                    unflushed = true
                } else {
                    // Counted as routed by `RequestTracker` as NIO's parser passes it up.
                    context.fireChannelRead(wrapInboundOut(buffer.readSlice(length: head.length)!))
                }
            }
        }
    }

    private func flushIfNeeded(_ context: ChannelHandlerContext) {
        if unflushed {
            unflushed = false
            context.flush()
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        flushIfNeeded(context)
        context.fireChannelReadComplete()
    }

    func read(context: ChannelHandlerContext) {
        if paused {
            readWithheld = true
        } else {
            context.read()
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            connection.progress &+= 1  // the client read what was waiting
        }
        if paused, context.channel.isWritable {
            paused = false
            if var buffer = pending {
                pending = nil
                answerRequests(in: &buffer, context: context)
                flushIfNeeded(context)
            }
            if !paused, readWithheld {
                readWithheld = false
                context.read()
            }
        }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        pending = nil
        checkpoint = nil
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
            // A query that may ask for a bypass mode is the router's to read (`ClientRoutes.isBypass`).
            if let question = name.firstIndex(of: UInt8(ascii: "?")),
               UnsafeRawBufferPointer(rebasing: name[question...]).lowercasedContains("mode") { return nil }
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
        edge.metrics.request(reply.outcome)
        // A copy's answer is the prebuilt one unless `If-None-Match` names its ETag (then a 304).
        let ifNoneMatch = head.ifNoneMatch.map { String(decoding: UnsafeRawBufferPointer(rebasing: bytes[$0]), as: UTF8.self) }
        if case .copy(let snapshot, let age, _, let cacheStatus) = reply,
           ifNoneMatch.map({ !ClientRoutes.condition($0, matches: snapshot.etag) }) ?? true {
            let second = HTTPDate.second()
            let wire: HitResponseCache.Wire
            if let last = lastWire, last.carries(host, version: snapshot.version, upstream: snapshot.upstream, age: age, cacheStatus: cacheStatus, second: second) {
                wire = last
            } else {
                wire = cache.wire(reply, host: host, configuration: edge.configuration)
                lastWire = wire
            }
            return head.isHead ? wire.bytes.getSlice(at: wire.bytes.readerIndex, length: wire.headLength) : wire.bytes
        }
        let (response, body) = HitResponseCache.build(reply, host: host, ifNoneMatch: ifNoneMatch, configuration: edge.configuration)
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

    /// `ClientIdentity`: a usable `X-Client-ID`, else address + User-Agent (formatted once per
    /// connection and User-Agent).
    private func client(_ head: RequestHeadScanner.Head, _ bytes: UnsafeRawBufferPointer, _ context: ChannelHandlerContext) -> String {
        if let id = head.clientID, ClientIdentity.isUsableID(UnsafeRawBufferPointer(rebasing: bytes[id])) {
            return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[id]), as: UTF8.self)
        }
        let userAgent = head.userAgent.map { UnsafeRawBufferPointer(rebasing: bytes[$0]) } ?? UnsafeRawBufferPointer(start: nil, count: 0)
        if let last = lastUserAgent, last.raw.elementsEqual(userAgent) { return last.client }
        let client = ClientIdentity.make(clientID: nil as [UInt8]?, address: context.remoteAddress?.ipAddress ?? "unknown", userAgent: userAgent)
        lastUserAgent = (Array(userAgent), client)
        return client
    }
}

/// What one connection's handlers share (all on its event loop).
final class ConnectionState {
    /// Requests passed to the router and not yet answered.
    var routed = 0
    /// Request heads seen (answered by either path) and drained backlogs: the idle check's
    /// measure of progress.
    var progress = 0
}

/// Open client connections against `--max-connections` (shared by every connection).
public final class ConnectionLimit: @unchecked Sendable {
    public let maximum: Int
    private let lock = NIOLock()
    private var open = 0

    public init(maximum: Int) { self.maximum = max(1, maximum) }

    /// Takes a place for a new connection; false when the edge is full.
    func admit() -> Bool {
        lock.withLock {
            guard open < maximum else { return false }
            open += 1
            return true
        }
    }

    func leave() { lock.withLock { open -= 1 } }
}

/// Sits after the HTTP codecs: counts the requests the router has to answer (a head passed up,
/// its response's `.end` passed down), so `HitFastPath` keeps responses in request order, keeps
/// the connection count under `--max-connections`, and closes connections that stall. It
/// installs `HitFastPath` at the front of the pipeline and `ExplicitConnectionClose` before the
/// HTTPTypes codec.
///
/// Stalled clients (checked by a per-connection tick of `clientTimeout`, not a timer per request,
/// so a stall is noticed between one and two periods after it began):
/// - nothing of its own in progress and no complete request head sent (slowloris heads, idle
///   keep-alive);
/// - a request whose body is still arriving `clientTimeout` after its head (slow bodies);
/// - answers waiting that the client does not read (paused, or the router's writer blocked on an
///   unwritable channel), with no progress over a whole period.
final class RequestTracker: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let edge: Edge
    private let cache: HitResponseCache
    private let limit: ConnectionLimit?
    private let connection = ConnectionState()
    private let clientTimeout: TimeAmount?
    private var progressAtLastTick = 0
    /// When the request whose body is still arriving began.
    private var bodySince: NIODeadline?
    private var tick: Scheduled<Void>?
    /// This connection holds a place in `limit`.
    private var admitted = false

    init(edge: Edge, cache: HitResponseCache, clientTimeout: TimeAmount?, limit: ConnectionLimit? = nil) {
        self.edge = edge
        self.cache = cache
        self.clientTimeout = clientTimeout
        self.limit = limit
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { start(context) }
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
        start(context)
        context.fireChannelActive()
    }

    /// Once per connection: takes its place under `--max-connections` (or closes it at once) and
    /// starts the stall check.
    private func start(_ context: ChannelHandlerContext) {
        if let limit, !admitted {
            guard limit.admit() else {
                edge.metrics.connectionRejected()
                context.close(promise: nil)
                return
            }
            admitted = true
        }
        scheduleTick(context)
    }

    private func finish() {
        tick?.cancel()
        tick = nil
        if admitted {
            admitted = false
            limit?.leave()
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        finish()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        finish()
    }

    private func scheduleTick(_ context: ChannelHandlerContext) {
        guard let clientTimeout, tick == nil else { return }
        tick = context.eventLoop.assumeIsolatedUnsafeUnchecked().scheduleTask(in: clientTimeout) {
            self.tick = nil
            let progressed = self.connection.progress != self.progressAtLastTick
            self.progressAtLastTick = self.connection.progress
            // Unwritable: answers wait that the client does not read (the fast path is paused
            // exactly then, and the router's writer is blocked).
            let waitingOnClient = !context.channel.isWritable
            let idle = !progressed && (self.connection.routed == 0 || waitingOnClient)
            let slowBody = self.bodySince.map { NIODeadline.now() - $0 >= clientTimeout } ?? false
            if idle || slowBody {
                context.close(promise: nil)
            } else {
                self.scheduleTick(context)
            }
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            connection.progress &+= 1
            connection.routed += 1
            bodySince = .now()
        case .end:
            bodySince = nil
        case .body:
            break
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
/// `Cache-Status` and `Date` it carries are unchanged, so at most one build per host per second),
/// within a byte budget that is part of `--memory-cache-mb`.
final class HitResponseCache: @unchecked Sendable {
    /// A copy's whole HTTP/1.1 response: status line, fields, blank line, body.
    struct Wire {
        let host: OriginHost
        let version: Int
        /// A parent edge's `X-Cache` and `Via` it carries on (tiers).
        let upstream: UpstreamHeaders?
        let age: Int
        let cacheStatus: String
        /// The `Date` second it carries.
        let second: Int
        let bytes: ByteBuffer
        /// The status line and fields with the blank line: the answer to `HEAD`.
        let headLength: Int

        /// Whether these bytes are the answer for a copy with these values in this second.
        func carries(_ host: OriginHost, version: Int, upstream: UpstreamHeaders?, age: Int, cacheStatus: String, second: Int) -> Bool {
            self.host == host && self.version == version && self.age == age && self.second == second && self.cacheStatus == cacheStatus
                && self.upstream == upstream
        }
    }

    private let lock = NIOLock()
    private var hosts: [Substring: OriginHost] = [:]
    private var built: [OriginHost: Wire] = [:]
    /// What `built` holds, in bytes, against `budget` (its share of `--memory-cache-mb`).
    private var heldBytes = 0
    var builtBytes: Int { lock.withLock { heldBytes } }
    let budget: Int
    /// Parsed hosts kept (cleared wholesale when reached); connections also remember their last.
    private static let limit = 4_096

    init(budget: Int) { self.budget = max(0, budget) }

    /// What a built response holds: its bytes and the dictionary slot with its key.
    static func cost(_ wire: Wire) -> Int { wire.bytes.capacity + 160 + wire.host.description.utf8.count + wire.cacheStatus.utf8.count }

    /// The host for a raw spelling, when it parses and the edge serves it.
    func host(_ raw: Substring, edge: Edge) -> OriginHost? {
        if let known = lock.withLock({ hosts[raw] }) { return known }
        // Rejections are the router's to answer (and count); only served hosts are kept here.
        guard case .success(let host) = ClientRoutes.resolve(String(raw), configuration: edge.configuration) else { return nil }
        lock.withLock {
            if hosts.count >= Self.limit { hosts.removeAll(keepingCapacity: true) }
            hosts[raw] = host
        }
        return host
    }

    /// The response bytes for a copy (`reply` must be `.copy`), shared by every hit on the host
    /// within the second. Kept while the built responses fit their budget; past it, the older
    /// ones are dropped (and rebuilt from the memory cache when next needed).
    func wire(_ reply: EdgeReply, host: OriginHost, configuration: EdgeConfiguration) -> Wire {
        guard case .copy(let snapshot, let age, _, let cacheStatus) = reply else { preconditionFailure("wire(_:) takes a copy") }
        let second = HTTPDate.second()
        let previous = lock.withLock { built[host] }
        if let previous, previous.carries(host, version: snapshot.version, upstream: snapshot.upstream, age: age, cacheStatus: cacheStatus, second: second) {
            return previous
        }
        let (head, body) = Self.build(reply, host: host, ifNoneMatch: nil, configuration: configuration)
        var bytes = ByteBuffer()
        bytes.reserveCapacity(600 + (body?.readableBytes ?? 0))
        Self.writeHead(head, into: &bytes)
        let headLength = bytes.readableBytes
        if let body { bytes.writeImmutableBuffer(body) }
        let wire = Wire(host: host, version: snapshot.version, upstream: snapshot.upstream, age: age, cacheStatus: cacheStatus, second: second, bytes: bytes,
                        headLength: headLength)
        let cost = Self.cost(wire)
        lock.withLock {
            if let replaced = built.removeValue(forKey: host) { heldBytes -= Self.cost(replaced) }
            guard cost <= budget else { return }
            if heldBytes + cost > budget {
                // Drop about half, oldest second first: hot hosts are rebuilt within a second.
                let target = budget / 2
                for (key, old) in built.sorted(by: { $0.value.second < $1.value.second }) {
                    built[key] = nil
                    heldBytes -= Self.cost(old)
                    if heldBytes + cost <= target { break }
                }
            }
            built[host] = wire
            heldBytes += cost
        }
        return wire
    }

    /// The router's response parts for a reply, with `Content-Length` (not on a 304: it has no
    /// body, and a length there would have to be the 200's).
    static func build(_ reply: EdgeReply, host: OriginHost, ifNoneMatch: String?, configuration: EdgeConfiguration) -> (HTTPResponse, ByteBuffer?) {
        var (head, body) = ClientRoutes.parts(reply, host: host, ifNoneMatch: ifNoneMatch, configuration: configuration)
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

/// HTTP/1 rules the version-independent request types cannot express, applied before the
/// conversion to them:
/// - a request that HTTP/1 does not keep alive (HTTP/1.0 without `keep-alive`) is marked
///   `Connection: close`, which survives the conversion; the version does not;
/// - an absolute-form target names the authority itself, and `Host` is ignored (RFC 9112
///   §3.2.2): the conversion takes the authority from `Host`, so `Host` is set from the target.
final class ExplicitConnectionClose: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .head(var head) = unwrapInboundIn(data) else {
            context.fireChannelRead(data)
            return
        }
        var changed = false
        if !head.isKeepAlive, !head.headers[canonicalForm: "connection"].contains(where: { $0.lowercased() == "close" }) {
            head.headers.replaceOrAdd(name: "connection", value: "close")
            changed = true
        }
        if let authority = Self.absoluteFormAuthority(head.uri) {
            head.headers.replaceOrAdd(name: "host", value: authority)
            changed = true
        }
        context.fireChannelRead(changed ? wrapInboundOut(.head(head)) : data)
    }

    /// The authority of an `http://` or `https://` absolute-form target (empty when it has none).
    static func absoluteFormAuthority(_ uri: String) -> String? {
        let lower = uri.prefix(8).lowercased()
        let rest: Substring
        if lower.hasPrefix("http://") {
            rest = uri.dropFirst(7)
        } else if lower.hasPrefix("https://") {
            rest = uri.dropFirst(8)
        } else {
            return nil
        }
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        // Userinfo has no place in a request target; keep only what follows it.
        return String(authority.split(separator: "@", omittingEmptySubsequences: false).last ?? "")
    }
}

extension UnsafeRawBufferPointer {
    /// Whether these bytes contain `word` (lower-case ASCII), compared case-insensitively.
    func lowercasedContains(_ word: StaticString) -> Bool {
        let needle = UnsafeRawBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount)
        guard count >= needle.count else { return false }
        for start in 0...(count - needle.count) {
            var matched = true
            for offset in 0..<needle.count where self[start + offset] | 0x20 != needle[offset] {
                matched = false
                break
            }
            if matched { return true }
        }
        return false
    }
}
