import ArgumentParser

/// A decimal number of seconds (or days) on the command line, shown in `--help` without a
/// spurious `.0` (`3600`, not `3600.0`).
struct Number: ExpressibleByArgument, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral, Sendable {
    let value: Double

    init(_ value: Double) { self.value = value }
    init(integerLiteral value: Int) { self.value = Double(value) }
    init(floatLiteral value: Double) { self.value = value }

    init?(argument: String) {
        guard let value = Double(argument) else { return nil }
        self.value = value
    }

    var defaultValueDescription: String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : String(value)
    }
}
