import AASAEngine
import ArgumentParser

struct Validate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Validate an AASA file and print its diagnostics.",
        discussion: """
        Every diagnostic has a stable code (see docs/diagnostics.md), a severity (error, warning, \
        note), a JSON pointer to the offending place and a one-line message. Text output lists \
        errors first, then warnings, then notes, each in document order; --json keeps document order.
        Exit status: 0 when there is no error diagnostic, 1 when there is, 3 when FILE cannot be read.
        """
    )

    @Argument(help: ArgumentHelp("The AASA file ('-' reads standard input).", valueName: "FILE"))
    var file: String

    @Flag(help: "Print {\"valid\",\"diagnostics\":[{\"code\",\"severity\",\"pointer\",\"message\"}]} on stdout.")
    var json = false

    func run() throws {
        let aasa = try InputFile.readAASA(file)
        if json {
            Console.out(JSONWriter.string(["valid": .bool(aasa.isValid), "diagnostics": .array(aasa.diagnostics.map(\.json))]))
        } else {
            Console.out(Report.validation(aasa, name: file == "-" ? "(stdin)" : file))
        }
        if !aasa.isValid { throw ExitCode(ExitStatus.bad.rawValue) }
    }
}

enum Report {
    static func validation(_ aasa: AASAFile, name: String) -> String {
        let counts = Severity.allCases.map { severity in
            let n = aasa.diagnostics.filter { $0.severity == severity }.count
            return "\(n) \(severity.rawValue)\(n == 1 ? "" : "s")"
        }
        var lines = ["\(name): \(aasa.isValid ? "valid" : "invalid") (\(counts.joined(separator: ", ")))"]
        // Errors first, then warnings, then notes, each in document order (`--json` keeps document order).
        lines += Severity.allCases.flatMap { severity in aasa.diagnostics.filter { $0.severity == severity } }.map { "  \($0)" }
        return lines.joined(separator: "\n")
    }
}
