import AASAEngine
import Foundation

/// The failure reasons of the contract, in Apple's `SWCERR` family.
public enum FailureCode: String, Sendable, CaseIterable {
    case badHTTPResponse = "SWCERR00101"
    case dnsFailure = "SWCERR00201"
    case privateAddress = "SWCERR00202"
    case connectionFailed = "SWCERR00203"
    case tlsFailure = "SWCERR00204"
    case timeout = "SWCERR00301"
    case tooLarge = "SWCERR00401"
    case invalidJSON = "SWCERR00402"

    /// The text after the code in `Apple-Failure-Reason` (00101 appends the status line).
    public var title: String {
        switch self {
        case .badHTTPResponse: return "Bad HTTP Response"
        case .dnsFailure: return "DNS Failure"
        case .privateAddress: return "Connections to private/reserved IP addresses are not allowed"
        case .connectionFailed: return "Connection Failed"
        case .tlsFailure: return "TLS Failure"
        case .timeout: return "Timeout"
        case .tooLarge: return "Too Large"
        case .invalidJSON: return "Invalid JSON"
        }
    }

    /// `Apple-Try-Direct`: whether a device could reasonably try the origin itself.
    public var tryDirect: Bool {
        switch self {
        case .dnsFailure, .connectionFailed, .tlsFailure, .timeout: return true
        case .badHTTPResponse, .privateAddress, .tooLarge, .invalidJSON: return false
        }
    }
}

/// Why an origin fetch cannot be served, in the shape of Apple's failure headers.
public struct OriginFailure: Sendable, Equatable, CustomStringConvertible {
    public let code: FailureCode
    /// `Apple-Failure-Reason`, e.g. `SWCERR00101 Bad HTTP Response: 404 Not Found`.
    public let reason: String
    /// `Apple-Failure-Details`: a small JSON object.
    public let details: JSONObject

    public init(code: FailureCode, statusLine: String? = nil, details: JSONObject) {
        self.code = code
        reason = code.rawValue + " " + code.title + (statusLine.map { ": " + $0 } ?? "")
        self.details = details
    }

    /// A failure another edge (a parent tier) reported in its headers, kept word for word; nil
    /// when the reason does not start with a known code.
    public init?(passedOn reason: String, details: JSONObject) {
        guard let code = FailureCode(rawValue: String(reason.prefix(11))), reason.count == 11 || reason.dropFirst(11).first == " " else {
            return nil
        }
        self.code = code
        self.reason = reason
        self.details = details
    }

    /// The origin's status in a `SWCERR00101 Bad HTTP Response: 404 Not Found` reason.
    public static func statusCode(inReason reason: String) -> Int? {
        guard reason.hasPrefix(FailureCode.badHTTPResponse.rawValue), let colon = reason.firstIndex(of: ":") else { return nil }
        return Int(reason[reason.index(after: colon)...].trimmingCharacters(in: .whitespaces).prefix(3))
    }

    public var tryDirect: Bool { code.tryDirect }
    /// The details as one line of JSON, for the header.
    public var detailsJSON: String { JSONWriter.string(.object(details)) }
    public var description: String { "\(reason) \(detailsJSON)" }
}

public enum FetchOutcome: Sendable, Equatable {
    /// A complete 200 whose body is a JSON object of at most 131072 bytes.
    case fetched
    /// 304 to a conditional request: the caller's copy is still current.
    case notModified
    case failed(OriginFailure)
    /// Something of the edge's own ran short (file descriptors, memory): not the origin's doing,
    /// so never recorded or cached as an origin failure.
    case local(LocalProblem)
    /// The parent edge answered `508 Loop Detected`: the tiers are configured in a circle. Passed
    /// to the client as it is; nothing is recorded or cached.
    case loopDetected
}

/// What a parent edge said about its answer, carried on by the child: the parent's `X-Cache`
/// and `Via` (each tier adds its own entry after them).
public struct UpstreamHeaders: Sendable, Equatable, Hashable {
    public let xCache: String
    public let via: String

    public init(xCache: String, via: String) {
        self.xCache = xCache
        self.via = via
    }

    /// Both values in one stored text, one per line (header values hold no line breaks).
    public var stored: String { xCache + "\n" + via }

    public init?(stored: String?) {
        guard let stored, let newline = stored.firstIndex(of: "\n") else { return nil }
        xCache = String(stored[..<newline])
        via = String(stored[stored.index(after: newline)...])
    }
}

/// A shortage on the edge's side that stopped a fetch before the origin was reached.
public struct LocalProblem: Sendable, Equatable, CustomStringConvertible {
    public enum Resource: String, Sendable, CaseIterable {
        case fileDescriptors = "file-descriptors"
        case memory
        /// The parent edge (tiers) answered `503`: it ran short itself.
        case parent
    }

    public let resource: Resource
    /// What failed, e.g. `socket(): Too many open files`.
    public let cause: String

    public init(_ resource: Resource, cause: String) {
        self.resource = resource
        self.cause = cause
    }

    public var description: String {
        switch resource {
        case .fileDescriptors: return "this edge is out of file descriptors (" + cause + ")"
        case .memory: return "this edge is out of memory (" + cause + ")"
        case .parent: return "the parent edge is unavailable (" + cause + ")"
        }
    }

    /// Whether the process cannot open one more descriptor right now (EMFILE / ENFILE).
    public static func descriptorShortage() -> LocalProblem? {
        let fd = open("/dev/null", O_RDONLY | O_CLOEXEC)
        guard fd < 0 else {
            close(fd)
            return nil
        }
        let error = errno
        guard error == EMFILE || error == ENFILE else { return nil }
        return LocalProblem(.fileDescriptors, cause: "open(): " + String(cString: strerror(error)))
    }

    /// The shortage an `errno` from `socket()` stands for, if it is one.
    public static func from(socketErrno error: Int32) -> LocalProblem? {
        switch error {
        case EMFILE, ENFILE: return LocalProblem(.fileDescriptors, cause: "socket(): " + String(cString: strerror(error)))
        case ENOBUFS, ENOMEM: return LocalProblem(.memory, cause: "socket(): " + String(cString: strerror(error)))
        default: return nil
        }
    }
}

/// Seconds from the start of the transfer until each phase ended (0 when not reached).
public struct FetchTimings: Sendable, Equatable {
    public var dns: Double
    public var connect: Double
    public var tls: Double
    public var firstByte: Double
    public var total: Double

    public init(dns: Double = 0, connect: Double = 0, tls: Double = 0, firstByte: Double = 0, total: Double = 0) {
        self.dns = dns
        self.connect = connect
        self.tls = tls
        self.firstByte = firstByte
        self.total = total
    }
}

/// Validators of a copy the caller already has, for a conditional request.
public struct Validators: Sendable, Equatable {
    public var etag: String?
    public var lastModified: String?
    public init(etag: String? = nil, lastModified: String? = nil) {
        self.etag = etag
        self.lastModified = lastModified
    }
    public var isEmpty: Bool { etag == nil && lastModified == nil }
}

public struct FetchResult: Sendable {
    public let host: OriginHost
    public let url: String
    public let outcome: FetchOutcome
    /// The origin's status code, when a status line arrived.
    public let status: Int?
    /// `404 Not Found`: the code and the origin's phrase (or the standard one).
    public let statusLine: String?
    public let etag: String?
    public let lastModified: String?
    public let contentType: String?
    public let cacheControl: String?
    public let location: String?
    /// The body, when the outcome is `.fetched` (empty otherwise).
    public let body: [UInt8]
    /// Lower-case hex SHA-256 of `body`, when fetched.
    public let sha256: String?
    /// The address and port the fetch connected to.
    public let connectedIP: String?
    public let connectedPort: Int?
    public let timings: FetchTimings
    /// Wall-clock start, Unix seconds.
    public let startedAt: Double
    /// From a parent edge: its `X-Cache` and `Via`, to be carried on.
    public let upstream: UpstreamHeaders?
    /// From a parent edge: its `Age` (seconds the answer had spent in the tiers above).
    public let upstreamAge: Double

    public init(host: OriginHost, url: String, outcome: FetchOutcome, status: Int?, statusLine: String?, etag: String? = nil,
                lastModified: String? = nil, contentType: String? = nil, cacheControl: String? = nil, location: String? = nil,
                body: [UInt8] = [], sha256: String? = nil, connectedIP: String? = nil, connectedPort: Int? = nil,
                timings: FetchTimings = FetchTimings(), startedAt: Double = 0, upstream: UpstreamHeaders? = nil, upstreamAge: Double = 0) {
        self.upstream = upstream
        self.upstreamAge = upstreamAge
        self.host = host
        self.url = url
        self.outcome = outcome
        self.status = status
        self.statusLine = statusLine
        self.etag = etag
        self.lastModified = lastModified
        self.contentType = contentType
        self.cacheControl = cacheControl
        self.location = location
        self.body = body
        self.sha256 = sha256
        self.connectedIP = connectedIP
        self.connectedPort = connectedPort
        self.timings = timings
        self.startedAt = startedAt
    }

    public var failure: OriginFailure? {
        if case .failed(let failure) = outcome { return failure }
        return nil
    }

    /// True when the edge would serve this body.
    public var isUsable: Bool { outcome == .fetched }
}

/// What a plain GET of a URL saw: the probe's view of a CDN. No policy is applied to it.
public struct HTTPObservation: Sendable {
    /// Bodies beyond this are not kept (a CDN serving AASA files never comes near it).
    public static let maximumBodySize = 1 << 20

    public let url: String
    /// nil when no complete response arrived (see `error`).
    public let status: Int?
    /// Response header fields, names lower-cased (the last of repeated fields).
    public let headers: [String: String]
    public let body: [UInt8]
    /// Why no complete response arrived, or nil.
    public let error: String?
    public let durationMs: Double
    public let startedAt: Double

    public init(url: String, status: Int?, headers: [String: String], body: [UInt8], error: String?, durationMs: Double, startedAt: Double) {
        self.url = url
        self.status = status
        self.headers = headers
        self.body = body
        self.error = error
        self.durationMs = durationMs
        self.startedAt = startedAt
    }

    /// The body's SHA-256 (hex), for a 200 answer.
    public var sha256: String? { status == 200 ? SHA256.hex(body) : nil }
}
