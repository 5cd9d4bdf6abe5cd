import EdgeModel
import AASAEngine
import CCurlShim
import Foundation

/// One origin fetch: an easy handle, its options, what its callbacks collected, and the mapping
/// of how it ended to a `FetchResult`. Confined to the loop thread once submitted.
final class Transfer: @unchecked Sendable {
    /// Who hears how it ended: an origin fetch, or a plain observing GET (the probe's CDN side).
    enum Completion {
        case origin(OriginHost, @Sendable (FetchResult) -> Void)
        case observe(@Sendable (HTTPObservation) -> Void)
    }

    let easy: UnsafeMutableRawPointer
    let url: String
    private let completion: Completion
    private let allowAnyAddress: Bool
    private let bodyLimit: Int
    /// Origin fetches keep only a 200's body; observations keep every body.
    private let keepsAnyBody: Bool
    private let startedAt = Date().timeIntervalSince1970
    private var lists: [UnsafeMutablePointer<curl_slist>] = []
    private let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
    private var retained: Unmanaged<Transfer>?

    // Collected by the callbacks.
    fileprivate var body: [UInt8] = []
    fileprivate var exceededCap = false
    fileprivate var status: Int?
    fileprivate var phrase: String?
    fileprivate var headersComplete = false
    fileprivate var headers: [String: String] = [:]
    fileprivate var refusedAddress: String?
    /// `errno` of a `socket()` that failed in the open-socket callback.
    fileprivate var socketErrno: Int32 = 0
    /// The TLS handshake began, so TCP was connected (curl's CONNECT_TIME covers TCP and TLS).
    fileprivate var handshakeStarted = false
    /// The request carried a validator (If-None-Match / If-Modified-Since): only then is a 304 an answer.
    private var sentValidators = false
    /// The request went to a parent edge's client route (tiers), not to the origin.
    private var fromParent = false

    /// An origin fetch: HTTPS only, the address policy, the contract's size cap.
    convenience init(host: OriginHost, configuration: FetcherConfiguration, validators: Validators?,
                     completion: @escaping @Sendable (FetchResult) -> Void) {
        var requestHeaders = ["Accept: application/json"]
        if let etag = validators?.etag { requestHeaders.append("If-None-Match: \(etag)") }
        if let lastModified = validators?.lastModified { requestHeaders.append("If-Modified-Since: \(lastModified)") }
        self.init(url: host.originURL, protocols: "https", timeout: configuration.timeout,
                  allowAnyAddress: configuration.allowPrivateOrigins || configuration.isConnectToTarget(host),
                  bodyLimit: FetcherConfiguration.maximumBodySize, keepsAnyBody: false, caFile: configuration.caFile,
                  connectTo: configuration.connectTo, resolve: configuration.resolve, requestHeaders: requestHeaders,
                  completion: .origin(host, completion))
        sentValidators = !(validators?.isEmpty ?? true)
    }

    /// A parent edge's `/a/v1/{host}` (tiers): http or https, any address (the parent is the lab's
    /// explicit choice), the lab's `--connect-to`/`--resolve` overrides, the contract's size cap,
    /// `Via` sent on so that a circle of tiers ends in `508`. Unconditional: the answer's `Age`,
    /// `X-Cache` and `Via` are wanted every time.
    convenience init(parent base: String, host: OriginHost, configuration: FetcherConfiguration, via: String,
                     completion: @escaping @Sendable (FetchResult) -> Void) {
        self.init(url: base + "/a/v1/" + host.description, protocols: "http,https", timeout: configuration.timeout, allowAnyAddress: true,
                  bodyLimit: FetcherConfiguration.maximumBodySize, keepsAnyBody: false, caFile: configuration.caFile,
                  connectTo: configuration.connectTo, resolve: configuration.resolve,
                  requestHeaders: ["Accept: application/json", "Via: " + via],
                  completion: .origin(host, completion))
        fromParent = true
    }

    /// A plain GET of any http(s) URL, no address policy: what a client of a CDN sees.
    convenience init(observing url: String, timeout: Double, extraHeaders: [String],
                     completion: @escaping @Sendable (HTTPObservation) -> Void) {
        self.init(url: url, protocols: "http,https", timeout: timeout, allowAnyAddress: true,
                  bodyLimit: HTTPObservation.maximumBodySize, keepsAnyBody: true, caFile: nil, connectTo: [], resolve: [],
                  requestHeaders: ["Accept: application/json"] + extraHeaders, completion: .observe(completion))
    }

    private init(url: String, protocols: String, timeout: Double, allowAnyAddress: Bool, bodyLimit: Int, keepsAnyBody: Bool,
                 caFile: String?, connectTo: [String], resolve: [String], requestHeaders: [String], completion: Completion) {
        self.url = url
        self.completion = completion
        self.allowAnyAddress = allowAnyAddress
        self.bodyLimit = bodyLimit
        self.keepsAnyBody = keepsAnyBody
        easy = curl_easy_init()!
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        // The callbacks find this object through userdata; keep it alive until `finish`.
        let unmanaged = Unmanaged.passRetained(self)
        retained = unmanaged
        let me = unmanaged.toOpaque()

        _ = aasa_curl_setopt_string(easy, CURLOPT_URL, url)
        _ = aasa_curl_setopt_string(easy, CURLOPT_PROTOCOLS_STR, protocols)
        _ = aasa_curl_setopt_string(easy, CURLOPT_REDIR_PROTOCOLS_STR, protocols)
        _ = aasa_curl_setopt_long(easy, CURLOPT_FOLLOWLOCATION, 0)
        _ = aasa_curl_setopt_long(easy, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1)
        _ = aasa_curl_setopt_long(easy, CURLOPT_NOSIGNAL, 1)
        let timeoutMs = max(1, Int((timeout * 1000).rounded()))
        _ = aasa_curl_setopt_long(easy, CURLOPT_TIMEOUT_MS, timeoutMs)
        _ = aasa_curl_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS, timeoutMs)
        _ = aasa_curl_setopt_string(easy, CURLOPT_USERAGENT, FetcherConfiguration.userAgent)
        _ = aasa_curl_setopt_off_t(easy, CURLOPT_MAXFILESIZE_LARGE, curl_off_t(bodyLimit))
        _ = aasa_curl_setopt_pointer(easy, CURLOPT_ERRORBUFFER, errorBuffer)
        _ = aasa_curl_setopt_long(easy, CURLOPT_TCP_KEEPALIVE, 1)
        // curl keeps DNS answers 60 s by default; a lab's changed override (hosts file, split DNS)
        // should count from the next connection on. The address policy checks every connect anyway.
        _ = aasa_curl_setopt_long(easy, CURLOPT_DNS_CACHE_TIMEOUT, 1)
        if let caFile { _ = aasa_curl_setopt_string(easy, CURLOPT_CAINFO, caFile) }
        // Origin fetches never go through a proxy named in the environment (http_proxy,
        // https_proxy, all_proxy): the address policy must see the origin's address, not a proxy's.
        if case .origin = completion {
            _ = aasa_curl_setopt_string(easy, CURLOPT_PROXY, "")
            _ = aasa_curl_setopt_string(easy, CURLOPT_NOPROXY, "*")
        }

        setList(CURLOPT_HTTPHEADER, requestHeaders)
        if !connectTo.isEmpty { setList(CURLOPT_CONNECT_TO, connectTo) }
        if !resolve.isEmpty { setList(CURLOPT_RESOLVE, resolve) }

        _ = aasa_curl_setopt_write_callback(easy, CURLOPT_WRITEFUNCTION, writeCallback)
        _ = aasa_curl_setopt_pointer(easy, CURLOPT_WRITEDATA, me)
        _ = aasa_curl_setopt_write_callback(easy, CURLOPT_HEADERFUNCTION, headerCallback)
        _ = aasa_curl_setopt_pointer(easy, CURLOPT_HEADERDATA, me)
        _ = aasa_curl_setopt_opensocket_callback(easy, openSocketCallback)
        _ = aasa_curl_setopt_pointer(easy, CURLOPT_OPENSOCKETDATA, me)
        _ = aasa_curl_setopt_ssl_ctx_callback(easy, sslContextCallback)
        _ = aasa_curl_setopt_pointer(easy, CURLOPT_SSL_CTX_DATA, me)
    }

    private func setList(_ option: CURLoption, _ items: [String]) {
        var list: UnsafeMutablePointer<curl_slist>?
        for item in items { list = curl_slist_append(list, item) }
        if let list {
            lists.append(list)
            _ = aasa_curl_setopt_slist(easy, option, list)
        }
    }

    deinit {
        curl_easy_cleanup(easy)
        for list in lists { curl_slist_free_all(list) }
        errorBuffer.deallocate()
    }

    // MARK: callbacks

    fileprivate func receive(_ bytes: UnsafeBufferPointer<UInt8>) -> Int {
        if keepsAnyBody || status == 200 || status == nil {
            if body.count + bytes.count > bodyLimit {
                exceededCap = true
                return 0  // stop reading at the cap
            }
            body.append(contentsOf: bytes)
        }
        return bytes.count
    }

    fileprivate func receiveHeader(_ line: UnsafeBufferPointer<UInt8>) {
        // Parsed on the bytes (a String built once per part): this runs for every header line
        // of every fetch, thousands a second in a release.
        var end = line.count
        while end > 0, line[end - 1] == 0x0D || line[end - 1] == 0x0A { end -= 1 }
        let bytes = UnsafeBufferPointer(rebasing: line[0..<end])
        if bytes.starts(with: Self.httpPrefix) {
            // A new response (after a 1xx, or the first): start over.
            let text = String(decoding: bytes, as: UTF8.self)
            let parts = text.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: true)
            status = parts.count > 1 ? Int(parts[1]) : nil
            phrase = parts.count > 2 ? OutsideText.clean(Self.trimmed(parts[2].utf8)) : nil
            headers = [:]
            headersComplete = false
            body = []
            return
        }
        if bytes.isEmpty {
            headersComplete = status.map { $0 >= 200 } ?? false
            return
        }
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")) else { return }
        let name = OutsideText.clean(String(decoding: bytes[..<colon].map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }, as: UTF8.self))
        guard headers.count < 100 || headers[name] != nil else { return }
        headers[name] = OutsideText.clean(Self.trimmed(bytes[(colon + 1)...]))
    }

    private static let httpPrefix = Array("HTTP/".utf8)

    /// The text of `bytes` without leading and trailing spaces and tabs.
    private static func trimmed(_ bytes: some BidirectionalCollection<UInt8>) -> String {
        let isBlank = { (byte: UInt8) in byte == 0x20 || byte == 0x09 }
        guard let first = bytes.firstIndex(where: { !isBlank($0) }), let last = bytes.lastIndex(where: { !isBlank($0) }) else { return "" }
        return String(decoding: bytes[first...last], as: UTF8.self)
    }

    fileprivate func openSocket(_ address: UnsafeMutablePointer<curl_sockaddr>) -> curl_socket_t {
        if !allowAnyAddress {
            var bytes = [UInt8](repeating: 0, count: 16)
            let family = aasa_sockaddr_address(address, &bytes)
            let addressBytes = family == 4 ? Array(bytes[0..<4]) : family == 6 ? bytes : []
            if AddressPolicy.isPrivateOrReserved(addressBytes) {
                refusedAddress = AddressPolicy.format(addressBytes)
                return -1  // CURL_SOCKET_BAD: nothing is sent to the address
            }
        }
        let fd = aasa_open_socket(address)
        if fd < 0 { socketErrno = errno }
        return fd
    }

    // MARK: completion

    /// Called on the loop thread when curl is done with the handle.
    func finish(code: CURLcode) {
        switch completion {
        case .origin(let host, let handler):
            let result = makeResult(host: host, code: code)
            release()
            handler(result)
        case .observe(let handler):
            let observation = makeObservation(code: code)
            release()
            handler(observation)
        }
    }

    private func release() {
        retained?.release()
        retained = nil
    }

    /// The loop was stopped before the transfer started.
    func finishWithoutRunning() {
        release()
        switch completion {
        case .origin(let host, let handler):
            let failure = OriginFailure(code: .connectionFailed, details: JSONObject([JSONMember("cause", "the fetcher was shut down")]))
            handler(result(host: host, .failed(failure), timings: FetchTimings()))
        case .observe(let handler):
            handler(HTTPObservation(url: url, status: nil, headers: [:], body: [], error: "the fetcher was shut down",
                                    durationMs: 0, startedAt: startedAt))
        }
    }

    private func info(_ item: CURLINFO) -> Double {
        var value: curl_off_t = 0
        _ = aasa_curl_getinfo_off_t(easy, item, &value)
        return Double(value) / 1_000_000
    }

    /// The transfer ran on a connection opened by an earlier one.
    private var reusedConnection: Bool {
        var connects = 0
        _ = aasa_curl_getinfo_long(easy, CURLINFO_NUM_CONNECTS, &connects)
        var ip: UnsafePointer<CChar>?
        _ = aasa_curl_getinfo_string(easy, CURLINFO_PRIMARY_IP, &ip)
        return connects == 0 && ip.map { $0.pointee != 0 } == true
    }

    private func curlMessage(_ code: CURLcode) -> String {
        let text = String(cString: errorBuffer)
        return text.isEmpty ? String(cString: curl_easy_strerror(code)) : text
    }

    private func makeObservation(code: CURLcode) -> HTTPObservation {
        let complete = code == CURLE_OK && headersComplete
        var error: String?
        if !complete {
            error = exceededCap || code == CURLE_FILESIZE_EXCEEDED ? "the body is larger than \(bodyLimit) bytes" : curlMessage(code)
        }
        return HTTPObservation(url: url, status: complete ? status : nil, headers: complete ? headers : [:],
                               body: complete ? body : [], error: error,
                               durationMs: info(CURLINFO_TOTAL_TIME_T) * 1000, startedAt: startedAt)
    }

    private func makeResult(host: OriginHost, code: CURLcode) -> FetchResult {
        let timings = FetchTimings(dns: info(CURLINFO_NAMELOOKUP_TIME_T), connect: info(CURLINFO_CONNECT_TIME_T),
                                   tls: info(CURLINFO_APPCONNECT_TIME_T), firstByte: info(CURLINFO_STARTTRANSFER_TIME_T),
                                   total: info(CURLINFO_TOTAL_TIME_T))
        return result(host: host, outcome(code: code, timings: timings), timings: timings)
    }

    /// The contract's precedence: once a non-200 status line has arrived, 00101; for a 200 (or
    /// no status), too large, then timeout, then connection/DNS/TLS errors, then invalid JSON.
    private func outcome(code: CURLcode, timings: FetchTimings) -> FetchOutcome {
        func failure(_ failureCode: FailureCode, _ details: [JSONMember], statusLine: String? = nil) -> FetchOutcome {
            .failed(OriginFailure(code: failureCode, statusLine: statusLine, details: JSONObject(details)))
        }
        if fromParent, let status, let passed = parentAnswer(status) { return passed }
        if let status, status != 200 {
            if status == 304 {
                guard sentValidators else {
                    // Nothing to be "not modified" from: a broken origin (or cache in front of it).
                    return failure(.connectionFailed, [JSONMember("cause", "the origin answered 304 Not Modified to a request without validators"),
                                                       JSONMember("status", "304 Not Modified")])
                }
                return .notModified
            }
            let line = "\(status) \(phrase.flatMap { $0.isEmpty ? nil : $0 } ?? StatusPhrase.standard(status))"
            var details = [JSONMember("status", .string(line))]
            if (300...399).contains(status), let location = headers["location"] { details.append(JSONMember("location", .string(location))) }
            return failure(.badHTTPResponse, details, statusLine: line)
        }
        if exceededCap || code == CURLE_FILESIZE_EXCEEDED {
            return failure(.tooLarge, [JSONMember("limit", .number(JSONNumber(String(FetcherConfiguration.maximumBodySize))))])
        }
        if code == CURLE_OPERATION_TIMEDOUT {
            let phase: String
            if status != nil {
                phase = headersComplete ? "body" : "headers"
            } else if timings.tls > 0 || reusedConnection {
                phase = "headers"
            } else if handshakeStarted {
                phase = "tls"
            } else if timings.dns > 0 {
                phase = "connect"
            } else {
                phase = "dns"
            }
            let seconds = String(format: "%g", timings.total.rounded(toPlaces: 1))
            return failure(.timeout, [JSONMember("cause", .string("timed out after \(seconds) s while awaiting \(phase)")),
                                      JSONMember("phase", .string(phase))])
        }
        if let refusedAddress {
            return failure(.privateAddress, [JSONMember("address", .string(refusedAddress))])
        }
        if code != CURLE_OK, status == nil, let problem = localProblem(code) {
            return .local(problem)
        }
        switch code {
        case CURLE_OK: break
        case CURLE_COULDNT_RESOLVE_HOST:
            return failure(.dnsFailure, [JSONMember("cause", .string(curlMessage(code)))])
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER,
             CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH,
             CURLE_SSL_INVALIDCERTSTATUS, CURLE_SSL_CRL_BADFILE, CURLE_SSL_ENGINE_NOTFOUND, CURLE_SSL_ENGINE_SETFAILED,
             CURLE_USE_SSL_FAILED, CURLE_SSL_SHUTDOWN_FAILED:
            return failure(.tlsFailure, [JSONMember("cause", .string(curlMessage(code)))])
        default:
            // Refused, reset, closed mid-body, nothing received, or anything else on the wire.
            return failure(.connectionFailed, [JSONMember("cause", .string(curlMessage(code)))])
        }
        guard status == 200 else {
            return failure(.connectionFailed, [JSONMember("cause", "the connection closed without a response")])
        }
        if let problem = Self.jsonObjectProblem(body) {
            return failure(.invalidJSON, [JSONMember("cause", .string(problem))])
        }
        return .fetched
    }

    /// What a parent edge's own answers mean: its `508` (a circle of tiers), its `503` (it ran
    /// short: not the origin's doing), its 404 failure form (the origin's failure, passed on word
    /// for word). nil for the rest, which are read as an origin's would be.
    private func parentAnswer(_ status: Int) -> FetchOutcome? {
        switch status {
        case 508:
            return .loopDetected
        case 503:
            return .local(LocalProblem(.parent, cause: "it answered 503" + (headers["retry-after"].map { " (Retry-After: \($0))" } ?? "")))
        case 404:
            guard let reason = headers["apple-failure-reason"] else { return nil }
            var details = JSONObject()
            if let text = headers["apple-failure-details"], case .object(let object)? = try? JSONReader.parse(text) { details = object }
            return OriginFailure(passedOn: reason, details: details).map { .failed($0) }
        default:
            return nil
        }
    }

    /// What a parent edge said about its answer: `X-Cache` and `Via` to carry on, `Age` to count.
    private var upstream: (headers: UpstreamHeaders, age: Double)? {
        guard fromParent, status != nil else { return nil }
        let age = headers["age"].flatMap(Double.init).map { max(0, $0) } ?? 0
        return (UpstreamHeaders(xCache: headers["x-cache"] ?? "", via: headers["via"] ?? ""), age)
    }

    /// A shortage of the edge's own behind a transfer that never reached the origin: the socket
    /// could not be opened, curl ran out of memory, or (when curl only says that resolving or
    /// connecting failed, as it does when its resolver cannot get a descriptor) the process has
    /// no descriptor left right now.
    private func localProblem(_ code: CURLcode) -> LocalProblem? {
        if let problem = LocalProblem.from(socketErrno: socketErrno) { return problem }
        if code == CURLE_OUT_OF_MEMORY { return LocalProblem(.memory, cause: curlMessage(code)) }
        switch code {
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_CONNECT, CURLE_FAILED_INIT, CURLE_RECV_ERROR, CURLE_SEND_ERROR:
            return LocalProblem.descriptorShortage()
        default:
            return nil
        }
    }

    /// Why `bytes` is not a JSON object, or nil when it is one.
    static func jsonObjectProblem(_ bytes: [UInt8]) -> String? {
        if bytes.isEmpty { return "the body is empty" }
        guard JSONReader.isValidUTF8(bytes) else { return "the body is not valid UTF-8" }
        do {
            let value = try bytes.withUnsafeBufferPointer { buffer throws(JSONSyntaxError) in
                try JSONReader.parse(utf8: bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? UnsafeBufferPointer(rebasing: buffer[3...]) : buffer)
            }
            if case .object = value { return nil }
            return "the body is \(value.typeDescription), not a JSON object"
        } catch {
            return "not valid JSON: \(error)"
        }
    }

    private func result(host: OriginHost, _ outcome: FetchOutcome, timings: FetchTimings) -> FetchResult {
        var ip: UnsafePointer<CChar>?
        _ = aasa_curl_getinfo_string(easy, CURLINFO_PRIMARY_IP, &ip)
        var port = 0
        _ = aasa_curl_getinfo_long(easy, CURLINFO_PRIMARY_PORT, &port)
        let connectedIP = ip.map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 }
        let fetched = outcome == .fetched
        let statusLine = status.map { "\($0) \(phrase.flatMap { $0.isEmpty ? nil : $0 } ?? StatusPhrase.standard($0))" }
        let upstream = self.upstream
        return FetchResult(
            host: host, url: url, outcome: outcome, status: status, statusLine: statusLine,
            etag: headers["etag"], lastModified: headers["last-modified"], contentType: headers["content-type"],
            cacheControl: headers["cache-control"], location: headers["location"],
            body: fetched ? body : [], sha256: fetched ? SHA256.hex(body) : nil,
            connectedIP: connectedIP, connectedPort: port > 0 ? port : nil, timings: timings, startedAt: startedAt,
            upstream: upstream?.headers, upstreamAge: upstream?.age ?? 0)
    }
}

private extension Double {
    func rounded(toPlaces places: Int) -> Double {
        let scale = pow(10, Double(places))
        return (self * scale).rounded() / scale
    }
}

// C callbacks capture nothing: the Transfer arrives through userdata.

private let writeCallback: curl_write_callback = { data, size, count, userdata in
    guard let userdata, let data else { return 0 }
    let transfer = Unmanaged<Transfer>.fromOpaque(userdata).takeUnretainedValue()
    let buffer = UnsafeBufferPointer(start: UnsafeRawPointer(data).assumingMemoryBound(to: UInt8.self), count: size * count)
    return transfer.receive(buffer)
}

private let headerCallback: curl_write_callback = { data, size, count, userdata in
    guard let userdata, let data else { return 0 }
    let transfer = Unmanaged<Transfer>.fromOpaque(userdata).takeUnretainedValue()
    transfer.receiveHeader(UnsafeBufferPointer(start: UnsafeRawPointer(data).assumingMemoryBound(to: UInt8.self), count: size * count))
    return size * count
}

private let sslContextCallback: curl_ssl_ctx_callback = { _, _, userdata in
    if let userdata { Unmanaged<Transfer>.fromOpaque(userdata).takeUnretainedValue().handshakeStarted = true }
    return CURLE_OK
}

private let openSocketCallback: curl_opensocket_callback = { clientp, _, address in
    guard let clientp, let address else { return -1 }
    return Unmanaged<Transfer>.fromOpaque(clientp).takeUnretainedValue().openSocket(address)
}
