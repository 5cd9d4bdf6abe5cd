import AASAEngine
import ArgumentParser
import EdgeModel
import Foundation
import Logging
import PostgresStore
import SnapshotStore

/// Where the records live: `sqlite:PATH` or `postgres://USER@HOST[:PORT]/DB`.
enum StoreChoice: Equatable {
    case sqlite(String)
    case postgres(PostgresLocation)

    static let defaultPath = "./var/aasa-edge.sqlite"

    var sqlitePath: String? {
        if case .sqlite(let path) = self { return path }
        return nil
    }

    static func parse(_ text: String) throws(CLIFailure) -> StoreChoice {
        if text.hasPrefix("sqlite:") {
            let path = String(text.dropFirst("sqlite:".count))
            guard !path.isEmpty else { throw .usage("--store sqlite: needs a path (sqlite:./var/aasa-edge.sqlite)") }
            return .sqlite(path)
        }
        guard PostgresLocation.isPostgres(text) else {
            throw .usage("--store must be sqlite:PATH or postgres://USER@HOST[:PORT]/DB")
        }
        do {
            return .postgres(try PostgresLocation(url: text))
        } catch {
            throw .usage("--store: \(error.description)")
        }
    }

    /// AASA_EDGE_STORE_PASSWORD, else PGPASSWORD (never logged or shown).
    static var password: String? {
        let environment = ProcessInfo.processInfo.environment
        return environment["AASA_EDGE_STORE_PASSWORD"] ?? environment["PGPASSWORD"]
    }

    /// Connects (waiting up to 10 s for the server), migrates the schema and, for an edge, listens.
    static func openPostgres(_ location: PostgresLocation, node: String, connections: Int, listen: Bool = true,
                             logger: Logger) async throws -> (store: PostgresStore, applied: [String]) {
        do {
            let store = try PostgresStore(location: location, password: password, node: node, maxConnections: connections, logger: logger)
            do {
                return (store, try await store.start(waitingUpTo: 10, listen: listen))
            } catch {
                await store.close()
                throw error
            }
        } catch {
            throw CLIFailure.io("cannot use the store \(location): \(PostgresStoreError.describe(error))")
        }
    }
}

/// `--node-id`: a name fit for a header, a log line and a metrics label.
enum NodeName {
    static func isValid(_ name: String) -> Bool {
        (1...64).contains(name.utf8.count) && name.utf8.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_")
                || byte == UInt8(ascii: "-")
        }
    }

    /// The hostname, cut to what `--node-id` allows.
    static var hostDefault: String {
        let name = String(ProcessInfo.processInfo.hostName.unicodeScalars.filter { isValid(String($0)) }.prefix(64))
        return name.isEmpty ? "edge" : name
    }
}

struct StoreCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "store",
        abstract: "Create, upgrade or fill a store.",
        subcommands: [Migrate.self, Copy.self]
    )

    struct Migrate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create or upgrade a store's schema (serve also does it at start).",
            discussion: "The PostgreSQL password comes from AASA_EDGE_STORE_PASSWORD, else PGPASSWORD. Exit 0 when the schema is current, 3 when the store cannot be reached."
        )

        @Option(name: .customLong("store"), help: ArgumentHelp("sqlite:PATH or postgres://USER@HOST[:PORT]/DB.", valueName: "URL"))
        var store: String

        @Flag(help: "One JSON object on stdout: {\"store\",\"applied\"}.")
        var json = false

        func run() async throws {
            let applied: [String]
            let shown: String
            switch try StoreChoice.parse(store) {
            case .sqlite(let path):
                _ = try StoreReader.openOrCreate(path)  // migrates on open
                applied = []
                shown = "sqlite:" + path
            case .postgres(let location):
                let (target, ran) = try await StoreChoice.openPostgres(location, node: "store-migrate", connections: 2, listen: false,
                                                                       logger: Logger(label: "aasa-edge"))
                applied = ran
                await target.close()
                shown = location.description
            }
            if json {
                Console.out(JSONWriter.string(.object(JSONObject([JSONMember("store", .string(shown)),
                                                                  JSONMember("applied", .array(applied.map { .string($0) }))]))))
            } else {
                Console.out("\(shown): schema current" + (applied.isEmpty ? "" : " (applied: \(applied.joined(separator: ", ")))"))
            }
        }
    }

    struct Copy: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Copy an SQLite store into a PostgreSQL store (idempotent).",
            discussion: """
            Migrates the target, then copies every host, version, fetch log row, ledger row and probe \
            run. Rows are matched by (host, version) and (host, fetch time), so a second run adds only \
            what is missing. Progress goes to stderr every 1,000 hosts. Exit 0 copied; 1 a version \
            number holds other bytes (sha256) in the target, the copy stops; 3 a store cannot be used.
            """
        )

        @Option(name: .customLong("from"), help: ArgumentHelp("The source: sqlite:PATH.", valueName: "URL"))
        var from: String

        @Option(name: .customLong("to"), help: ArgumentHelp("The target: postgres://USER@HOST[:PORT]/DB.", valueName: "URL"))
        var to: String

        @Flag(help: "One JSON object on stdout with the counts added.")
        var json = false

        func run() async throws {
            guard case .sqlite(let path) = try StoreChoice.parse(from) else { throw CLIFailure.usage("--from must be sqlite:PATH") }
            guard case .postgres(let location) = try StoreChoice.parse(to) else { throw CLIFailure.usage("--to must be postgres://USER@HOST[:PORT]/DB") }
            let source = try StoreReader.open(path)
            let (target, _) = try await StoreChoice.openPostgres(location, node: "store-copy", connections: 2, listen: false,
                                                            logger: Logger(label: "aasa-edge"))
            var counts = CopyCounts()
            var seen = 0
            do {
                let hosts = try source.hosts()
                for host in hosts {
                    guard let copy = try source.export(host: host.name) else { continue }
                    counts += try await target.importHost(copy)
                    seen += 1
                    if seen % 1000 == 0 { Console.error("copied \(seen)/\(hosts.count) hosts") }
                }
                for run in try source.probeRuns() where try await target.importProbeRun(run) { counts.probes += 1 }
            } catch let error as PostgresStoreError {
                await target.close()
                if case .conflict = error { throw CLIFailure.bad("\(error.description); nothing more copied") }
                throw CLIFailure.io("copy failed: \(error.description)")
            } catch let failure as CLIFailure {
                await target.close()
                throw failure
            } catch {
                await target.close()
                throw CLIFailure.io("copy failed: \(PostgresStoreError.describe(error))")
            }
            await target.close()
            if json {
                func number(_ n: Int) -> JSONValue { .number(JSONNumber(String(n))) }
                Console.out(JSONWriter.string(.object(JSONObject([
                    JSONMember("from", .string("sqlite:" + path)), JSONMember("to", .string(location.description)),
                    JSONMember("hosts", number(seen)), JSONMember("hostsAdded", number(counts.hosts)),
                    JSONMember("versionsAdded", number(counts.versions)), JSONMember("fetchesAdded", number(counts.fetches)),
                    JSONMember("ledgerRowsAdded", number(counts.ledger)), JSONMember("probeRunsAdded", number(counts.probes)),
                ]))))
            } else {
                Console.out("copied sqlite:\(path) to \(location): \(seen) hosts read; added \(counts.hosts) hosts, \(counts.versions) versions, "
                            + "\(counts.fetches) fetch log rows, \(counts.ledger) ledger rows, \(counts.probes) probe runs")
            }
        }
    }
}
