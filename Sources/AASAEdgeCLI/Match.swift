import AASAEngine
import ArgumentParser
import Foundation

struct Match: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Decide match, exclude or no_match for URLs against an AASA file, as devices do.",
        discussion: """
        For each URL prints the decision and the details entry and rule that decided it.
        --jsonl runs the conformance protocol instead: one JSON object per line on stdin, \
        {"id","aasa","domain","appId","url"} ("aasa" an object or a JSON string, "domain" "" or \
        absent for no host check), one {"id","decision"} (or {"id","error"}) line out per line in.
        A URL that cannot be parsed gets its own error line ({"url","error"} with --json) and the \
        other URLs are still decided.
        Exit status: 0; 1 when --expect is given and a decision differs, or FILE is not an AASA \
        object; 2 on a usage error or when any URL could not be parsed; 3 when FILE cannot be read.
        """
    )

    @Argument(help: ArgumentHelp("The AASA file ('-' reads standard input).", valueName: "FILE"))
    var file: String?

    @Argument(help: ArgumentHelp("URLs to decide.", valueName: "URL"))
    var urls: [String] = []

    @Option(name: .customLong("app-id"), help: ArgumentHelp("The app, as TEAMID.bundle.id.", valueName: "ID"))
    var appID: String?

    @Option(help: ArgumentHelp("The domain the file is served for: a URL on another host is no_match.", valueName: "D"))
    var domain: String?

    @Option(help: ArgumentHelp("Exit 1 unless every URL gets this decision (match, exclude, no_match).", valueName: "DECISION"))
    var expect: String?

    @Flag(help: "Print the results as one JSON object on stdout.")
    var json = false

    @Flag(help: "Conformance protocol: JSON lines on stdin, one result line per input line.")
    var jsonl = false

    func validate() throws {
        if jsonl {
            guard file == nil, urls.isEmpty, appID == nil, expect == nil, !json else {
                throw ValidationError("--jsonl reads everything from stdin; give no FILE, URL, --app-id, --expect or --json")
            }
            return
        }
        guard file != nil else { throw ValidationError("missing FILE") }
        guard appID != nil else { throw ValidationError("missing --app-id ID") }
        guard !urls.isEmpty else { throw ValidationError("give at least one URL to decide") }
        if let expect, Decision(rawValue: expect) == nil {
            throw ValidationError("--expect must be match, exclude or no_match, not '\(expect)'")
        }
    }

    func run() throws {
        if jsonl {
            JSONLinesMatcher().run()
            return
        }
        guard let file, let appID else { return }
        let parsedURLs: [Result<MatchURL, MatchURL.ParseError>] = urls.map { url in Result { () throws(MatchURL.ParseError) in try MatchURL(url) } }
        let (document, aasa) = try InputFile.readDocument(file)
        let errors = aasa.diagnostics.filter { $0.severity == .error }.count
        if errors > 0 && !json {
            Console.error("note: \(file) has \(errors) validation error\(errors == 1 ? "" : "s"); matching as devices would (see `aasa-edge validate`)")
        }
        let compiled = CompiledAASA(document)
        let outcomes = parsedURLs.map { parsed in parsed.map { compiled.match($0, appID: appID, domain: domain) } }
        let results = outcomes.compactMap { try? $0.get() }
        if json {
            let entries: [JSONValue] = zip(urls, outcomes).map { url, outcome in
                guard case .success(let result) = outcome else {
                    guard case .failure(let error) = outcome else { return .null }
                    return .object(JSONObject([JSONMember("url", .string(url)), JSONMember("error", .string(error.description))]))
                }
                return .object(JSONObject([
                    JSONMember("url", .string(url)),
                    JSONMember("decision", .string(result.decision.rawValue)),
                    JSONMember("reason", .string(result.reason.rawValue)),
                    JSONMember("detail", result.detail.map { .string($0.description) } ?? .null),
                    JSONMember("rule", result.rule.map { .string($0.description) } ?? .null),
                    JSONMember("ruleSource", result.ruleSource ?? .null),
                ]))
            }
            Console.out(JSONWriter.string(.object(JSONObject([
                JSONMember("appID", .string(appID)),
                JSONMember("results", .array(entries)),
            ]))))
        } else {
            let width = max(5, results.map(\.decision.rawValue.count).max() ?? 0)
            for (url, outcome) in zip(urls, outcomes) {
                switch outcome {
                case .success(let result):
                    let decision = result.decision.rawValue.padding(toLength: width, withPad: " ", startingAt: 0)
                    Console.out("\(decision)  \(url)  \(Self.explain(result))")
                case .failure(let error):
                    Console.out("error".padding(toLength: width, withPad: " ", startingAt: 0) + "  " + OutsideText.clean(url, limit: 1024) + "  (" + error.description + ")")
                }
            }
        }
        let unparsable = outcomes.filter { if case .failure = $0 { return true } else { return false } }.count
        if unparsable > 0 {
            throw CLIFailure.usage("\(unparsable) of \(urls.count) URL\(urls.count == 1 ? "" : "s") could not be parsed")
        }
        if let expect, results.contains(where: { $0.decision.rawValue != expect }) {
            throw ExitCode(ExitStatus.bad.rawValue)
        }
    }

    static func explain(_ result: MatchResult) -> String {
        switch result.reason {
        case .rule:
            let place = result.rule?.description ?? "?"
            if case .string(let text)? = result.ruleSource {
                // A legacy `paths` string: say which one, and whether it was a NOT rule.
                let quoted = JSONWriter.string(.string(text))
                return result.decision == .exclude
                    ? "(\(place): the NOT rule \(quoted) matched, so the URL is excluded)"
                    : "(\(place): the path \(quoted) matched)"
            }
            let source = result.ruleSource.map { JSONWriter.string($0) } ?? ""
            return result.decision == .exclude
                ? "(\(place) \(source) matched; it excludes the URL)"
                : "(\(place) \(source) matched)"
        case .noRuleMatched: return "(no rule of \(result.detail?.description ?? "?") matched)"
        case .detailWithoutPatterns: return "(\(result.detail?.description ?? "?") has no components or paths: every URL matches)"
        case .appNotListed: return "(the app is not listed under applinks)"
        case .hostMismatch: return "(the URL's host is not the domain)"
        }
    }
}

/// `match --jsonl`: the conformance protocol.
struct JSONLinesMatcher {
    func run() {
        var cache: (key: String, compiled: CompiledAASA?)?
        while let line = readLine(strippingNewline: true) {
            if line.allSatisfy(\.isWhitespace) { continue }
            var id: JSONValue = .null
            let output: JSONValue
            do {
                guard case .object(let request) = try JSONReader.parse(line) else {
                    throw JSONLinesError("each line must be a JSON object")
                }
                id = request["id"] ?? .null
                let aasaText: String
                switch request["aasa"] {
                case .object?: aasaText = JSONWriter.string(request["aasa"]!)
                case .string(let text)?: aasaText = text
                default: throw JSONLinesError("'aasa' must be an object or a JSON string")
                }
                guard let appID = request["appId"]?.stringValue else { throw JSONLinesError("'appId' must be a string") }
                guard let urlText = request["url"]?.stringValue else { throw JSONLinesError("'url' must be a string") }
                let domain: String?
                switch request["domain"] {
                case nil, .null?: domain = nil
                case .string(let d)?: domain = d
                default: throw JSONLinesError("'domain' must be a string")
                }
                if cache?.key != aasaText {
                    let file = AASAFile.read(aasaText)
                    cache = (aasaText, file.document.map(CompiledAASA.init))
                }
                guard let compiled = cache?.compiled else { throw JSONLinesError("'aasa' is not a JSON object") }
                let url: MatchURL
                do { url = try MatchURL(urlText) } catch { throw JSONLinesError(error.description) }
                let result = compiled.match(url, appID: appID, domain: domain)
                output = .object(JSONObject([JSONMember("id", id), JSONMember("decision", .string(result.decision.rawValue))]))
            } catch let error as JSONLinesError {
                output = .object(JSONObject([JSONMember("id", id), JSONMember("error", .string(error.message))]))
            } catch {
                output = .object(JSONObject([JSONMember("id", id), JSONMember("error", .string("invalid JSON: \(error)"))]))
            }
            Console.out(JSONWriter.string(output))
        }
    }

    struct JSONLinesError: Error {
        let message: String
        init(_ message: String) { self.message = message }
    }
}
