import AASAEngine
import ArgumentParser
import EdgeCore
import Foundation
import EdgeModel
import OriginFetcher
import SnapshotStore

/// Opens the store a `serve` writes, for reading, without creating one.
enum StoreReader {
    static func open(_ path: String) throws(CLIFailure) -> SnapshotStore {
        guard FileManager.default.fileExists(atPath: path) else { throw .io("no store at \(path) (see --db)") }
        do {
            return try SnapshotStore(path: path)
        } catch {
            throw .io("cannot open the store \(path): \(error)")
        }
    }

    /// Opens the store, creating it (and its folders) when missing: what `serve` and `probe` write.
    static func openOrCreate(_ path: String) throws(CLIFailure) -> SnapshotStore {
        do {
            return try SnapshotStore(path: path)
        } catch {
            throw .io("cannot open the store \(path): \(error)")
        }
    }

    /// A host argument, checked by the contract's rules (a usage error when malformed).
    static func originHost(_ text: String) throws(CLIFailure) -> OriginHost {
        do {
            return try OriginHost(text)
        } catch {
            throw .usage("invalid host '\(text)': \(error.reason)")
        }
    }

    static func host(_ text: String) throws(CLIFailure) -> String { try originHost(text).description }

    static func failure(_ error: Error) -> CLIFailure {
        if let problem = error as? HistoryViews.Problem { return .bad(problem.description) }
        return .io("the store could not be read: \(error)")
    }
}

struct History: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show a host's stored versions and origin fetch log, from the store (no server needed).",
        discussion: "Exit status: 0; 1 when the store has no such host; 3 when the store cannot be opened."
    )

    @Argument(help: ArgumentHelp("The host (name or name:port).", valueName: "HOST"))
    var host: String

    @Option(help: ArgumentHelp("The store `serve` writes.", valueName: "FILE"))
    var db = "./var/aasa-edge.sqlite"

    @Option(help: "How many fetch log entries to show, newest first.")
    var limit = 20

    @Flag(help: "Print {\"domain\",\"snapshots\":[…],\"fetches\":[…]} (the admin API's shapes) on stdout.")
    var json = false

    func run() async throws {
        let name = try StoreReader.host(host)
        let store = try StoreReader.open(db)
        let snapshots: AdminJSON.Snapshots
        let fetches: AdminJSON.Fetches
        do {
            snapshots = try await HistoryViews.snapshots(store, host: name)
            fetches = try await HistoryViews.fetches(store, host: name, limit: max(1, limit))
        } catch {
            throw StoreReader.failure(error)
        }
        if json {
            struct Output: Encodable {
                let domain: String
                let snapshots: [AdminJSON.Snapshots.Snapshot]
                let fetches: [AdminJSON.Fetches.Fetch]
            }
            Console.out(try JSONValueEncoder().string(Output(domain: name, snapshots: snapshots.snapshots, fetches: fetches.fetches)))
            return
        }
        let count = snapshots.snapshots.count
        var lines = ["\(name): \(count) version\(count == 1 ? "" : "s") stored"]
        for s in snapshots.snapshots {
            lines.append("  v\(s.version)  \(s.sha256.prefix(16))…  \(s.size) bytes  first \(s.firstFetchedAt.text)  last confirmed \(s.lastConfirmedAt.text)  \(s.valid ? "valid" : "invalid")")
        }
        lines.append("fetch log, newest first:")
        for f in fetches.fetches {
            let version = f.version.map { "v\($0)" } ?? "-"
            let status = f.status.map(String.init) ?? "-"
            var line = "  \(f.at.text)  \(f.outcome.padding(toLength: 9, withPad: " ", startingAt: 0)) \(status.padding(toLength: 4, withPad: " ", startingAt: 0)) \(version.padding(toLength: 5, withPad: " ", startingAt: 0)) \(f.durationMs.text ?? "-") ms  \(f.trigger)"
            if let reason = f.reason { line += "  " + reason }
            lines.append(line)
        }
        Console.out(lines.joined(separator: "\n"))
    }
}

struct DiffVersions: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "diff-versions",
        abstract: "Semantic diff of two stored versions of a host, from the store (no server needed).",
        discussion: "Exit status: 0 (with --exit-code: 1 when they differ); 1 when the host or a version is unknown; 3 when the store cannot be opened."
    )

    @Argument(help: ArgumentHelp("The host (name or name:port).", valueName: "HOST"))
    var host: String

    @Argument(help: ArgumentHelp("The old version.", valueName: "A"))
    var from: Int

    @Argument(help: ArgumentHelp("The new version.", valueName: "B"))
    var to: Int

    @Option(help: ArgumentHelp("The store `serve` writes.", valueName: "FILE"))
    var db = "./var/aasa-edge.sqlite"

    @Flag(help: "Print the diff as JSON (the shape of `diff --json`).")
    var json = false

    @Flag(name: .customLong("exit-code"), help: "Exit 1 when the versions differ.")
    var exitCode = false

    func run() async throws {
        let name = try StoreReader.host(host)
        let store = try StoreReader.open(db)
        let diff: AASADiff
        do {
            diff = try await HistoryViews.diff(store, host: name, from: from, to: to)
        } catch {
            throw StoreReader.failure(error)
        }
        Console.out(json ? JSONWriter.string(diff.json) : (diff.isEmpty ? "no semantic difference" : diff.lines.joined(separator: "\n")))
        if exitCode && !diff.isEmpty { throw ExitCode(ExitStatus.bad.rawValue) }
    }
}
