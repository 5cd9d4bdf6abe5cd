import EdgeModel
import AASAEngine
import CCurlShim
import Foundation

/// How origin fetches are made. Mirrors the `fetch`/`serve` flags.
public struct FetcherConfiguration: Sendable {
    /// Seconds for the whole transfer (connect + TLS + headers + body).
    public var timeout: Double
    /// curl CONNECT_TO entries `H:P:CH:CP`: always permitted by the address policy.
    public var connectTo: [String]
    /// curl RESOLVE entries `H:P:ADDR`: subject to the address policy.
    public var resolve: [String]
    /// CA bundle for origin TLS; nil = the system store.
    public var caFile: String?
    /// Lab mode: permit private/loopback/link-local/reserved origin addresses.
    public var allowPrivateOrigins: Bool

    public init(timeout: Double = 5, connectTo: [String] = [], resolve: [String] = [], caFile: String? = nil,
                allowPrivateOrigins: Bool = false) {
        self.timeout = timeout
        self.connectTo = connectTo
        self.resolve = resolve
        self.caFile = caFile
        self.allowPrivateOrigins = allowPrivateOrigins
    }

    public static let userAgent = "AASA-Bot/1.0.0"
    /// Devices refuse larger bodies; so does the fetch (announced and streamed length alike).
    public static let maximumBodySize = AASAFile.maximumSize

    /// Checks the syntax of `connectTo` and `resolve` entries; the message names the bad one.
    public func validate() throws(ConfigurationError) {
        for entry in connectTo where entry.split(separator: ":", omittingEmptySubsequences: false).count != 4 {
            throw ConfigurationError(message: "--connect-to '\(entry)' is not HOST:PORT:CONNECT-HOST:CONNECT-PORT")
        }
        for entry in resolve {
            let parts = entry.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard parts.count == 3, !parts[0].isEmpty, Int(parts[1]) != nil, !parts[2].isEmpty else {
                throw ConfigurationError(message: "--resolve '\(entry)' is not HOST:PORT:ADDRESS")
            }
        }
        guard timeout > 0, timeout.isFinite else { throw ConfigurationError(message: "--origin-timeout must be a positive number of seconds") }
    }

    /// The CA file, when given, can be read (an I/O problem rather than a usage one).
    public func checkFiles() throws(ConfigurationError) {
        if let caFile, !FileManager.default.isReadableFile(atPath: caFile) {
            throw ConfigurationError(message: "--ca-file \(caFile) cannot be read")
        }
    }

    /// A CONNECT_TO entry applies to this host: its address is the lab's explicit choice.
    func isConnectToTarget(_ host: OriginHost) -> Bool {
        connectTo.contains { entry in
            let parts = entry.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count == 4 else { return false }
            let hostMatches = parts[0].isEmpty || parts[0].lowercased() == host.name
            let portMatches = parts[1].isEmpty || Int(parts[1]) == (host.port ?? 443)
            return hostMatches && portMatches
        }
    }
}

public struct ConfigurationError: Error, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}

/// Fetches origin AASA files the way Apple's CDN does, through libcurl's multi interface driven
/// by one dedicated thread: any number of concurrent fetches, none blocking Swift's cooperative
/// pool, connections and DNS answers reused across fetches.
public final class OriginFetcher: Sendable {
    public let configuration: FetcherConfiguration
    private let loop: CurlMultiLoop

    public init(configuration: FetcherConfiguration) {
        self.configuration = configuration
        loop = CurlMultiLoop()
    }

    /// Fetches `https://host[:port]/.well-known/apple-app-site-association`. Never throws: every
    /// outcome, including failures, is a `FetchResult`.
    public func fetch(_ host: OriginHost, validators: Validators? = nil) async -> FetchResult {
        await withCheckedContinuation { continuation in
            let transfer = Transfer(host: host, configuration: configuration, validators: validators,
                                    completion: { continuation.resume(returning: $0) })
            loop.submit(transfer)
        }
    }

    /// Fetches `host` from a parent edge (tiers): `base/a/v1/host`, sending `via` on. Failures
    /// the parent passes on come back as the origin's, with the parent's `X-Cache`, `Via` and
    /// `Age` in `upstream`; its `508` is `.loopDetected`, its `503` a `.local` problem.
    public func fetch(_ host: OriginHost, fromParent base: String, via: String) async -> FetchResult {
        await withCheckedContinuation { continuation in
            loop.submit(Transfer(parent: base, host: host, configuration: configuration, via: via,
                                 completion: { continuation.resume(returning: $0) }))
        }
    }

    /// A parent edge's URL as `--parent` takes it: `http://` or `https://`, an authority, an
    /// optional path prefix; returned without a trailing `/`.
    public static func parentBase(_ text: String) throws(ConfigurationError) -> String {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let host = url.host, !host.isEmpty, url.query == nil, url.fragment == nil, url.user == nil else {
            throw ConfigurationError(message: "--parent '\(text)' is not an http:// or https:// URL of an edge (e.g. http://parent.lab:8080)")
        }
        var base = text
        while base.hasSuffix("/") { base.removeLast() }
        return base
    }

    /// A plain GET of `url` (http or https, any address, system CA store, no redirects): how the
    /// probe looks at a CDN. Never throws; transport problems are in `HTTPObservation.error`.
    public func observe(_ url: String, timeout: Double, headers: [String] = []) async -> HTTPObservation {
        await withCheckedContinuation { continuation in
            loop.submit(Transfer(observing: url, timeout: timeout, extraHeaders: headers,
                                 completion: { continuation.resume(returning: $0) }))
        }
    }

    /// Finishes in-flight fetches' bookkeeping and stops the loop thread.
    public func shutdown() { loop.stop() }

    deinit { loop.stop() }
}
