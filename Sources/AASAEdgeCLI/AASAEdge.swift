import ArgumentParser
import Foundation

struct AASAEdge: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "aasa-edge",
        abstract: "An edge cache that imitates Apple's associated-domains CDN, with a complete AASA engine.",
        discussion: """
        Exit codes: 0 success; 1 the thing checked is bad (invalid file, decision other than \
        --expect); 2 usage error; 3 I/O or internal error.
        """,
        version: AASAEdgeVersion.string,
        subcommands: [Serve.self, Validate.self, Match.self, Diff.self, Fetch.self, ProbeCommand.self, History.self, DiffVersions.self, StoreCommand.self]
    )
}

enum AASAEdgeVersion {
    static let string = "0.1.0"
}

/// The process entry point: swift-argument-parser's own `main` exits 64 on usage errors and 1 on
/// any thrown error; the contract wants 2 and 3, with `--help` still 0.
@main
enum Entry {
    static func main() async {
        do {
            // No subcommand: the overview on stderr and a usage error (the contract), not a 0.
            guard CommandLine.arguments.count > 1 else {
                Console.error(AASAEdge.helpMessage())
                Foundation.exit(ExitStatus.usage.rawValue)
            }
            let arguments = try EnvironmentDefaults.apply(to: Array(CommandLine.arguments.dropFirst()),
                                                          environment: ProcessInfo.processInfo.environment)
            var command = try AASAEdge.parseAsRoot(arguments)
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            exit(with: error)
        }
    }

    static func exit(with error: Error) -> Never {
        if let bad = error as? EnvironmentDefaults.BadValue {
            Console.error("error: " + bad.message)
            Foundation.exit(ExitStatus.usage.rawValue)
        }
        if let failure = error as? CLIFailure {
            Console.error(failure.message)
            Foundation.exit(failure.code.rawValue)
        }
        let code = AASAEdge.exitCode(for: error)
        let message = AASAEdge.fullMessage(for: error)
        if code == .success {
            if !message.isEmpty { Console.out(message) }
            Foundation.exit(0)
        }
        if code.rawValue == 64 || error is ValidationError {
            Console.error(message)
            Foundation.exit(ExitStatus.usage.rawValue)
        }
        if error is ExitCode { Foundation.exit(code.rawValue) }
        Console.error("error: \(message.isEmpty ? String(describing: error) : message)")
        Foundation.exit(ExitStatus.ioError.rawValue)
    }
}

enum ExitStatus: Int32 {
    case success = 0
    case bad = 1
    case usage = 2
    case ioError = 3
}

/// An error that ends the command with a one-line message and a chosen exit status.
struct CLIFailure: Error {
    let code: ExitStatus
    let message: String

    static func io(_ message: String) -> CLIFailure { CLIFailure(code: .ioError, message: "error: " + message) }
    static func bad(_ message: String) -> CLIFailure { CLIFailure(code: .bad, message: "error: " + message) }
    static func usage(_ message: String) -> CLIFailure { CLIFailure(code: .usage, message: "error: " + message) }
}

enum Console {
    static func out(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    static func error(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }
}
