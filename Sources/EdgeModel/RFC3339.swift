import AASAEngine
import Foundation

/// RFC 3339 times in UTC, as the contract's JSON and the CLI print them.
public enum RFC3339 {
    /// Whole seconds (truncated), UTC: `2026-11-21T06:04:08Z`.
    public static func string(_ unixSeconds: Double) -> String {
        var t = time_t(unixSeconds.rounded(.down))
        var c = tm()
        gmtime_r(&t, &c)
        return String(format: "%04d-%02d-%02dT%02d:%02d:%02dZ", c.tm_year + 1900, c.tm_mon + 1, c.tm_mday, c.tm_hour, c.tm_min, c.tm_sec)
    }

    /// With milliseconds: `2026-11-21T06:04:08.250Z` (for measurements finer than a second).
    public static func milliseconds(_ unixSeconds: Double) -> String {
        let whole = unixSeconds.rounded(.down)
        let millis = min(999, Int(((unixSeconds - whole) * 1000).rounded(.down)))
        return String(string(whole).dropLast()) + String(format: ".%03dZ", millis)
    }
}

/// An instant in a JSON body: RFC 3339 UTC text in whole seconds, or with milliseconds where
/// observations are finer than a second (probe runs).
public struct Timestamp: JSONValueRepresentable, Sendable, Equatable {
    public let seconds: Double
    public let milliseconds: Bool

    public init(_ seconds: Double, milliseconds: Bool = false) {
        self.seconds = seconds
        self.milliseconds = milliseconds
    }

    /// nil for no time (written as `null`).
    public static func of(_ seconds: Double?, milliseconds: Bool = false) -> Timestamp? {
        seconds.map { Timestamp($0, milliseconds: milliseconds) }
    }

    public var text: String { milliseconds ? RFC3339.milliseconds(seconds) : RFC3339.string(seconds) }
    public var jsonValue: JSONValue { .string(text) }
}
