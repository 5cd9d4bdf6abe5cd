/// A host the edge may fetch for: what a device would ask the CDN for.
///
/// Accepted: LDH labels of 1–63 characters joined by dots, at least two labels, at most 253
/// characters, optionally `:port` (1–65535). Lower-cased; a leading `*.` is stripped (devices ask
/// for the base domain of a wildcard entitlement); `:443` is the same as no port. Refused: IP
/// literals, a numeric or `0x…` last label, `localhost`, empty labels, leading or trailing hyphens,
/// `_`, a trailing dot, `%`, any non-ASCII character (names must arrive as `xn--` A-labels).
public struct OriginHost: Sendable, Hashable, CustomStringConvertible {
    /// The lower-cased host name, without port.
    public let name: String
    /// nil for the default port 443.
    public let port: Int?

    /// `name` or `name:port`: the key the edge uses and the path segment of `/a/v1/`.
    public var description: String { port.map { "\(name):\($0)" } ?? name }

    /// The origin URL Apple's CDN fetches.
    public var originURL: String { "https://\(description)/.well-known/apple-app-site-association" }

    public struct Invalid: Error, Equatable, CustomStringConvertible {
        public let reason: String
        public var description: String { reason }
    }

    /// A port written as 1–5 ASCII digits with a value from 1 to 65535, else nil.
    public static func port(_ text: Substring) -> Int? {
        guard !text.isEmpty, text.count <= 5, text.allSatisfy({ $0.isASCII && $0.isNumber }),
              let value = Int(text), (1...65535).contains(value) else { return nil }
        return value
    }

    public init(_ text: String) throws(Invalid) {
        guard !text.isEmpty else { throw Invalid(reason: "empty host") }
        guard text.utf8.count <= 260 else { throw Invalid(reason: "host longer than 253 characters") }
        if let bad = text.unicodeScalars.first(where: { $0.value > 0x7E || $0.value < 0x21 }) {
            if bad.value > 0x7E { throw Invalid(reason: "non-ASCII character in host (use the xn-- A-label form)") }
            throw Invalid(reason: "control character or space in host")
        }
        if text.contains("%") { throw Invalid(reason: "'%' in host (percent-encoding is not allowed)") }
        var hostPart = Substring(text.lowercased())
        var port: Int?
        if hostPart.hasPrefix("[") { throw Invalid(reason: "IP literals are not allowed") }
        if let colon = hostPart.lastIndex(of: ":") {
            guard let value = Self.port(hostPart[hostPart.index(after: colon)...]) else {
                throw Invalid(reason: "port must be a number from 1 to 65535")
            }
            port = value == 443 ? nil : value
            hostPart = hostPart[..<colon]
        }
        if hostPart.hasPrefix("*.") { hostPart = hostPart.dropFirst(2) }
        guard !hostPart.hasSuffix(".") else { throw Invalid(reason: "trailing dot in host") }
        guard hostPart.count <= 253 else { throw Invalid(reason: "host longer than 253 characters") }
        let labels = hostPart.split(separator: ".", omittingEmptySubsequences: false)
        guard labels.count >= 2 else {
            throw Invalid(reason: hostPart == "localhost" ? "localhost is not allowed" : "host needs at least two labels (a bare name or TLD is not allowed)")
        }
        for label in labels {
            guard !label.isEmpty else { throw Invalid(reason: "empty label in host") }
            guard label.count <= 63 else { throw Invalid(reason: "label longer than 63 characters") }
            guard label.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }) else {
                throw Invalid(reason: "host labels may contain only letters, digits and '-'")
            }
            guard label.first != "-", label.last != "-" else { throw Invalid(reason: "host label starts or ends with '-'") }
        }
        let last = labels.last!
        if last.allSatisfy({ $0.isNumber }) || (last.hasPrefix("0x") && last.dropFirst(2).allSatisfy(\.isHexDigit)) {
            throw Invalid(reason: "IP literals and numeric top-level labels are not allowed")
        }
        if labels.last == "localhost" { throw Invalid(reason: "localhost is not allowed") }
        name = String(hostPart)
        self.port = port
    }
}
