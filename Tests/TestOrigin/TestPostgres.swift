import Foundation

/// A real PostgreSQL server for tests: `initdb` in a temporary folder and `pg_ctl start` on a free
/// loopback port (as the `postgres` user when the tests run as root: the server refuses root).
/// Each test takes a database of its own (`database()`).
public final class TestPostgres: @unchecked Sendable {
    public let port: Int
    public let folder: URL
    private let bin: URL
    private let runAs: [String]
    private let lock = NSLock()
    private var databases = 0

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// The shared server, or the reason it could not start (a test failure, not a skip).
    public static func server() throws -> TestPostgres { try shared.get() }

    /// One server per test process, started on first use.
    public static let shared: Result<TestPostgres, Failure> = {
        // pg_ctl leaves the server running on its own: stopped when the test process exits.
        atexit {
            if case .success(let server) = TestPostgres.shared {
                server.stop()
                try? FileManager.default.removeItem(at: server.folder)
            }
        }
        do { return .success(try TestPostgres()) } catch let failure as Failure { return .failure(failure) } catch {
            return .failure(Failure(description: "\(error)"))
        }
    }()

    /// The newest installed server's binaries (`/usr/lib/postgresql/N/bin`).
    static func binaries() throws -> URL {
        let root = URL(fileURLWithPath: "/usr/lib/postgresql")
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? []).compactMap(Int.init).sorted()
        guard let newest = versions.last else {
            throw Failure(description: "no PostgreSQL server in /usr/lib/postgresql (make test installs Debian's postgresql)")
        }
        return root.appendingPathComponent("\(newest)/bin")
    }

    public init() throws {
        bin = try Self.binaries()
        folder = URL(fileURLWithPath: "/tmp/aasa-edge-pg-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        if getuid() == 0 {
            runAs = ["/usr/sbin/runuser", "-u", "postgres", "--"]
            _ = try Self.run(["/bin/chown", "postgres", folder.path])
        } else {
            runAs = []
        }
        port = try Self.freePort()
        _ = try Self.run(runAs + [bin.appendingPathComponent("initdb").path, "-D", data, "-U", "postgres", "--auth=trust",
                                  "-E", "UTF8", "--locale=C", "--no-sync"])
        try start()
    }

    private var data: String { folder.appendingPathComponent("data").path }

    public func start() throws {
        _ = try Self.run(runAs + [bin.appendingPathComponent("pg_ctl").path, "-D", data, "-w", "-l", folder.appendingPathComponent("log").path,
                                  "-o", "-p \(port) -k \(folder.path) -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=300",
                                  "start"])
    }

    /// `pg_ctl stop -m fast`: every connection is closed at once.
    /// (`start()` brings it back on the same port with the same data.)
    public func stop() {
        _ = try? Self.run(runAs + [bin.appendingPathComponent("pg_ctl").path, "-D", data, "-m", "fast", "-w", "stop"])
    }

    /// A new empty database; its `postgres://` URL.
    public func database() throws -> String {
        let name = lock.withLock { () -> String in
            databases += 1
            return "t\(getpid())_\(databases)"
        }
        _ = try psql("CREATE DATABASE \(name)", database: "postgres")
        return url(name)
    }

    public func url(_ database: String) -> String { "postgres://postgres@127.0.0.1:\(port)/\(database)?sslmode=disable" }

    /// Runs SQL with psql; its output (unaligned, tuples only).
    @discardableResult
    public func psql(_ sql: String, database: String) throws -> String {
        try Self.run([bin.appendingPathComponent("psql").path, "-h", "127.0.0.1", "-p", "\(port)", "-U", "postgres", "-d", database,
                      "-v", "ON_ERROR_STOP=1", "-At", "-c", sql])
    }

    /// The database name of a URL made by `database()`.
    public static func name(ofURL url: String) -> String {
        String(url.split(separator: "/").last!.split(separator: "?").first!)
    }

    /// Runs a command to its end; its output (stdout and stderr).
    ///
    /// posix_spawn and waitpid, not Foundation's Process: `pg_ctl start` leaves a server running
    /// that would inherit the descriptors Process watches to see its child end, so Process would
    /// wait for the server to stop. Output goes to a file for the same reason.
    @discardableResult
    static func run(_ arguments: [String]) throws -> String {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("pg-run-\(UUID().uuidString).out")
        defer { try? FileManager.default.removeItem(at: file) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, file.path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // Nothing else of this process reaches the server pg_ctl leaves running: it would keep,
        // say, the pipe Foundation watches to see another child (the test origin) end.
        let open = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []).compactMap { Int32($0) }
        for fd in open where fd > 2 { posix_spawn_file_actions_addclose(&actions, fd) }
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, arguments[0], &actions, nil, &argv, environ)
        guard spawned == 0 else { throw Failure(description: "cannot run \(arguments[0]): \(String(cString: strerror(spawned)))") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let text = ((try? String(contentsOf: file, encoding: .utf8)) ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        let exited = status & 0x7f == 0
        let code = (status >> 8) & 0xff
        guard exited && code == 0 else {
            throw Failure(description: "\(arguments.joined(separator: " ")) failed (status \(status)): \(text)")
        }
        return text
    }

    /// A loopback port nothing listens on now.
    public static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw Failure(description: "no free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(at: folder)
    }
}
