import AASAEngine
import Foundation

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

    /// The origin's own certificate and key (one PEM file) for `*.lab.test`, signed by `caFile`.
    public var labCertificate: String { URL(fileURLWithPath: caFile).deletingLastPathComponent().appendingPathComponent("default.pem").path }

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

    /// One request to the control API.
    private func control(_ method: String, _ path: String, body: String = "") throws -> JSONObject {
        let response = try TestHTTP.request(port: controlPort, method: method, path: path, body: body)
        return (try? JSONReader.parse(response.text).objectValue) ?? JSONObject()
    }
}

extension JSONValue {
    public var numberInt: Int? {
        if case .number(let n) = self { return Int(n.text) }
        return nil
    }
}
