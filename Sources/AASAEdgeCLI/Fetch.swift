import AASAEngine
import ArgumentParser
import Foundation
import EdgeModel
import OriginFetcher

/// The fetch flags shared by `fetch`, `serve` and `probe`.
struct OriginOptions: ParsableArguments {
    @Option(name: .customLong("connect-to"), help: ArgumentHelp("Connect to CH:CP when fetching H:P; SNI, Host and certificate checks stay on H. Always permitted. Repeatable.", valueName: "H:P:CH:CP"))
    var connectTo: [String] = []

    @Option(help: ArgumentHelp("Use ADDR for H:P instead of DNS (subject to the private-address policy). Repeatable.", valueName: "H:P:ADDR"))
    var resolve: [String] = []

    @Option(name: .customLong("ca-file"), help: ArgumentHelp("CA bundle for origin TLS (default: the system store).", valueName: "PEM"))
    var caFile: String?

    @Option(name: .customLong("origin-timeout"), help: ArgumentHelp("Seconds for the whole origin transfer; decimals allowed.", valueName: "SECONDS"))
    var originTimeout: Number = 5

    @Flag(name: .customLong("allow-private-origins"), help: "Lab mode: permit origins on private, loopback, link-local or reserved addresses.")
    var allowPrivateOrigins = false

    var configuration: FetcherConfiguration {
        FetcherConfiguration(timeout: originTimeout.value, connectTo: connectTo, resolve: resolve, caFile: caFile,
                             allowPrivateOrigins: allowPrivateOrigins)
    }

    func validate() throws {
        do {
            try configuration.validate()
        } catch {
            throw ValidationError(error.message)
        }
    }

    /// The configuration, after checking that its files can be read (exit 3 if not).
    func checkedConfiguration() throws(CLIFailure) -> FetcherConfiguration {
        let configuration = configuration
        do {
            try configuration.checkFiles()
        } catch {
            throw .io(error.message)
        }
        return configuration
    }
}

struct Fetch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Fetch a host's AASA file from its origin exactly as the edge would.",
        discussion: """
        Fetches https://HOST[:PORT]/.well-known/apple-app-site-association with Apple's CDN rules \
        (HTTPS only, no redirects, 131072-byte cap, User-Agent AASA-Bot/1.0.0) and prints the \
        status, the failure reason the edge would serve, headers of interest, timings, size, sha256 \
        and the AASA validation.
        Exit status: 0 when the edge would serve the file (200, a JSON object, at most 131072 \
        bytes; validation errors are printed but do not change it), 1 otherwise, 2 on a usage \
        error (including a malformed HOST), 3 when --ca-file cannot be read.

        \(EnvironmentDefaults.help(for: "fetch"))
        """
    )

    @Argument(help: ArgumentHelp("The host, as a device would ask the CDN for it (name or name:port).", valueName: "HOST"))
    var host: String

    @OptionGroup var origin: OriginOptions

    @Flag(help: "Print the result as one JSON object on stdout.")
    var json = false

    func run() async throws {
        let originHost = try StoreReader.originHost(host)
        let fetcher = OriginFetcher(configuration: try origin.checkedConfiguration())
        let result = await fetcher.fetch(originHost)
        fetcher.shutdown()
        let validation = result.isUsable ? AASAFile.read(result.body) : nil
        if json {
            Console.out(JSONWriter.string(FetchReport.json(result, validation: validation)))
        } else {
            Console.out(FetchReport.human(result, validation: validation))
        }
        if case .local(let problem) = result.outcome { throw CLIFailure.io("the fetch could not start: \(problem)") }
        if !result.isUsable { throw ExitCode(ExitStatus.bad.rawValue) }
    }
}

enum FetchReport {
    static func json(_ r: FetchResult, validation: AASAFile?) -> JSONValue {
        func string(_ s: String?) -> JSONValue { s.map { .string($0) } ?? .null }
        func number(_ d: Double) -> JSONValue { .number(JSONNumber(String(format: "%.6f", d))) }
        let failure: JSONValue = r.failure.map {
            .object(JSONObject([JSONMember("reason", .string($0.reason)), JSONMember("details", .object($0.details)),
                                JSONMember("tryDirect", .bool($0.tryDirect))]))
        } ?? .null
        return .object(JSONObject([
            JSONMember("host", .string(r.host.description)),
            JSONMember("url", .string(r.url)),
            JSONMember("usable", .bool(r.isUsable)),
            JSONMember("status", r.status.map { .number(JSONNumber(String($0))) } ?? .null),
            JSONMember("statusLine", string(r.statusLine)),
            JSONMember("failure", failure),
            JSONMember("headers", .object(JSONObject([
                JSONMember("etag", string(r.etag)), JSONMember("lastModified", string(r.lastModified)),
                JSONMember("contentType", string(r.contentType)), JSONMember("cacheControl", string(r.cacheControl)),
                JSONMember("location", string(r.location)),
            ]))),
            JSONMember("size", r.isUsable ? .number(JSONNumber(String(r.body.count))) : .null),
            JSONMember("sha256", string(r.sha256)),
            JSONMember("connectedIP", string(r.connectedIP)),
            JSONMember("connectedPort", r.connectedPort.map { .number(JSONNumber(String($0))) } ?? .null),
            JSONMember("timings", .object(JSONObject([
                JSONMember("dns", number(r.timings.dns)), JSONMember("connect", number(r.timings.connect)),
                JSONMember("tls", number(r.timings.tls)), JSONMember("firstByte", number(r.timings.firstByte)),
                JSONMember("total", number(r.timings.total)),
            ]))),
            JSONMember("validation", validation.map {
                .object(JSONObject([JSONMember("valid", .bool($0.isValid)), JSONMember("diagnostics", .array($0.diagnostics.map(\.json)))]))
            } ?? .null),
        ]))
    }

    static func human(_ r: FetchResult, validation: AASAFile?) -> String {
        func ms(_ seconds: Double) -> String { String(format: "%.1f ms", seconds * 1000) }
        var lines = ["GET \(r.url)"]
        func row(_ name: String, _ value: String?) {
            guard let value else { return }
            lines.append(name.padding(toLength: 14, withPad: " ", startingAt: 0) + value)
        }
        row("connected", r.connectedIP.map { ip in r.connectedPort.map { "\(ip) port \($0)" } ?? ip })
        row("status", r.statusLine ?? "(no response)")
        row("content-type", r.contentType)
        row("etag", r.etag)
        row("last-modified", r.lastModified)
        row("cache-control", r.cacheControl.map { "\($0) (recorded, not obeyed)" })
        row("location", r.location)
        if r.isUsable {
            row("size", "\(r.body.count) bytes")
            row("sha256", r.sha256)
        }
        let t = r.timings
        row("timings", "dns \(ms(t.dns)) · connect \(ms(t.connect)) · tls \(ms(t.tls)) · first byte \(ms(t.firstByte)) · total \(ms(t.total))")
        switch r.outcome {
        case .fetched: row("result", "usable: the edge would serve this file")
        case .notModified: row("result", "304 Not Modified")
        case .failed(let failure):
            row("result", failure.reason)
            row("details", failure.detailsJSON)
            row("try direct", String(failure.tryDirect))
        case .local(let problem):
            row("result", "not fetched: \(problem)")
        case .loopDetected:
            row("result", "508 Loop Detected (only a parent edge answers this)")
        }
        if let validation {
            lines.append(Report.validation(validation, name: "validation"))
        }
        return lines.joined(separator: "\n")
    }
}
