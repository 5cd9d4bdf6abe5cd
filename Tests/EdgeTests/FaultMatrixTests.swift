import AASAEngine
import Dispatch
import Foundation
import TestOrigin
import Testing

/// Origin names resolved through a hosts file the test rewrites while the edge runs: the edge is
/// started in a private mount namespace where that file is bind-mounted over /etc/hosts (and an
/// nsswitch.conf saying "hosts: files", so a missing name fails at once instead of asking DNS).
/// Needs root and `unshare`; `available` is false elsewhere and the tests say what they skipped.
final class HostsFile: @unchecked Sendable {
    let directory: URL
    let hostsPath: String
    let nsswitchPath: String
    private let lock = NSLock()
    private var entries: [String: String] = [:]

    static let available: Bool = {
        guard geteuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare") else { return false }
        let probe = Process()
        probe.executableURL = URL(fileURLWithPath: "/usr/bin/unshare")
        probe.arguments = ["-m", "/bin/sh", "-c", "mount --bind /dev/null /etc/hostname"]
        probe.standardError = FileHandle.nullDevice
        guard (try? probe.run()) != nil else { return false }
        probe.waitUntilExit()
        return probe.terminationStatus == 0
    }()

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("hosts-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        hostsPath = directory.appendingPathComponent("hosts").path
        nsswitchPath = directory.appendingPathComponent("nsswitch.conf").path
        try "hosts: files\n".write(toFile: nsswitchPath, atomically: true, encoding: .utf8)
        FileManager.default.createFile(atPath: hostsPath, contents: nil)
        try write()
    }

    /// Points `name` at `address`, or removes it (nil). The file is rewritten in place: the bind
    /// mount pins the inode, so a rename would not be seen.
    func set(_ name: String, _ address: String?) throws {
        lock.lock()
        entries[name] = address
        lock.unlock()
        try write()
    }

    private func write() throws {
        lock.lock()
        let text = "127.0.0.1 localhost\n" + entries.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)\n" }.joined()
        lock.unlock()
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: hostsPath))
        defer { try? handle.close() }
        try handle.truncate(atOffset: 0)
        try handle.write(contentsOf: Data(text.utf8))
    }

    /// `unshare -m sh -c 'mount --bind …; exec "$@"'`, for `EdgeProcess(launcher:)`.
    var launcher: [String] {
        ["/usr/bin/unshare", "-m", "/bin/sh", "-c",
         #"h=$1; n=$2; shift 2; mount --bind "$h" /etc/hosts && mount --bind "$n" /etc/nsswitch.conf && exec "$@""#,
         "sh", hostsPath, nsswitchPath]
    }

    deinit { try? FileManager.default.removeItem(at: directory) }
}

/// Open descriptors and threads of a process, from /proc.
func resourceCounts(_ pid: Int32) -> (fds: Int, threads: Int) {
    let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? -1
    let threads = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task").count) ?? -1
    return (fds, threads)
}

/// Every origin fault of the reliability brief, through the real binary and the real HTTPS test
/// origin, once for a host with no copy and once for a host whose good copy has just expired:
/// the contract's reason, details and Try-Direct; the good copy served stale and kept; the failure
/// cached for `--failure-ttl` and fetched again after it; the process alive with no descriptors or
/// threads left behind across rounds.
@Suite(.serialized) struct FaultMatrixTests {
    struct Fault: Sendable {
        let name: String
        /// The test origin's behaviour for the host (for `dns` and `refused`: a reset, which drops
        /// the edge's kept-alive connection so its next attempt resolves the name again).
        let behaviour: JSONValue
        let reason: String
        let tryDirect: Bool
        enum Resolution: Sendable { case origin, refused, missing }
        var resolution: Resolution = .origin
    }

    static let good = aasaBody(path: "/good/*")

    static let faults: [Fault] = [
        Fault(name: "timeout", behaviour: ["status": 200, "body": .string(good), "delay": 4], reason: "SWCERR00301 Timeout", tryDirect: true),
        Fault(name: "refused", behaviour: ["reset": true], reason: "SWCERR00203 Connection Failed", tryDirect: true, resolution: .refused),
        Fault(name: "reset", behaviour: ["reset": true], reason: "SWCERR00203 Connection Failed", tryDirect: true),
        Fault(name: "midbody", behaviour: ["status": 200, "body": .string(good), "closeMidBody": true], reason: "SWCERR00203 Connection Failed", tryDirect: true),
        Fault(name: "silent", behaviour: ["neverAnswer": true], reason: "SWCERR00301 Timeout", tryDirect: true),
        Fault(name: "drip", behaviour: ["status": 200, "body": .string(good), "drip": ["bytes": 8, "interval": 0.25]], reason: "SWCERR00301 Timeout", tryDirect: true),
        Fault(name: "expired", behaviour: ["tls": "expired"], reason: "SWCERR00204 TLS Failure", tryDirect: true),
        Fault(name: "wronghost", behaviour: ["tls": "wronghost"], reason: "SWCERR00204 TLS Failure", tryDirect: true),
        Fault(name: "unknownca", behaviour: ["tls": "unknownca"], reason: "SWCERR00204 TLS Failure", tryDirect: true),
        Fault(name: "tlshang", behaviour: ["tls": "hang"], reason: "SWCERR00301 Timeout", tryDirect: true),
        Fault(name: "moved", behaviour: ["status": 301, "headers": ["Location": "https://elsewhere.test/"]], reason: "SWCERR00101 Bad HTTP Response: 301 Moved Permanently", tryDirect: false),
        Fault(name: "found", behaviour: ["status": 302, "headers": ["Location": "/login"]], reason: "SWCERR00101 Bad HTTP Response: 302 Found", tryDirect: false),
        Fault(name: "notfound", behaviour: ["status": 404], reason: "SWCERR00101 Bad HTTP Response: 404 Not Found", tryDirect: false),
        Fault(name: "error", behaviour: ["status": 500], reason: "SWCERR00101 Bad HTTP Response: 500 Internal Server Error", tryDirect: false),
        Fault(name: "big", behaviour: ["status": 200, "oversize": 200_000], reason: "SWCERR00401 Too Large", tryDirect: false),
        Fault(name: "bignolength", behaviour: ["status": 200, "oversize": 200_000, "contentLength": false], reason: "SWCERR00401 Too Large", tryDirect: false),
        Fault(name: "html", behaviour: ["status": 200, "body": "<html>maintenance</html>"], reason: "SWCERR00402 Invalid JSON", tryDirect: false),
        Fault(name: "empty", behaviour: ["status": 200, "body": ""], reason: "SWCERR00402 Invalid JSON", tryDirect: false),
        Fault(name: "dns", behaviour: ["reset": true], reason: "SWCERR00201 DNS Failure", tryDirect: true, resolution: .missing),
    ]

    struct Case: Sendable {
        let fault: Fault
        let cached: Bool
        let name: String
        let key: String
    }

    @Test func everyFaultWithAndWithoutACachedCopy() throws {
        guard HostsFile.available else {
            print("FaultMatrixTests: needs root and unshare (private /etc/hosts); the fault matrix is not exercised")
            return
        }
        let hosts = try HostsFile()
        let port = origin.httpsPort
        let cases = Self.faults.flatMap { fault in
            [false, true].map { cached in
                let name = "fault-\(fault.name)-\(cached ? "warm" : "cold").lab.test"
                return Case(fault: fault, cached: cached, name: name, key: "\(name):\(port)")
            }
        }
        for c in cases { try hosts.set(c.name, "127.0.0.1") }
        let edge = try EdgeProcess(db: temporaryDB(), arguments: [
            "--allow-private-origins", "--ca-file", origin.caFile,
            "--ttl", "1", "--failure-ttl", "3", "--origin-timeout", "1",
        ], launcher: hosts.launcher)
        defer { edge.stop() }

        // A good copy for the warm half.
        for c in cases where c.cached { try origin.serve(c.name, body: Self.good) }
        let warmed = try concurrently(cases.filter(\.cached)) { try edge.get("/a/v1/\($0.key)") }
        for r in warmed { #expect(r.status == 200 && r["x-cache"] == "miss" && r["aasa-edge-version"] == "1") }

        // Then every host turns faulty, and the warm copies expire (TTL 1 s; curl's DNS cache 1 s).
        for c in cases {
            try origin.set(c.name, c.fault.behaviour)
            switch c.fault.resolution {
            case .origin: break
            case .refused: try hosts.set(c.name, "127.0.0.2")  // nothing listens there
            case .missing: try hosts.set(c.name, nil)
            }
        }
        usleep(1_300_000)

        var baseline: (fds: Int, threads: Int)?
        for round in 1...3 {
            let before = try cases.map { try fetchCount(edge, $0.key) }
            let first = try concurrently(cases) { try edge.get("/a/v1/\($0.key)") }
            for (c, r) in zip(cases, first) { check(c, r, round: round, repeated: false) }
            let second = try concurrently(cases) { try edge.get("/a/v1/\($0.key)") }
            for (c, r) in zip(cases, second) { check(c, r, round: round, repeated: true) }
            let after = try cases.map { try fetchCount(edge, $0.key) }
            for (i, c) in cases.enumerated() {
                #expect(after[i] == before[i] + 1, "round \(round) \(c.name): \(after[i] - before[i]) fetches, want 1 (the failure is cached)")
                let status = try json(try edge.admin("GET", "/domains/\(c.key)"))
                #expect(status["lastFailure"]?.objectValue?["reason"]?.stringValue == c.fault.reason, "\(c.name)")
                if c.cached {
                    let snapshots = try json(try edge.admin("GET", "/domains/\(c.key)/snapshots"))
                    #expect(snapshots["snapshots"]?.arrayValue?.count == 1, "\(c.name): the good version is kept, nothing added")
                }
            }
            #expect(edge.isRunning)
            usleep(3_300_000)  // the cached failures expire (--failure-ttl 3)
            let counts = resourceCounts(edge.pid)
            print("FaultMatrixTests: round \(round): \(cases.count) hosts, \(counts.fds) descriptors, \(counts.threads) threads")
            if let baseline {
                #expect(counts.fds <= baseline.fds + 2, "descriptors grew from \(baseline.fds) to \(counts.fds) by round \(round)")
                #expect(counts.threads <= baseline.threads + 2, "threads grew from \(baseline.threads) to \(counts.threads) by round \(round)")
            } else {
                baseline = counts
            }
        }
        #expect(edge.stop() == 0, "the edge exits cleanly after the matrix")
    }

    func fetchCount(_ edge: EdgeProcess, _ key: String) throws -> Int {
        let r = try edge.admin("GET", "/domains/\(key)/fetches?limit=1000")
        guard r.status == 200 else { return 0 }
        return try json(r)["fetches"]?.arrayValue?.count ?? 0
    }

    func check(_ c: Case, _ r: TestHTTP.Response, round: Int, repeated: Bool) {
        let label = "round \(round) \(c.name)\(repeated ? " (again)" : "")"
        if c.cached {
            #expect(r.status == 200, "\(label): \(r.status) \(r["apple-failure-reason"] ?? "")")
            #expect(r.text == Self.good, "\(label)")
            #expect(r["x-cache"] == "hit-stale", "\(label): \(r["x-cache"] ?? "")")
            #expect(r["aasa-edge-version"] == "1", "\(label)")
            #expect(r["apple-failure-reason"] == nil, "\(label)")
        } else {
            #expect(r.status == 404, "\(label): \(r.status)")
            #expect(r.text == "Not Found\n", "\(label)")
            #expect(r["apple-failure-reason"] == c.fault.reason, "\(label): \(r["apple-failure-reason"] ?? "none")")
            #expect(r["apple-try-direct"] == (c.fault.tryDirect ? "true" : "false"), "\(label)")
            let details = (try? JSONReader.parse(r["apple-failure-details"] ?? ""))?.objectValue
            #expect(details != nil, "\(label): details \(r["apple-failure-details"] ?? "none")")
            #expect(r["apple-from"] == "https://\(c.key)/.well-known/apple-app-site-association", "\(label)")
            if repeated {
                #expect(r["x-cache"] == "hit-fresh", "\(label): \(r["x-cache"] ?? "")")
                #expect(r["cache-status"]?.hasSuffix("detail=failure") == true, "\(label)")
            } else {
                #expect(r["x-cache"] != "hit-fresh", "\(label): a new fetch was due")
            }
            #expect(r["cache-control"] == "max-age=3,public", "\(label): \(r["cache-control"] ?? "")")
        }
    }

    /// SSRF by DNS rebinding: names whose answer flips between a public address and loopback
    /// while they are fetched. Whatever a lookup returns, the edge (without the lab flag) never
    /// reaches the loopback origin: the check runs on the address being connected to.
    @Test func changingDNSAnswersNeverReachAPrivateAddress() throws {
        guard HostsFile.available else {
            print("FaultMatrixTests: needs root and unshare (private /etc/hosts); the DNS-rebinding test is not exercised")
            return
        }
        let hosts = try HostsFile()
        let names = (0..<24).map { "rebind-\($0).lab.test" }
        // 93.184.215.14 (example.com, IANA): a public address; at most a SYN goes there and the
        // connection attempt ends at the 1 s origin timeout.
        let publicAddress = "93.184.215.14"
        for name in names {
            try origin.serve(name, body: aasaBody())
            try hosts.set(name, "127.0.0.1")
        }
        let edge = try EdgeProcess(db: temporaryDB(), arguments: ["--ca-file", origin.caFile, "--origin-timeout", "1", "--failure-ttl", "1"],
                                   launcher: hosts.launcher)
        defer { edge.stop() }
        let stop = Locked(false)
        let flipper = Thread {
            var flip = false
            while !stop.withLock({ $0 }) {
                flip.toggle()
                for name in names { try? hosts.set(name, flip ? publicAddress : "127.0.0.1") }
                usleep(3_000)
            }
        }
        flipper.start()
        var reasons: [String: Int] = [:]
        for _ in 0..<3 {
            let answers = try concurrently(names) { try edge.get("/a/v1/\($0):\(origin.httpsPort)") }
            for r in answers {
                #expect(r.status == 404, "a rebinding name was served: \(r.status)")
                reasons[r["apple-failure-reason"] ?? "none", default: 0] += 1
            }
            usleep(1_100_000)  // cached failures and curl's DNS cache expire
        }
        stop.withLock { $0 = true }
        for name in names {
            #expect(try origin.requestCount(name) == 0, "\(name) reached the loopback origin")
            #expect(try origin.connectionCount(name) == 0, "\(name) handshook with the loopback origin")
        }
        let refused = reasons["SWCERR00202 Connections to private/reserved IP addresses are not allowed"] ?? 0
        #expect(refused > 0, "no lookup landed on loopback: \(reasons)")
        print("FaultMatrixTests: rebinding outcomes \(reasons)")
    }
}
