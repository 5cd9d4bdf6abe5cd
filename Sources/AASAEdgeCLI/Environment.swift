import Foundation

/// `AASA_EDGE_<FLAG>` environment variables as defaults for flags (the contract): the flag on the
/// command line wins; repeatable flags take a comma-separated list; booleans take
/// true/false/1/0. One table drives both the merging and the `--help` text.
enum EnvironmentDefaults {
    enum Kind {
        case value, repeatable, boolean
    }

    struct Option {
        let flag: String
        let kind: Kind
        var variable: String { "AASA_EDGE_" + flag.uppercased().replacingOccurrences(of: "-", with: "_") }
    }

    static let fetchOptions: [Option] = [
        Option(flag: "connect-to", kind: .repeatable),
        Option(flag: "resolve", kind: .repeatable),
        Option(flag: "ca-file", kind: .value),
        Option(flag: "origin-timeout", kind: .value),
        Option(flag: "allow-private-origins", kind: .boolean),
    ]

    static let serveOptions: [Option] = [
        Option(flag: "host", kind: .value),
        Option(flag: "port", kind: .value),
        Option(flag: "db", kind: .value),
        Option(flag: "ttl", kind: .value),
        Option(flag: "failure-ttl", kind: .value),
        Option(flag: "stale-if-error", kind: .value),
    ] + fetchOptions + [
        Option(flag: "allow-domain", kind: .repeatable),
        Option(flag: "refetch-concurrency", kind: .value),
        Option(flag: "memory-cache-mb", kind: .value),
        Option(flag: "ledger-retention-days", kind: .value),
        Option(flag: "client-timeout", kind: .value),
        Option(flag: "origin-concurrency", kind: .value),
        Option(flag: "max-connections", kind: .value),
        Option(flag: "max-tracked-clients", kind: .value),
        Option(flag: "event-loops", kind: .value),
        Option(flag: "admin-token", kind: .value),
    ]

    static let probeOptions: [Option] = [Option(flag: "db", kind: .value)] + fetchOptions

    static let bySubcommand: [String: [Option]] = ["fetch": fetchOptions, "serve": serveOptions, "probe": probeOptions]

    /// The lines `--help` shows for a subcommand's variables.
    static func help(for subcommand: String) -> String {
        let options = bySubcommand[subcommand] ?? []
        let lines = options.map { option -> String in
            let note: String
            switch option.kind {
            case .value: note = ""
            case .repeatable: note = " (comma-separated)"
            case .boolean: note = " (true/false/1/0)"
            }
            return "  \(option.variable) for --\(option.flag)\(note)"
        }
        return "Environment (a flag on the command line wins):\n" + lines.joined(separator: "\n")
    }

    struct BadValue: Error {
        let message: String
    }

    /// The arguments with flags added from the environment.
    static func apply(to arguments: [String], environment: [String: String]) throws(BadValue) -> [String] {
        guard let index = arguments.firstIndex(where: { !$0.hasPrefix("-") }),
              let options = bySubcommand[arguments[index]] else { return arguments }
        var injected: [String] = []
        for option in options {
            let given = arguments.contains { $0 == "--" + option.flag || $0.hasPrefix("--" + option.flag + "=") }
            guard !given, let raw = environment[option.variable] else { continue }
            switch option.kind {
            case .value:
                // An empty variable counts as unset (compose files often pass `${VAR:-}`).
                if !raw.isEmpty { injected += ["--" + option.flag, raw] }
            case .repeatable:
                for item in raw.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !item.isEmpty {
                    injected += ["--" + option.flag, item]
                }
            case .boolean:
                switch raw.lowercased() {
                case "true", "1": injected.append("--" + option.flag)
                case "false", "0", "": break
                default: throw BadValue(message: "\(option.variable) must be true, false, 1 or 0, not '\(raw)'")
                }
            }
        }
        var out = arguments
        out.insert(contentsOf: injected, at: index + 1)
        return out
    }
}
