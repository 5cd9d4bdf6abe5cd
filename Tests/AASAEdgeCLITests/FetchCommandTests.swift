import AASAEngine
import Foundation
import TestOrigin
import Testing

let origin: TestOrigin = try! TestOrigin()
let sample = #"{"applinks":{"details":[{"appIDs":["ABCDE12345.com.example.app"],"components":[{"/":"/buy/*"}]}]}}"#

@Suite(.serialized) struct FetchCommandTests {
    @Test func usableFileExitsZero() throws {
        try origin.serve("cli-ok.lab.test", body: sample, headers: ["Content-Type": "application/json"])
        let r = try Binary.run(["fetch", "cli-ok.lab.test", "--connect-to", origin.connectTo("cli-ok.lab.test"), "--ca-file", origin.caFile])
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(r.stdout.contains("status        200 OK"))
        #expect(r.stdout.contains("result        usable"))
        #expect(r.stdout.contains("validation: valid"))
        let j = try Binary.run(["fetch", "--json", "cli-ok.lab.test", "--connect-to", origin.connectTo("cli-ok.lab.test"), "--ca-file", origin.caFile])
        let object = try json(j.stdout)
        #expect(object["usable"] == .bool(true))
        #expect(object["sha256"] == .string(try sha256Hex(sample)))
        #expect(object["size"] == .number(JSONNumber(String(sample.utf8.count))))
        #expect(object["validation"]?.objectValue?["valid"] == .bool(true))
    }

    @Test func failureExitsOneWithTheReason() throws {
        try origin.set("cli-404.lab.test", ["status": 404])
        let r = try Binary.run(["fetch", "--json", "cli-404.lab.test", "--connect-to", origin.connectTo("cli-404.lab.test"), "--ca-file", origin.caFile])
        #expect(r.status == 1)
        let failure = try #require(try json(r.stdout)["failure"]?.objectValue)
        #expect(failure["reason"] == "SWCERR00101 Bad HTTP Response: 404 Not Found")
        #expect(failure["tryDirect"] == .bool(false))
        let human = try Binary.run(["fetch", "cli-404.lab.test", "--connect-to", origin.connectTo("cli-404.lab.test"), "--ca-file", origin.caFile])
        #expect(human.status == 1)
        #expect(human.stdout.contains("result        SWCERR00101 Bad HTTP Response: 404 Not Found"))
        #expect(human.stdout.contains(#"details       {"status":"404 Not Found"}"#))
    }

    @Test func environmentVariablesAndFlagPrecedence() throws {
        try origin.serve("cli-env.lab.test", body: sample)
        let env = ["AASA_EDGE_CONNECT_TO": origin.connectTo("cli-env.lab.test"), "AASA_EDGE_CA_FILE": origin.caFile,
                   "AASA_EDGE_ORIGIN_TIMEOUT": "2"]
        #expect(try Binary.run(["fetch", "cli-env.lab.test"], environment: env).status == 0)
        // The flag wins over the variable: a wrong CA on the command line fails TLS.
        let scratch = try Scratch()
        let bogusCA = try scratch.file("bogus.pem", "not a certificate\n")
        let overridden = try Binary.run(["fetch", "--json", "cli-env.lab.test", "--ca-file", bogusCA], environment: env)
        #expect(overridden.status == 1)
        #expect(try json(overridden.stdout)["failure"]?.objectValue?["reason"] == "SWCERR00204 TLS Failure")
        // Booleans: true/false/1/0 only.
        #expect(try Binary.run(["fetch", "cli-env.lab.test"], environment: env.merging(["AASA_EDGE_ALLOW_PRIVATE_ORIGINS": "yes"]) { $1 }).status == 2)
        // An empty variable is unset (compose's `${VAR:-}`), not an empty value.
        #expect(try Binary.run(["fetch", "cli-env.lab.test"], environment: env.merging(["AASA_EDGE_ORIGIN_TIMEOUT": ""]) { $1 }).status == 0)
    }

    @Test func usageAndIOErrors() throws {
        for host in ["not a host", "127.0.0.1", "localhost", "example.com:99999"] {
            let r = try Binary.run(["fetch", host])
            #expect(r.status == 2, "\(host)")
            #expect(r.stderr.hasPrefix("error: invalid host"), "\(r.stderr)")
        }
        #expect(try Binary.run(["fetch", "x.lab.test", "--connect-to", "nonsense"]).status == 2)
        let unreadable = try Binary.run(["fetch", "x.lab.test", "--ca-file", "/nonexistent.pem"])
        #expect(unreadable.status == 3)
        #expect(unreadable.stderr == "error: --ca-file /nonexistent.pem cannot be read\n")
    }

    @Test func privateAddressRefusedByDefault() throws {
        try origin.serve("cli-private.lab.test", body: sample)
        let host = "cli-private.lab.test:\(origin.httpsPort)"
        let resolve = "cli-private.lab.test:\(origin.httpsPort):127.0.0.1"
        let refused = try Binary.run(["fetch", "--json", host, "--resolve", resolve, "--ca-file", origin.caFile])
        #expect(refused.status == 1)
        #expect(try json(refused.stdout)["failure"]?.objectValue?["details"] == ["address": "127.0.0.1"])
        #expect(try Binary.run(["fetch", host, "--resolve", resolve, "--ca-file", origin.caFile, "--allow-private-origins"]).status == 0)
    }
}

/// sha256 of a string via the system's sha256sum, independent of the project's implementation.
func sha256Hex(_ text: String) throws -> String {
    let scratch = try Scratch()
    let path = try scratch.file("body", text)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["sha256sum", path]
    let pipe = Pipe()
    process.standardOutput = pipe
    try process.run()
    process.waitUntilExit()
    return String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).split(separator: " ").first.map(String.init) ?? ""
}
