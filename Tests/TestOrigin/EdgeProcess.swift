import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A plain HTTP/1.1 exchange with a server on 127.0.0.1, one request per connection.
public enum TestHTTP {
    public struct Response: Sendable {
        public let status: Int
        /// Header names lower-cased.
        public let headers: [String: String]
        public let body: [UInt8]
        public var text: String { String(decoding: body, as: UTF8.self) }

        public init(status: Int, headers: [String: String], body: [UInt8]) {
            self.status = status
            self.headers = headers
            self.body = body
        }
        public subscript(_ name: String) -> String? { headers[name.lowercased()] }
    }

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
        public init(description: String) { self.description = description }
    }

    /// Sends `bytes` on a new connection to 127.0.0.1:`port` and returns everything received until
    /// the server closes (raw HTTP, e.g. several pipelined requests).
    public static func exchange(port: Int, _ bytes: [UInt8]) throws -> [UInt8] {
        let fd = try connect(port: port)
        defer { close(fd) }
        var timeout = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { throw Failure(description: "send failed") }
            sent += n
        }
        var data = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { break }
            data.append(contentsOf: buffer[0..<n])
        }
        return data
    }

    /// A TCP connection to 127.0.0.1:`port`; the caller closes the descriptor.
    public static func connect(port: Int) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket() failed") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            throw Failure(description: "cannot connect to 127.0.0.1:\(port)")
        }
        return fd
    }

    public static func request(port: Int, method: String = "GET", path: String, headers: [String: String] = [:],
                               body: String = "") throws -> Response {
        var head = "\(method) \(path) HTTP/1.1\r\nConnection: close\r\n"
        if headers["Host"] == nil { head += "Host: 127.0.0.1:\(port)\r\n" }
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if !body.isEmpty || method == "POST" { head += "Content-Length: \(body.utf8.count)\r\n" }
        let data = try exchange(port: port, Array((head + "\r\n" + body).utf8))
        guard let split = data.firstRange(of: Array("\r\n\r\n".utf8)) else { throw Failure(description: "no response") }
        let lines = String(decoding: data[..<split.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
        let status = Int(lines.first?.split(separator: " ").dropFirst().first ?? "") ?? 0
        var fields: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return Response(status: status, headers: fields, body: Array(data[split.upperBound...]))
    }
}

/// The real `aasa-edge serve` binary, started on a free port with a given store.
public final class EdgeProcess: @unchecked Sendable {
    public let port: Int
    public let adminToken: String
    private let process: Process
    private let stderrFile: URL

    public static var binary: URL {
        if let override = ProcessInfo.processInfo.environment["AASA_EDGE_BIN"] { return URL(fileURLWithPath: override) }
        let besideTests = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("aasa-edge")
        if FileManager.default.isExecutableFile(atPath: besideTests.path) { return besideTests }
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent(".build/debug/aasa-edge")
    }

    /// The server's process id (the launcher must `exec` the binary for this to be the server).
    public var pid: Int32 { process.processIdentifier }
    public var isRunning: Bool { process.isRunning }

    /// Starts `serve --port 0 --db DB ARGUMENTS…` (no `--db` when DB is empty) and waits for its "listening on" line. With a
    /// `launcher`, runs `LAUNCHER… BINARY serve …` instead (e.g. a private mount namespace).
    /// `adminToken` empty: no `--admin-token` (the edge reads or makes its token file);
    /// `environment`: variables added to the test's own.
    public init(db: String, arguments: [String], adminToken: String = "test-admin-token", launcher: [String] = [],
                environment: [String: String] = [:]) throws {
        self.adminToken = adminToken
        stderrFile = FileManager.default.temporaryDirectory.appendingPathComponent("edge-\(UUID().uuidString).log")
        FileManager.default.createFile(atPath: stderrFile.path, contents: nil)
        process = Process()
        let serve = ["serve", "--port", "0"] + (db.isEmpty ? [] : ["--db", db]) + (adminToken.isEmpty ? [] : ["--admin-token", adminToken]) + arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        }
        if let first = launcher.first {
            process.executableURL = URL(fileURLWithPath: first)
            process.arguments = Array(launcher.dropFirst()) + [Self.binary.path] + serve
        } else {
            process.executableURL = Self.binary
            process.arguments = serve
        }
        process.standardError = try FileHandle(forWritingTo: stderrFile)
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(30)
        var found: Int?
        while found == nil && Date() < deadline && process.isRunning {
            let log = (try? String(contentsOf: stderrFile, encoding: .utf8)) ?? ""
            if let range = log.range(of: #"listening on https?://127\.0\.0\.1:(\d+)"#, options: .regularExpression) {
                found = Int(log[range].split(separator: ":").last ?? "")
            } else {
                usleep(20_000)
            }
        }
        guard let found else {
            process.terminate()
            let output = (try? String(contentsOf: stderrFile, encoding: .utf8)) ?? ""
            throw TestHTTP.Failure(description: "the edge did not start: \(output)")
        }
        port = found
    }

    public var log: String { (try? String(contentsOf: stderrFile, encoding: .utf8)) ?? "" }

    /// SIGTERM, then the exit status.
    @discardableResult
    public func stop() -> Int32 {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
        return process.terminationStatus
    }

    deinit {
        if process.isRunning { process.terminate() }
        try? FileManager.default.removeItem(at: stderrFile)
    }

    public func get(_ path: String, headers: [String: String] = [:]) throws -> TestHTTP.Response {
        try TestHTTP.request(port: port, path: path, headers: headers)
    }

    public func admin(_ method: String, _ path: String, body: String = "", token: String? = nil) throws -> TestHTTP.Response {
        try TestHTTP.request(port: port, method: method, path: "/admin/v1" + path,
                             headers: ["Authorization": "Bearer \(token ?? adminToken)"], body: body)
    }
}
