/// Frames one HTTP/1.1 request head from raw bytes, accepting only a strict subset of RFC 9112
/// that the hit path can answer without NIO's parser: `GET` or `HEAD`, an origin-form target,
/// `HTTP/1.1`, CRLF line ends, token field names, visible-ASCII field values, and no message
/// body (no `Content-Length`, `Transfer-Encoding`, `Expect` or `Upgrade`), at most one of each
/// field the edge reads. Anything else is `.unsupported`: the caller hands those bytes, and every
/// later byte of the connection, to NIO's full parser, which accepts or rejects them as it always
/// does. So this scanner never widens what the server accepts; it only recognises the common case.
///
/// Pure: no I/O, no allocation; positions are offsets into the scanned bytes.
struct RequestHeadScanner {
    /// The longest head the scanner frames; a longer one goes to NIO (whose limit is larger).
    static let maximumHeadLength = 8192

    struct Head: Equatable {
        /// Bytes the head occupies, up to and including the blank line.
        var length: Int
        var isHead: Bool
        var target: Range<Int>
        var host: Range<Int>?
        var clientID: Range<Int>?
        var userAgent: Range<Int>?
        var ifNoneMatch: Range<Int>?
    }

    enum Result: Equatable {
        /// The bytes are a prefix of a head the scanner may accept: wait for more.
        case incomplete
        /// Not in the subset: NIO's parser decides.
        case unsupported
        case head(Head)
    }

    /// Where a scan of an incomplete head stopped at the last complete line: the position of the
    /// next line and what the head had so far. Scanning the same bytes with more appended from
    /// here gives the same result as scanning them all from the start, without reading the
    /// lines before it again (a head dribbled a byte at a time costs its length, not its square).
    struct Checkpoint: Equatable {
        fileprivate var position: Int
        fileprivate var head: Head
        /// Bytes already scanned for good.
        var offset: Int { position }
    }

    static func scan(_ bytes: UnsafeRawBufferPointer) -> Result {
        scan(bytes, resumingAt: nil).result
    }

    /// Scans from `checkpoint` (the one an earlier scan of a prefix of `bytes` returned); returns
    /// the checkpoint to resume from when the result is `.incomplete`.
    static func scan(_ bytes: UnsafeRawBufferPointer, resumingAt checkpoint: Checkpoint?) -> (result: Result, checkpoint: Checkpoint?) {
        var scanner = Cursor(bytes: bytes)
        let result = scanner.scan(from: checkpoint)
        return (result, result == .incomplete ? scanner.checkpoint : nil)
    }

    private struct Cursor {
        let bytes: UnsafeRawBufferPointer
        var position = 0
        /// The last complete line's end.
        var checkpoint: Checkpoint?

        init(bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

        /// `.incomplete` when the bytes end inside the head (and the head may still be short
        /// enough), `.unsupported` when it would be too long.
        private var endOfInput: Result {
            bytes.count >= RequestHeadScanner.maximumHeadLength ? .unsupported : .incomplete
        }

        /// Matches `literal` at the cursor: true and advanced, false (not matching), or nil
        /// (the bytes end while still matching).
        private mutating func expect(_ literal: StaticString) -> Bool? {
            let count = literal.utf8CodeUnitCount
            let start = literal.utf8Start
            for i in 0..<count {
                guard position + i < bytes.count else { return nil }
                if bytes[position + i] != start[i] { return false }
            }
            position += count
            return true
        }

        mutating func scan(from start: Checkpoint?) -> Result {
            var head = Head(length: 0, isHead: false, target: 0..<0)
            if let start {
                head = start.head
                position = start.position
                checkpoint = start
                return fields(&head)
            }
            // Request line: method SP origin-form SP HTTP/1.1 CRLF.
            switch expect("GET ") {
            case true?: break
            case nil: return endOfInput
            case false?:
                switch expect("HEAD ") {
                case true?: head.isHead = true
                case nil: return endOfInput
                case false?: return .unsupported
                }
            }
            let targetStart = position
            while true {
                guard position < bytes.count else { return endOfInput }
                let byte = bytes[position]
                if byte == UInt8(ascii: " ") { break }
                guard byte > 0x20, byte < 0x7F else { return .unsupported }
                position += 1
            }
            head.target = targetStart..<position
            guard !head.target.isEmpty, bytes[targetStart] == UInt8(ascii: "/") else { return .unsupported }
            position += 1
            switch expect("HTTP/1.1\r\n") {
            case true?: break
            case nil: return endOfInput
            case false?: return .unsupported
            }
            checkpoint = Checkpoint(position: position, head: head)
            return fields(&head)
        }

        /// Fields, up to the blank line.
        private mutating func fields(_ head: inout Head) -> Result {
            while true {
                guard position < bytes.count else { return endOfInput }
                if bytes[position] == UInt8(ascii: "\r") {
                    guard position + 1 < bytes.count else { return endOfInput }
                    guard bytes[position + 1] == UInt8(ascii: "\n") else { return .unsupported }
                    head.length = position + 2
                    guard head.length <= RequestHeadScanner.maximumHeadLength else { return .unsupported }
                    return .head(head)
                }
                let nameStart = position
                while true {
                    guard position < bytes.count else { return endOfInput }
                    let byte = bytes[position]
                    if byte == UInt8(ascii: ":") { break }
                    guard Self.isTokenByte(byte) else { return .unsupported }  // also a folded line's SP/HT
                    position += 1
                }
                let name = nameStart..<position
                guard !name.isEmpty else { return .unsupported }
                position += 1
                while position < bytes.count, bytes[position] == UInt8(ascii: " ") || bytes[position] == UInt8(ascii: "\t") {
                    position += 1
                }
                let valueStart = position
                var valueEnd = position
                while true {
                    guard position < bytes.count else { return endOfInput }
                    let byte = bytes[position]
                    if byte == UInt8(ascii: "\r") { break }
                    guard (byte >= 0x20 && byte < 0x7F) || byte == UInt8(ascii: "\t") else { return .unsupported }
                    position += 1
                    if byte != UInt8(ascii: " ") && byte != UInt8(ascii: "\t") { valueEnd = position }
                }
                guard position + 1 < bytes.count else { return endOfInput }
                guard bytes[position + 1] == UInt8(ascii: "\n") else { return .unsupported }
                position += 2
                guard position < RequestHeadScanner.maximumHeadLength else { return .unsupported }
                let value = valueStart..<valueEnd
                switch field(name) {
                case .host: guard head.host == nil else { return .unsupported }; head.host = value
                case .clientID: guard head.clientID == nil else { return .unsupported }; head.clientID = value
                case .userAgent: guard head.userAgent == nil else { return .unsupported }; head.userAgent = value
                case .ifNoneMatch: guard head.ifNoneMatch == nil else { return .unsupported }; head.ifNoneMatch = value
                case .connection:
                    // Keep-alive is HTTP/1.1's default; anything else (close, upgrade) is NIO's.
                    guard equalsIgnoringCase(value, "keep-alive") else { return .unsupported }
                case .body: return .unsupported
                case .other: break
                }
                checkpoint = Checkpoint(position: position, head: head)
            }
        }

        private enum Field { case host, clientID, userAgent, ifNoneMatch, connection, body, other }

        private func field(_ name: Range<Int>) -> Field {
            switch name.count {
            case 3:
                // A request through another tier (its Via) is the router's: it checks for loops.
                return equalsIgnoringCase(name, "via") ? .body : .other
            case 4: return equalsIgnoringCase(name, "host") ? .host : .other
            case 6: return equalsIgnoringCase(name, "expect") ? .body : .other
            case 7: return equalsIgnoringCase(name, "upgrade") ? .body : .other
            case 10:
                if equalsIgnoringCase(name, "user-agent") { return .userAgent }
                return equalsIgnoringCase(name, "connection") ? .connection : .other
            case 11: return equalsIgnoringCase(name, "x-client-id") ? .clientID : .other
            case 13: return equalsIgnoringCase(name, "if-none-match") ? .ifNoneMatch : .other
            case 14: return equalsIgnoringCase(name, "content-length") ? .body : .other
            case 17: return equalsIgnoringCase(name, "transfer-encoding") ? .body : .other
            default: return .other
            }
        }

        /// ASCII case-insensitive comparison with a lowercase literal.
        private func equalsIgnoringCase(_ range: Range<Int>, _ literal: StaticString) -> Bool {
            guard range.count == literal.utf8CodeUnitCount else { return false }
            let start = literal.utf8Start
            for i in 0..<range.count {
                var byte = bytes[range.lowerBound + i]
                if byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") { byte |= 0x20 }
                if byte != start[i] { return false }
            }
            return true
        }

        /// RFC 9110 `tchar`.
        private static func isTokenByte(_ byte: UInt8) -> Bool {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                return true
            case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"), UInt8(ascii: "'"),
                 UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "^"), UInt8(ascii: "_"),
                 UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
                return true
            default:
                return false
            }
        }
    }
}
