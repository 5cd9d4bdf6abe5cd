import AASAEngine
import ArgumentParser
import EdgeCore
import Foundation
import EdgeModel
import EdgeHTTP
import PropagationAnalysis
import OriginFetcher
import SnapshotStore

struct ProbeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "probe",
        abstract: "Watch an origin and a CDN side by side and measure how long each origin change takes to reach the CDN.",
        discussion: """
        Every --interval seconds the origin is fetched through the edge's fetcher (Apple's rules, \
        the fetch flags below) and the CDN URL with a plain GET (http or https, no address \
        policy). Each observation (time, source, status, sha256, Age, Cache-Control, X-Cache, \
        Apple-Failure-*) is recorded in the store (--db). Contents are compared by sha256, then by \
        canonical JSON, in case a CDN re-serialises. A difference already present at start counts \
        as a change made at start (its delay is a lower bound).
        Stops after --duration seconds, on Ctrl-C, or with --until-converged once the CDN serves \
        the origin's latest content after a change. Prints a line per observation (stderr with \
        --json) and a summary; --json prints {"host","observations","changes":[…]}; --plot draws \
        the timeline as SVG.
        Exit status: 0; 1 with --until-converged when the CDN had not converged in time; 2 usage \
        error; 3 when the store or the plot file cannot be written.

        \(EnvironmentDefaults.help(for: "probe"))
        """
    )

    @Argument(help: ArgumentHelp("The host (name or name:port).", valueName: "HOST"))
    var host: String

    @Option(name: .customLong("cdn-url"), help: ArgumentHelp("The CDN URL; {host} is replaced. Any aasa-edge works too, e.g. http://127.0.0.1:8080/a/v1/{host}.", valueName: "TEMPLATE"))
    var cdnURL = ProbeConfiguration.appleCDNTemplate

    @Option(name: .customLong("interval"), help: ArgumentHelp("Seconds between observations; decimals allowed.", valueName: "SECONDS"))
    var interval: Number = 60

    @Option(name: .customLong("duration"), help: ArgumentHelp("Stop after this many seconds.", valueName: "SECONDS"))
    var duration: Number = 3600

    @Flag(name: .customLong("until-converged"), help: "Stop once the CDN serves the origin's latest content after a change.")
    var untilConverged = false

    @Option(help: ArgumentHelp("The SQLite store the observations are recorded in (created if missing).", valueName: "FILE"))
    var db = "./var/aasa-edge.sqlite"

    @Option(help: ArgumentHelp("Draw the timeline (origin vs CDN content, delays marked) to this SVG file.", valueName: "FILE.svg"))
    var plot: String?

    @Flag(help: "Print the result as one JSON object on stdout (progress goes to stderr).")
    var json = false

    @OptionGroup var origin: OriginOptions

    func validate() throws {
        guard interval.value > 0, interval.value.isFinite else { throw ValidationError("--interval must be a positive number of seconds") }
        guard duration.value >= 0, duration.value.isFinite else { throw ValidationError("--duration must be a number of seconds") }
        guard cdnURL.hasPrefix("http://") || cdnURL.hasPrefix("https://") else {
            throw ValidationError("--cdn-url must be an http:// or https:// URL template")
        }
    }

    func run() async throws {
        let originHost = try StoreReader.originHost(host)
        let fetcherConfiguration = try origin.checkedConfiguration()
        let store = try StoreReader.openOrCreate(db)
        let configuration = ProbeConfiguration(host: originHost, cdnTemplate: cdnURL, interval: interval.value, duration: duration.value,
                                               untilConverged: untilConverged)
        let fetcher = OriginFetcher(configuration: fetcherConfiguration)
        defer { fetcher.shutdown() }
        let probe = Probe(configuration: configuration, fetcher: fetcher, store: store)

        // Ctrl-C ends the run after the current observation and still prints the result.
        signal(SIGINT, SIG_IGN)
        let interrupt = DispatchSource.makeSignalSource(signal: SIGINT)
        interrupt.setEventHandler { probe.stop() }
        interrupt.resume()
        defer { interrupt.cancel() }

        let toStderr = json
        let progress: @Sendable (String) -> Void = { line in
            if toStderr { Console.error(line) } else { Console.out(line) }
        }
        progress("probing \(originHost) every \(format(interval.value)) s: origin \(originHost.originURL) vs CDN \(configuration.cdnURL)")
        let start = Date().timeIntervalSince1970
        let report: ProbeReport
        do {
            report = try await probe.run { origin, cdn, changes in
                progress(Self.line(origin: origin, cdn: cdn, changes: changes, start: start))
            }
        } catch {
            throw CLIFailure.io("the store \(db) could not be written: \(error)")
        }

        if let plot {
            let svg = ProbePlot.svg(host: originHost.description, cdnURL: configuration.cdnURL, records: report.records, changes: report.changes)
            do {
                try Data(svg.utf8).write(to: URL(fileURLWithPath: plot))
            } catch {
                throw CLIFailure.io("cannot write the plot \(plot): \(error.localizedDescription)")
            }
        }
        if json {
            Console.out(try JSONValueEncoder().string(report.summary(configuration)))
        } else {
            Console.out(Self.summary(report))
            if let plot { Console.out("plot: \(plot)") }
        }
        if untilConverged && !ProbeAnalysis.converged(report.changes) {
            throw CLIFailure.bad("the CDN had not served the origin's latest content when the probe stopped")
        }
    }

    private func format(_ seconds: Double) -> String { String(format: "%g", seconds) }

    static func describe(_ r: ProbeRecord) -> String {
        if let sha = r.sha256, r.status == 200 {
            var text = "200 \(sha.prefix(10))"
            if let age = r.age { text += " Age \(age)" }
            if let xCache = r.xCache { text += " \(xCache)" }
            return text
        }
        if let status = r.status { return "\(status)" + (r.failureReason.map { " \($0)" } ?? "") }
        return "no answer" + (r.failureReason.map { " \($0)" } ?? r.error.map { " (\($0))" } ?? "")
    }

    static func line(origin: ProbeRecord, cdn: ProbeRecord, changes: [ProbeChange], start: Double) -> String {
        let same = origin.sha256 != nil && ProbeAnalysis.sameContent((origin.sha256!, origin.canonicalSha256), cdn)
        var text = String(format: "+%7.1fs  origin %@  |  CDN %@", origin.at - start, describe(origin), describe(cdn))
        text += same ? "  (same)" : "  (differs)"
        if let last = changes.last, last.cdnCaughtUpAt == cdn.at, let delay = last.delaySeconds {
            text += String(format: "  → CDN caught up after %.1f s", delay)
        } else if let last = changes.last, last.originChangedAt == origin.at, !last.observedAtStart {
            text += "  → origin changed"
        }
        return text
    }

    static func summary(_ report: ProbeReport) -> String {
        var lines = ["\(report.records.count) observations, \(report.changes.count) origin change(s) (run \(report.run))"]
        for change in report.changes {
            let when = RFC3339.milliseconds(change.originChangedAt)
            if let delay = change.delaySeconds {
                lines.append(String(format: "  %@ origin %@ %@: CDN caught up after %@%.1f s", when,
                                    change.observedAtStart ? "differed at start" : "changed to", String(change.sha256.prefix(10)),
                                    change.observedAtStart ? "≥ " : "", delay))
            } else {
                lines.append("  \(when) origin changed to \(change.sha256.prefix(10)): CDN has not caught up")
            }
        }
        return lines.joined(separator: "\n")
    }
}
