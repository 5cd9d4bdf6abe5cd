import ArgumentParser
import Foundation

/// `AASA_EDGE_<FLAG>` environment variables as defaults for flags (the contract): the flag on the
/// command line wins; repeatable flags take a comma-separated list; booleans take
/// true/false/1/0. The flags come from the option groups themselves; the same list drives the
/// merging and the `--help` text.
enum EnvironmentDefaults {
    enum Kind {
        case value, repeatable, boolean
    }

    struct Option {
        let flag: String
        let kind: Kind
        var variable: String { "AASA_EDGE_" + flag.uppercased().replacingOccurrences(of: "-", with: "_") }
    }

    /// The options of a group of flags, read from ArgumentParser's own description of it (so a
    /// flag is declared once, as an `@Option` or `@Flag`, and its variable follows its name).
    static func options(of group: any ParsableArguments.Type) -> [Option] {
        guard let data = group._dumpHelp().data(using: .utf8),
              let root = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
              let command = root["command"] as? [String: Any],
              let arguments = command["arguments"] as? [[String: Any]] else { return [] }
        return arguments.compactMap { argument in
            guard let kind = argument["kind"] as? String, kind == "option" || kind == "flag",
                  let names = argument["names"] as? [[String: Any]],
                  let long = names.first(where: { $0["kind"] as? String == "long" })?["name"] as? String,
                  !["help", "version", "experimental-dump-help"].contains(long) else { return nil }
            if kind == "flag" { return Option(flag: long, kind: .boolean) }
            return Option(flag: long, kind: argument["isRepeating"] as? Bool == true ? .repeatable : .value)
        }
    }

    static let fetchOptions = options(of: OriginOptions.self)
    static let serveOptions = options(of: ServeOptions.self)
    /// `probe` shares the store with `serve` and the fetch flags with `fetch`.
    static let probeOptions = serveOptions.filter { $0.flag == "db" } + fetchOptions

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
