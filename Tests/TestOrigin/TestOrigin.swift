import AASAEngine
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The real HTTPS test origin (`test-origin.py`) as seen from a test: start it, set what each host
/// does, count requests, stop it. Hosts live under `lab.test`; reach them with `connectTo(_:)`.
public final class TestOrigin: @unchecked Sendable {
    public let httpsPort: Int
    public let controlPort: Int
    /// PEM of the CA that signed the origin's certificates (generated at start).
    public let caFile: String
    private let process: Process
    private let input: Pipe
    private let workdir: URL

    public struct StartError: Error, CustomStringConvertible {
        public let description: String
    }

    public static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("test-origin.py")

    public init() throws {
        workdir = FileManager.default.temporaryDirectory.appendingPathComponent("aasa-edge-origin-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: workdir, withIntermediateDirectories: true)
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", Self.script.path, "--workdir", workdir.path]
        input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            line.append(chunk)
        }
        guard let object = try? JSONReader.parse(String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)).objectValue,
              let https = object["https"]?.numberInt,
              let control = object["control"]?.numberInt, let ca = object["ca"]?.stringValue else {
            process.terminate()
            throw StartError(description: "the test origin did not start: \(String(decoding: line, as: UTF8.self))")
        }
        httpsPort = https
        controlPort = control
        caFile = ca
    }

    deinit { stop() }

    public func stop() {
        guard process.isRunning else { return }
        try? input.fileHandleForWriting.close()
        process.terminate()
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: workdir)
    }

    /// A CONNECT_TO entry sending `host` (port 443) to this origin.
    public func connectTo(_ host: String) -> String { "\(host):443:127.0.0.1:\(httpsPort)" }

    /// Sets what `host` answers from now on.
    public func set(_ host: String, _ behaviour: JSONValue) throws {
        _ = try control("PUT", "/hosts/\(host)", body: JSONWriter.string(behaviour))
    }

    /// Serves `body` with status 200 and the given headers.
    public func serve(_ host: String, body: String, headers: JSONValue = [:], etag: String? = nil) throws {
        var behaviour: [JSONMember] = [JSONMember("status", 200), JSONMember("body", .string(body)), JSONMember("headers", headers)]
        if let etag { behaviour.append(JSONMember("etag", .string(etag))) }
        try set(host, .object(JSONObject(behaviour)))
    }

    /// Requests the origin has received for `host`.
    public func requestCount(_ host: String) throws -> Int {
        try control("GET", "/hosts/\(host)")["count"]?.numberInt ?? -1
    }

    /// TLS connections (handshakes) the origin has accepted for `host`.
    public func connectionCount(_ host: String) throws -> Int {
        try control("GET", "/hosts/\(host)")["connections"]?.numberInt ?? -1
    }

    /// Request headers of the last request for `host` (lower-cased names).
    public func lastRequestHeaders(_ host: String) throws -> JSONObject {
        try control("GET", "/hosts/\(host)")["lastHeaders"]?.objectValue ?? JSONObject()
    }

    public func reset() throws { _ = try control("DELETE", "/hosts") }

    /// One request to the control API on a fresh connection (the control server closes it).
    private func control(_ method: String, _ path: String, body: String = "") throws -> JSONObject {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw StartError(description: "socket() failed") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(controlPort).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw StartError(description: "cannot reach the test origin's control port") }
        let request = "\(method) \(path) HTTP/1.0\r\nHost: control\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
        _ = request.withCString { send(fd, $0, strlen($0), 0) }
        var response = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { break }
            response.append(contentsOf: buffer[0..<n])
        }
        let text = String(decoding: response, as: UTF8.self)
        guard let split = text.range(of: "\r\n\r\n") else { throw StartError(description: "bad control response") }
        return (try? JSONReader.parse(String(text[split.upperBound...])).objectValue) ?? JSONObject()
    }
}

extension JSONValue {
    var numberInt: Int? {
        if case .number(let n) = self { return Int(n.text) }
        return nil
    }
}
