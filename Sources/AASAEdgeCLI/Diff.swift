import AASAEngine
import ArgumentParser

struct Diff: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Semantic diff of two AASA files: what changes for devices.",
        discussion: """
        Reports applinks apps added and removed; per app, rules added, removed and changed in order \
        (compared after path normalisation and defaults, so reformatting is no change); defaults; \
        substitution variables; the apps of the other services.
        Exit status: 0 (with --exit-code: 0 when equivalent, 1 when they differ); 1 when a file is \
        not an AASA object; 3 when a file cannot be read.
        """
    )

    @Argument(help: ArgumentHelp("The old AASA file.", valueName: "OLD"))
    var old: String

    @Argument(help: ArgumentHelp("The new AASA file ('-' reads standard input).", valueName: "NEW"))
    var new: String

    @Flag(help: "Print the diff as JSON on stdout.")
    var json = false

    @Flag(name: .customLong("exit-code"), help: "Exit 1 when the files differ.")
    var exitCode = false

    func run() throws {
        let before = try InputFile.readDocument(old).0
        let after = try InputFile.readDocument(new).0
        let diff = AASADiff(old: before, new: after)
        if json {
            Console.out(JSONWriter.string(diff.json))
        } else {
            Console.out(diff.isEmpty ? "no semantic difference" : diff.lines.joined(separator: "\n"))
        }
        if exitCode && !diff.isEmpty { throw ExitCode(ExitStatus.bad.rawValue) }
    }
}
