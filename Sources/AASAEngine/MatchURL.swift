/// A URL split into the parts the matcher reads, kept exactly as written (RFC 3986 syntax).
///
/// Matching compares against the percent-encoded text by default, so nothing is normalised here
/// except the host's case.
public struct MatchURL: Sendable, Equatable {
    public let string: String
    /// Lower-cased host without port or user info; empty when the URL has no authority.
    public var host: String { String(decoding: parts.host, as: UTF8.self) }
    let parts: Parts

    /// The parsed pieces, shared by copies (one reference to count, not six).
    final class Parts: Sendable {
        let host: [UInt8]
        let path: [UInt8]
        let query: [UInt8]?
        let fragment: [UInt8]?
        /// `percentEncodedQueryItems`: the query split on `&`, then on the first `=`.
        let queryItems: [QueryItem]

        init(host: [UInt8], path: [UInt8], query: [UInt8]?, fragment: [UInt8]?) {
            self.host = host
            self.path = path
            self.query = query
            self.fragment = fragment
            queryItems = MatchURL.queryItems(query)
        }
    }

    public static func == (a: MatchURL, b: MatchURL) -> Bool { a.string == b.string }

    /// ASCII case-insensitive comparison of the host with `domain`.
    func hostEquals(_ domain: String) -> Bool {
        let host = parts.host
        guard domain.utf8.count == host.count else { return false }
        var i = 0
        for b in domain.utf8 {
            if UTF8Scalars.asciiLower(b) != host[i] { return false }
            i += 1
        }
        return true
    }

    public struct ParseError: Error, Equatable, CustomStringConvertible {
        public let description: String
    }

    public init(_ string: String) throws(ParseError) {
        self.string = string
        let bytes = Array(string.utf8)
        guard !bytes.isEmpty else { throw ParseError(description: "the URL is empty") }
        for (i, b) in bytes.enumerated() {
            if b <= 0x20 || b >= 0x7F {
                let what = b == 0x20 ? "a space" : b >= 0x80 ? "a non-ASCII character" : "a control character"
                throw ParseError(description: "'\(string)' contains \(what) at position \(i); percent-encode it as devices do")
            }
            if b == UInt8(ascii: "%") {
                guard i + 2 < bytes.count, Self.hexValue(bytes[i + 1]) != nil, Self.hexValue(bytes[i + 2]) != nil else {
                    throw ParseError(description: "'\(string)' has a '%' that is not followed by two hex digits")
                }
            }
        }
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")), colon > 0,
              Self.isAlpha(bytes[0]),
              bytes[0..<colon].allSatisfy({ Self.isAlpha($0) || Self.isDigit($0) || $0 == 0x2B || $0 == 0x2D || $0 == 0x2E })
        else { throw ParseError(description: "'\(string)' is not an absolute URL (expected e.g. https://example.com/path)") }

        var rest = Array(bytes[(colon + 1)...])
        let fragment: [UInt8]?
        let query: [UInt8]?
        if let hash = rest.firstIndex(of: UInt8(ascii: "#")) {
            fragment = Array(rest[(hash + 1)...])
            rest = Array(rest[..<hash])
        } else {
            fragment = nil
        }
        if let question = rest.firstIndex(of: UInt8(ascii: "?")) {
            query = Array(rest[(question + 1)...])
            rest = Array(rest[..<question])
        } else {
            query = nil
        }
        if rest.starts(with: [UInt8(ascii: "/"), UInt8(ascii: "/")]) {
            let authorityEnd = rest[2...].firstIndex(of: UInt8(ascii: "/")) ?? rest.count
            var authority = Array(rest[2..<authorityEnd])
            if let at = authority.lastIndex(of: UInt8(ascii: "@")) { authority = Array(authority[(at + 1)...]) }
            // What follows the host may only be `:port` (digits); an IP literal needs its `]`.
            func validPort(_ rest: ArraySlice<UInt8>) -> Bool {
                rest.isEmpty || (rest.first == UInt8(ascii: ":") && rest.dropFirst().allSatisfy(Self.isDigit))
            }
            if authority.first == UInt8(ascii: "[") {
                guard let close = authority.firstIndex(of: UInt8(ascii: "]")),
                      authority[1..<close].allSatisfy({ Self.hexValue($0) != nil || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: ".") }),
                      validPort(authority[(close + 1)...]) else {
                    throw ParseError(description: "'\(string)' has a malformed IP-literal host (expected [address] with an optional :port)")
                }
                authority = Array(authority[...close])
            } else {
                guard !authority.contains(UInt8(ascii: "[")), !authority.contains(UInt8(ascii: "]")) else {
                    throw ParseError(description: "'\(string)' has '[' or ']' in its host")
                }
                if let portColon = authority.lastIndex(of: UInt8(ascii: ":")) {
                    guard validPort(authority[portColon...]) else {
                        throw ParseError(description: "'\(string)' has a port that is not a number")
                    }
                    authority = Array(authority[..<portColon])
                }
            }
            parts = Parts(host: authority.map(UTF8Scalars.asciiLower), path: Array(rest[authorityEnd...]), query: query, fragment: fragment)
        } else {
            parts = Parts(host: [], path: rest, query: query, fragment: fragment)
        }
    }

    static func isAlpha(_ b: UInt8) -> Bool { (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) }
    static func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }

    static func hexValue(_ b: UInt8) -> UInt8? {
        switch b {
        case 0x30...0x39: return b - 0x30
        case 0x41...0x46: return b - 0x41 + 10
        case 0x61...0x66: return b - 0x61 + 10
        default: return nil
        }
    }

    /// Percent-decoding as NSURLComponents' decoded accessors do it. Bytes that do not decode
    /// to valid UTF-8 make the accessor return nil, which swcd reads as an empty string; a decoded
    /// NUL ends the C string swcd matches against.
    static func decoded(_ bytes: some Collection<UInt8>) -> [UInt8] {
        let bytes = Array(bytes)
        guard bytes.contains(UInt8(ascii: "%")) else { return bytes }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var i = 0
        while i < bytes.count {
            if bytes[i] == UInt8(ascii: "%"), i + 2 < bytes.count,
               let high = hexValue(bytes[i + 1]), let low = hexValue(bytes[i + 2]) {
                out.append(high << 4 | low)
                i += 3
            } else {
                out.append(bytes[i])
                i += 1
            }
        }
        guard JSONReader.isValidUTF8(out) else { return [] }
        if let nul = out.firstIndex(of: 0) { out.removeSubrange(nul...) }
        return out
    }

    struct QueryItem: Sendable, Equatable {
        let name: ArraySlice<UInt8>
        /// nil for an item without `=`.
        let value: ArraySlice<UInt8>?
    }

    static func queryItems(_ query: [UInt8]?) -> [QueryItem] {
        guard let query, !query.isEmpty else { return [] }
        return query.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: false).map { item in
            guard let equals = item.firstIndex(of: UInt8(ascii: "=")) else { return QueryItem(name: item, value: nil) }
            return QueryItem(name: item[..<equals], value: item[(equals + 1)...])
        }
    }
}
