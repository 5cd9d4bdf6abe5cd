@testable import EdgeHTTP
import Testing

/// The hit path's request framing: what it accepts must be exactly framed, and everything outside
/// its strict subset must be left to NIO's parser (`.unsupported`), never guessed at.
@Suite struct RequestHeadScannerTests {
    func scan(_ text: String) -> RequestHeadScanner.Result {
        Array(text.utf8).withUnsafeBytes { RequestHeadScanner.scan($0) }
    }

    func head(_ text: String) throws -> (RequestHeadScanner.Head, [UInt8]) {
        guard case .head(let head) = scan(text) else { throw ScanFailed(result: scan(text)) }
        return (head, Array(text.utf8))
    }

    struct ScanFailed: Error { let result: RequestHeadScanner.Result }

    func text(_ bytes: [UInt8], _ range: Range<Int>?) -> String? {
        range.map { String(decoding: bytes[$0], as: UTF8.self) }
    }

    @Test func framesAGetWithTheFieldsTheEdgeReads() throws {
        let request = "GET /a/v1/a.test?x=1 HTTP/1.1\r\nHost: edge:8080\r\nUser-Agent:  curl/8 \r\nX-Client-ID: lab-7\r\n"
            + "If-None-Match: \"e1\"\r\nAccept: */*\r\nConnection: Keep-Alive\r\n\r\nGET /next"
        let (head, bytes) = try head(request)
        #expect(head.length == request.utf8.count - "GET /next".utf8.count)
        #expect(!head.isHead)
        #expect(text(bytes, head.target) == "/a/v1/a.test?x=1")
        #expect(text(bytes, head.host) == "edge:8080")
        #expect(text(bytes, head.userAgent) == "curl/8")  // optional whitespace trimmed on both sides
        #expect(text(bytes, head.clientID) == "lab-7")
        #expect(text(bytes, head.ifNoneMatch) == "\"e1\"")
    }

    @Test func fieldNamesAreCaseInsensitiveAndAbsentFieldsNil() throws {
        let (head, bytes) = try head("HEAD / HTTP/1.1\r\nhOsT: x\r\n\r\n")
        #expect(head.isHead)
        #expect(text(bytes, head.host) == "x")
        #expect(head.userAgent == nil && head.clientID == nil && head.ifNoneMatch == nil)
        let (bare, _) = try self.head("GET / HTTP/1.1\r\n\r\n")
        #expect(bare.host == nil && bare.length == 18)
    }

    @Test func everyPrefixOfAnAcceptedHeadIsIncomplete() throws {
        let request = "GET /a/v1/a.test HTTP/1.1\r\nHost: x\r\nUser-Agent: y\r\n\r\n"
        for end in 0..<request.utf8.count {
            let prefix = String(decoding: Array(request.utf8)[..<end], as: UTF8.self)
            #expect(scan(prefix) == .incomplete, "\(prefix.debugDescription)")
        }
        #expect(try head(request).0.length == request.utf8.count)
    }

    @Test(arguments: [
        // Methods and versions NIO handles.
        "POST /a/v1/a.test HTTP/1.1\r\nHost: x\r\n\r\n",
        "get /a/v1/a.test HTTP/1.1\r\nHost: x\r\n\r\n",
        "GET /a/v1/a.test HTTP/1.0\r\nHost: x\r\n\r\n",
        "GET /a/v1/a.test HTTP/2.0\r\nHost: x\r\n\r\n",
        "GET http://a.test/ HTTP/1.1\r\nHost: x\r\n\r\n",
        "GET * HTTP/1.1\r\nHost: x\r\n\r\n",
        "GET  /a HTTP/1.1\r\nHost: x\r\n\r\n",
        "\r\nGET /a HTTP/1.1\r\nHost: x\r\n\r\n",
        // A request through another tier: the router checks its Via for a loop (508).
        "GET /a/v1/a.test HTTP/1.1\r\nHost: x\r\nVia: 1.1 edge-a (aasa-edge/0.1.0)\r\n\r\n",
        // Line ends and whitespace.
        "GET /a HTTP/1.1\nHost: x\n\n",
        "GET /a HTTP/1.1\r\nHost: x\n\r\n",
        "GET /a HTTP/1.1\r\nHost: x\r\r\n\r\n",
        "GET /a HTTP/1.1\r\nHost: x\r\n\r\r",
        "GET /a HTTP/1.1\r\nHost : x\r\n\r\n",
        "GET /a HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n",
        "GET /a HTTP/1.1\r\n: empty-name\r\n\r\n",
        "GET /a HTTP/1.1\r\nHo\u{0}st: x\r\n\r\n",
        "GET /a HTTP/1.1\r\nHost: x\u{0}y\r\n\r\n",
        "GET /a HTTP/1.1\r\nHost: x\u{7f}\r\n\r\n",
        "GET /a HTTP/1.1\r\nHost: caf\u{e9}.test\r\n\r\n",
        "GET /caf\u{e9} HTTP/1.1\r\nHost: x\r\n\r\n",
        "GET /a\tb HTTP/1.1\r\nHost: x\r\n\r\n",
        // Bodies, upgrades and connection management.
        "GET /a HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
        "GET /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        "GET /a HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n\r\n",
        "GET /a HTTP/1.1\r\nHost: x\r\nUpgrade: h2c\r\n\r\n",
        "GET /a HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        "GET /a HTTP/1.1\r\nHost: x\r\nConnection: keep-alive, Upgrade\r\n\r\n",
        // A field the edge reads, twice.
        "GET /a HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n",
        "GET /a HTTP/1.1\r\nHost: x\r\nX-Client-ID: a\r\nx-client-id: b\r\n\r\n",
        "GET /a HTTP/1.1\r\nHost: x\r\nUser-Agent: a\r\nUser-Agent: b\r\n\r\n",
        "GET /a HTTP/1.1\r\nHost: x\r\nIf-None-Match: a\r\nIf-None-Match: b\r\n\r\n",
    ])
    func leavesEverythingOutsideTheSubsetToNIO(_ request: String) {
        #expect(scan(request) == .unsupported)
    }

    @Test func longHeadsGoToNIO() {
        let filler = String(repeating: "a", count: RequestHeadScanner.maximumHeadLength)
        #expect(scan("GET /a HTTP/1.1\r\nHost: x\r\nX-Pad: \(filler)\r\n\r\n") == .unsupported)
        // Unfinished and already too long: NIO's larger limit decides.
        #expect(scan("GET /a HTTP/1.1\r\nHost: x\r\nX-Pad: \(filler)") == .unsupported)
        #expect(scan("GET /\(filler)") == .unsupported)
        // Just within the limit is framed.
        let header = "GET /a HTTP/1.1\r\nX-Pad: \r\n\r\n"
        let fits = "GET /a HTTP/1.1\r\nX-Pad: " + String(repeating: "b", count: RequestHeadScanner.maximumHeadLength - header.utf8.count) + "\r\n\r\n"
        #expect(fits.utf8.count == RequestHeadScanner.maximumHeadLength)
        if case .head(let head) = scan(fits) { #expect(head.length == fits.utf8.count) } else { Issue.record("not framed") }
    }

    /// A head arriving a byte at a time is scanned from where the last scan stopped: resuming
    /// from the returned checkpoint gives, for every prefix, exactly what a scan from the start
    /// gives, and the checkpoint only moves forward, to line ends (so each byte is read about
    /// once, not once per arriving byte).
    @Test func resumedScansEqualFullScans() {
        let requests = [
            "GET /a/v1/a.test HTTP/1.1\r\nHost: edge\r\nUser-Agent: swcd\r\nX-Client-ID: lab-7\r\nIf-None-Match: \"e\"\r\n\r\nGET /next",
            "HEAD /.well-known/apple-app-site-association HTTP/1.1\r\nHost: a.test\r\nX-Pad: " + String(repeating: "p", count: 300) + "\r\n\r\n",
            "GET /a HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
            "GET /a HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc",
            "GET /a HTTP/1.1\r\nX: 1\n\r\n",
            "GET /a HTTP/1.1\r\nX-Long: " + String(repeating: "l", count: 9000) + "\r\n\r\n",
        ]
        for request in requests {
            let bytes = Array(request.utf8)
            var checkpoint: RequestHeadScanner.Checkpoint?
            var lastOffset = 0
            var checkpoints = 0
            for end in 1...bytes.count {
                let full = bytes[..<end].withUnsafeBytes { RequestHeadScanner.scan($0) }
                let resumed = bytes[..<end].withUnsafeBytes { RequestHeadScanner.scan($0, resumingAt: checkpoint) }
                #expect(resumed.result == full, "\(request.prefix(30)) at \(end)")
                if let next = resumed.checkpoint {
                    #expect(next.offset >= lastOffset)
                    if next.offset > lastOffset { checkpoints += 1 }
                    #expect(next.offset == 0 || bytes[next.offset - 1] == UInt8(ascii: "\n"))
                    lastOffset = next.offset
                }
                checkpoint = resumed.checkpoint
                if full != .incomplete { break }
            }
            #expect(checkpoints >= 1, "\(request.prefix(30)): the scan never advanced its checkpoint")
        }
    }
}

