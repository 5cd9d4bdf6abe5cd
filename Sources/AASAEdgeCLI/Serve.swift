import ArgumentParser
import CachePolicy
import EdgeCore
import EdgeHTTP
import Foundation
import Logging
import Metrics
import EdgeModel
import OriginFetcher
import PostgresStore
import PropagationAnalysis
import Prometheus
import SnapshotStore

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the edge: Apple's associated-domains CDN routes in front of your origins.",
        discussion: """
        Routes: GET/HEAD /a/v1/{host} and the host-routed /.well-known/apple-app-site-association \
        and /apple-app-site-association; the admin API under /admin/v1 (bearer token); the \
        dashboard at / (sign in with the admin token); Prometheus metrics at /metrics; /healthz \
        and /readyz. Logs go to stderr; "listening on http://HOST:PORT" is logged before the first \
        request is accepted. SIGTERM or SIGINT stops the edge gracefully (exit 0).

        \(EnvironmentDefaults.help(for: "serve"))
        """
    )

    @OptionGroup var options: ServeOptions

    func run() async throws { try await options.serve() }
}

/// Every `serve` flag, declared once: parsing, `--help`, validation, and (through
/// `EnvironmentDefaults`, which reads this group's own description) the `AASA_EDGE_*` variables.
struct ServeOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Listen address.", valueName: "ADDRESS"))
    var host = "127.0.0.1"

    @Option(help: ArgumentHelp("Listen port (0 picks a free one).", valueName: "PORT"))
    var port = 8080

    @Option(help: ArgumentHelp("The SQLite store (created with parent folders if missing); shorthand for --store sqlite:FILE. Default: ./var/aasa-edge.sqlite.", valueName: "FILE"))
    var db: String?

    @Option(name: .customLong("store"), help: ArgumentHelp("sqlite:PATH (embedded, the default) or postgres://USER@HOST[:PORT]/DB[?sslmode=disable|prefer|require], shared by several edges. The password comes from AASA_EDGE_STORE_PASSWORD, else PGPASSWORD; a URL with a password is refused.", valueName: "URL"))
    var store: String?

    @Option(name: .customLong("node-id"), help: ArgumentHelp("This edge's name in logs, metrics and /admin/v1/nodes (1-64 of A-Z a-z 0-9 . _ -). Default: the hostname.", valueName: "NAME"))
    var nodeID: String?

    @Option(name: .customLong("store-connections"), help: ArgumentHelp("PostgreSQL store: pooled connections of this edge (one more listens for the other edges' changes).", valueName: "N"))
    var storeConnections = 8

    @Option(name: .customLong("store-backlog"), help: ArgumentHelp("PostgreSQL store: fetch results kept while the store is unreachable, written when it is back; beyond it the oldest are dropped (logged).", valueName: "N"))
    var storeBacklog = 10_000

    @Option(name: .customLong("ttl"), help: ArgumentHelp("Seconds a successful fetch stays fresh.", valueName: "SECONDS"))
    var ttl: Number = 3600

    @Option(name: .customLong("failure-ttl"), help: ArgumentHelp("Seconds a failed fetch is cached before the origin is tried again.", valueName: "SECONDS"))
    var failureTTL: Number = 1800

    @Option(name: .customLong("stale-if-error"), help: ArgumentHelp("Seconds past expiry that the last good copy may still be served when the origin fails.", valueName: "SECONDS"))
    var staleIfError: Number = 604_800

    @Option(name: .customLong("stale-while-revalidate"), help: ArgumentHelp("Seconds past expiry that the copy is served at once as hit-stale while one background refetch runs; 0: a request past expiry waits for the origin.", valueName: "SECONDS"))
    var staleWhileRevalidate: Number = 0

    @OptionGroup var origin: OriginOptions

    @Option(name: .customLong("parent"), help: ArgumentHelp("Tiers: fill the cache from a parent edge's URL/a/v1/{host} (http or https; the address policy does not apply) instead of the origin. The parent's X-Cache and Via come first in this edge's answers, its Age counts against --ttl, its failures are cached for --failure-ttl, its 508 is passed on. ?mode=developer still goes to the origin.", valueName: "URL"))
    var parent: String?

    @Option(name: .customLong("allow-domain"), help: ArgumentHelp("Serve only these domains and their subdomains (label boundary). Repeatable.", valueName: "SUFFIX"))
    var allowDomain: [String] = []

    @Option(name: .customLong("refetch-concurrency"), help: ArgumentHelp("Origin fetches in flight at once for releases and background refreshes.", valueName: "N"))
    var refetchConcurrency = 64

    @Option(name: .customLong("memory-cache-mb"), help: ArgumentHelp("Bound of what is kept per host in memory: host entries (bodies, their strings, the entries) get 7/8, prebuilt hit responses 1/8; least recently used hosts leave memory, never the store.", valueName: "MB"))
    var memoryCacheMB = 64

    @Option(name: .customLong("ledger-retention-days"), help: ArgumentHelp("Days the propagation ledger keeps a client's record (its first and last answer of each version) after it was last served; older records are deleted every ten minutes.", valueName: "DAYS"))
    var ledgerRetentionDays: Number = 30

    @Option(name: .customLong("client-timeout"), help: ArgumentHelp("Seconds a client may take to send a whole request (head and body), and may go without progress (idle keep-alive, answers it does not read) before its connection is closed; 0: never.", valueName: "SECONDS"))
    var clientTimeout: Number = 60

    @Option(name: .customLong("origin-concurrency"), help: ArgumentHelp("Origin fetches in flight at once for client-triggered misses, all hosts together; a request beyond it waits for a slot up to --origin-timeout, then gets 503 with Retry-After: 1.", valueName: "N"))
    var originConcurrency = 256

    @Option(name: .customLong("max-connections"), help: ArgumentHelp("Open client connections; beyond it new connections are closed at once (aasa_edge_connections_rejected_total). At start the open-file soft limit is raised to the hard limit.", valueName: "N"))
    var maxConnections = 10_000

    @Option(name: .customLong("max-tracked-clients"), help: ArgumentHelp("Per host and version, distinct clients kept in the propagation ledger; beyond it the least recently seen are folded into an 'others' count. A client is its X-Client-ID (1-128 bytes of printable ASCII), else address + User-Agent.", valueName: "N"))
    var maxTrackedClients = 10_000

    @Option(name: .customLong("event-loops"), help: ArgumentHelp("Threads answering client connections; 0: one per core but one (at least one), which leaves a core to the origin fetches, the store and the rest of the machine and keeps the tail short (README, P1).", valueName: "N"))
    var eventLoops = 0

    /// `--event-loops 0`: one thread per core but one, at least one.
    static var defaultEventLoops: Int { max(1, ProcessInfo.processInfo.activeProcessorCount - 1) }

    @Option(name: .customLong("tls-cert"), help: ArgumentHelp("Serve HTTPS on --port with this certificate chain (with --tls-key); the start-up line then says https://.", valueName: "PEM"))
    var tlsCert: String?

    @Option(name: .customLong("tls-key"), help: ArgumentHelp("The private key for --tls-cert.", valueName: "PEM"))
    var tlsKey: String?

    @Option(name: .customLong("admin-token"), help: ArgumentHelp("Bearer token for /admin/v1. When absent: reuse <db folder>/admin-token (refused when group or others can read it), else generate one and write it there (mode 0600); the token is never printed.", valueName: "TOKEN"))
    var adminToken: String?

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0 to 65535") }
        for (name, value) in [("--ttl", ttl.value), ("--failure-ttl", failureTTL.value), ("--stale-if-error", staleIfError.value), ("--stale-while-revalidate", staleWhileRevalidate.value),
                              ("--client-timeout", clientTimeout.value)] where !(value >= 0 && value.isFinite) {
            throw ValidationError("\(name) must be a non-negative number of seconds")
        }
        guard refetchConcurrency >= 1 else { throw ValidationError("--refetch-concurrency must be at least 1") }
        guard originConcurrency >= 1 else { throw ValidationError("--origin-concurrency must be at least 1") }
        guard maxConnections >= 1 else { throw ValidationError("--max-connections must be at least 1") }
        guard maxTrackedClients >= 1 else { throw ValidationError("--max-tracked-clients must be at least 1") }
        guard (tlsCert == nil) == (tlsKey == nil) else { throw ValidationError("--tls-cert and --tls-key go together") }
        guard (0...256).contains(eventLoops) else { throw ValidationError("--event-loops must be 0 (one per core but one) to 256") }
        guard (1...1000).contains(storeConnections) else { throw ValidationError("--store-connections must be 1 to 1000") }
        guard storeBacklog >= 1 else { throw ValidationError("--store-backlog must be at least 1") }
        if store != nil, db != nil { throw ValidationError("--store and --db name the store twice: use one") }
        if let store {
            do { _ = try StoreChoice.parse(store) } catch { throw ValidationError(String(error.message.trimmingPrefix("error: "))) }
        }
        if let nodeID, !NodeName.isValid(nodeID) { throw ValidationError("--node-id must be 1-64 of A-Z a-z 0-9 . _ -") }
        if let parent {
            do { _ = try OriginFetcher.parentBase(parent) } catch { throw ValidationError(error.message) }
        }
    }

    /// The store chosen by --store or --db.
    func storeChoice() throws -> StoreChoice {
        try StoreChoice.parse(store ?? "sqlite:" + (db ?? StoreChoice.defaultPath))
    }

    var node: String { nodeID ?? NodeName.hostDefault }

    /// Opens the chosen store: SQLite at once; PostgreSQL connected, migrated and listening.
    func openStore(logger: Logger) async throws -> (store: any SnapshotStoring, tokenFolder: String) {
        let choice = try storeChoice()
        if case .postgres(let location) = choice {
            let opened = try await StoreChoice.openPostgres(location, node: node, connections: storeConnections, logger: logger)
            logger.notice("store: \(location)", metadata: opened.applied.isEmpty ? [:] : ["migrations": "\(opened.applied.joined(separator: ", "))"])
            return (opened.store, "./var")
        }
        let path = choice.sqlitePath ?? StoreChoice.defaultPath
        return (try StoreReader.openOrCreate(path), URL(fileURLWithPath: path).deletingLastPathComponent().path)
    }

    func serve() async throws {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = .info
            return handler
        }
        let logger = { () -> Logger in
            var logger = Logger(label: "aasa-edge")
            logger[metadataKey: "node"] = "\(node)"
            return logger
        }()
        let descriptors = FileLimit.raiseToHard()
        if descriptors.soft < maxConnections + 64 {
            logger.warning("the open-file limit is below --max-connections: clients beyond it meet local shortages (503) rather than a refused connection",
                           metadata: ["limit": "\(descriptors.soft)", "max_connections": "\(maxConnections)"])
        }
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        let fetcherConfiguration = try origin.checkedConfiguration()
        let (store, tokenFolder) = try await openStore(logger: logger)
        let token = try AdminToken.resolve(given: adminToken, folder: tokenFolder)
        Gauge(label: "aasa_edge_node_info", dimensions: [("node", node), ("version", AASAEdgeVersion.string)]).record(1)
        let fetcher = OriginFetcher(configuration: fetcherConfiguration)
        let edge = Edge(configuration: EdgeConfiguration(cache: CacheConfiguration(ttl: ttl.value, failureTTL: failureTTL.value, staleIfError: staleIfError.value,
                                                                                     staleWhileRevalidate: staleWhileRevalidate.value),
                                                         allowDomains: allowDomain, refetchConcurrency: refetchConcurrency,
                                                         memoryCacheMB: memoryCacheMB, ledgerRetentionDays: ledgerRetentionDays.value,
                                                         originConcurrency: originConcurrency, maxTrackedClients: maxTrackedClients,
                                                         node: node, version: AASAEdgeVersion.string, pendingWriteLimit: storeBacklog),
                        store: store, fetcher: try parent.map { ParentEdge(base: try OriginFetcher.parentBase($0), fetcher: fetcher) } ?? fetcher,
                        bypassFetcher: fetcher, logger: logger)
        if let parent { logger.notice("parent edge: \(parent) (the cache fills from it; ?mode=developer goes to the origin)") }
        // Probes started over the admin API watch origins through the edge's own fetcher (its
        // --connect-to, --ca-file, address policy) and record into its store.
        let probes = ProbeRunner(fetcher: fetcher, store: store, logger: logger)
        let listenHost = host
        let tls = tlsCert.flatMap { cert in tlsKey.map { (certificate: cert, key: $0) } }
        for file in [tlsCert, tlsKey].compactMap({ $0 }) where !FileManager.default.isReadableFile(atPath: file) {
            throw CLIFailure.io("cannot read \(file)")
        }
        let scheme = tls == nil ? "http" : "https"
        do {
            let app = try EdgeServer.application(edge: edge, adminToken: token, host: host, port: port,
                                             clientTimeout: clientTimeout.value > 0 ? clientTimeout.value : nil,
                                             eventLoops: eventLoops > 0 ? eventLoops : ServeOptions.defaultEventLoops,
                                             maxConnections: maxConnections, tls: tls,
                                             probes: probes,
                                             logger: logger, metricsText: { registry.emitToBuffer() }) { boundPort in
                logger.notice("listening on \(scheme)://\(listenHost):\(boundPort)")
            }
            try await app.runService()
        } catch {
            throw CLIFailure.io("the server stopped: \(error)")
        }
        probes.stopAll()
        await edge.close()
        if let postgres = store as? PostgresStore { await postgres.close() }
        fetcher.shutdown()
        logger.notice("stopped")
    }
}

/// The admin bearer token: given, or kept beside the store.
enum AdminToken {
    /// Edges whose stores share a folder share its token file. The file appears whole or not at
    /// all (written under a private name, then hard-linked into place), so an edge starting at the
    /// same moment as another either creates it or reads the other's token, never a half-written
    /// file.
    static func resolve(given: String?, folder: String) throws(CLIFailure) -> String {
        if let given, !given.isEmpty { return given }
        try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let file = URL(fileURLWithPath: folder).appendingPathComponent("admin-token").path
        for _ in 0..<3 {
            if let existing = try read(file) { return existing }
            var generator = SystemRandomNumberGenerator()
            let token = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
            let draft = file + ".\(getpid()).new"
            unlink(draft)
            let fd = open(draft, O_WRONLY | O_CREAT | O_EXCL, 0o600)
            guard fd >= 0 else { throw .io("cannot write the admin token to \(file): \(String(cString: strerror(errno)))") }
            let written = fill(fd, token)
            defer { unlink(draft) }
            guard written else { throw .io("cannot write the admin token to \(file)") }
            var linked = link(draft, file) == 0
            if !linked, [EPERM, EOPNOTSUPP, ENOSYS].contains(errno) {
                // A file system without hard links: claim the name, then fill it (the race this
                // closes stays open there).
                let fd = open(file, O_WRONLY | O_CREAT | O_EXCL, 0o600)
                if fd >= 0 {
                    guard fill(fd, token) else { throw .io("cannot write the admin token to \(file)") }
                    linked = true
                }
            }
            if linked {
                // The token itself is never printed or logged: it is in the file, readable by this user only.
                Console.error("admin token generated and written to \(file) (mode 0600)")
                return token
            }
            guard errno == EEXIST else { throw .io("cannot write the admin token to \(file): \(String(cString: strerror(errno)))") }
            // Another edge linked its token first: read that one.
        }
        throw .io("cannot write the admin token to \(file): it is empty and keeps coming back empty")
    }

    /// Writes the token line, syncs and closes `fd`; false when any of it failed.
    private static func fill(_ fd: Int32, _ token: String) -> Bool {
        let line = token + "\n"
        let written = line.withCString { write(fd, $0, strlen($0)) } == line.utf8.count
        let synced = fsync(fd) == 0
        close(fd)
        return written && synced
    }

    /// The token in `file`; nil when there is none. An empty file (left by a crash of an older
    /// version between creating and writing it) is removed so that a new token can take its place.
    private static func read(_ file: String) throws(CLIFailure) -> String? {
        var info = stat()
        guard stat(file, &info) == 0 else { return nil }
        guard info.st_mode & 0o077 == 0 else {
            throw .io("the admin token file \(file) can be read by group or others: chmod 600 \(file)")
        }
        guard let text = try? String(contentsOfFile: file, encoding: .utf8) else {
            throw .io("cannot read the admin token file \(file)")
        }
        let token = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if token.isEmpty { unlink(file); return nil }
        return token
    }
}

/// The process's open-file limit.
enum FileLimit {
    /// Raises the soft `RLIMIT_NOFILE` to the hard limit (an edge holds one descriptor per client
    /// connection and per origin fetch); returns the limits now in force.
    @discardableResult
    static func raiseToHard() -> (soft: Int, hard: Int) {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return (0, 0) }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        return (Int(clamping: limit.rlim_cur), Int(clamping: limit.rlim_max))
    }
}
