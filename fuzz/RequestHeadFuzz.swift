// libFuzzer entry point for the hit path's request framing (Sources/EdgeHTTP/RequestHeadScanner.swift,
// which imports nothing). Built by scripts/fuzz.sh:
//   swiftc -sanitize=fuzzer,address -parse-as-library Sources/EdgeHTTP/RequestHeadScanner.swift fuzz/RequestHeadFuzz.swift
//
// Besides "does not crash, reads nothing out of bounds (ASan), does not hang", it traps when:
//   - a framed head is not exactly what the strict subset allows: GET or HEAD, HTTP/1.1, only CRLF
//     line ends, no control byte but HT, no byte above 0x7E, no body or upgrade field, ending in a
//     blank line, no longer than the limit, with every field range inside it;
//   - the answer depends on bytes after the head, or a prefix of a framed head is not `.incomplete`;
//   - `.incomplete` is given for input already at the length limit;
//   - a scan resumed from the checkpoint of an earlier prefix differs from a scan from the start.

@_cdecl("LLVMFuzzerTestOneInput")
public func requestHeadFuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    // Resuming: scan growing prefixes, each from the previous one's checkpoint.
    var checkpoint: RequestHeadScanner.Checkpoint?
    for end in stride(from: 1, through: size, by: max(1, size / 16)) {
        let prefix = UnsafeRawBufferPointer(rebasing: bytes[0..<end])
        let resumed = RequestHeadScanner.scan(prefix, resumingAt: checkpoint)
        guard resumed.result == RequestHeadScanner.scan(prefix) else { fatalError("a resumed scan differs at \(end) bytes") }
        guard resumed.result == .incomplete else { break }
        checkpoint = resumed.checkpoint
    }
    switch RequestHeadScanner.scan(bytes) {
    case .unsupported:
        return 0
    case .incomplete:
        guard size < RequestHeadScanner.maximumHeadLength else { fatalError("incomplete at \(size) bytes") }
        return 0
    case .head(let head):
        check(head, bytes)
        let exact = UnsafeRawBufferPointer(rebasing: bytes[0..<head.length])
        guard RequestHeadScanner.scan(exact) == .head(head) else { fatalError("the head depends on the bytes after it") }
        for cut in [0, 1, head.length / 2, head.length - 2, head.length - 1] where cut >= 0 && cut < head.length {
            guard RequestHeadScanner.scan(UnsafeRawBufferPointer(rebasing: bytes[0..<cut])) == .incomplete else {
                fatalError("a \(cut)-byte prefix of a framed head is not incomplete")
            }
        }
        return 0
    }
}

private func check(_ head: RequestHeadScanner.Head, _ bytes: UnsafeRawBufferPointer) {
    guard head.length >= 18, head.length <= bytes.count, head.length <= RequestHeadScanner.maximumHeadLength else {
        fatalError("bad length \(head.length)")
    }
    let text = Array(bytes[0..<head.length])
    let method: [UInt8] = head.isHead ? Array("HEAD ".utf8) : Array("GET ".utf8)
    guard text.starts(with: method) else { fatalError("method") }
    guard text.suffix(4) == Array("\r\n\r\n".utf8)[...] else { fatalError("no blank line at the end") }
    for (i, byte) in text.enumerated() {
        switch byte {
        case UInt8(ascii: "\r"): guard i + 1 < text.count, text[i + 1] == UInt8(ascii: "\n") else { fatalError("bare CR") }
        case UInt8(ascii: "\n"): guard i > 0, text[i - 1] == UInt8(ascii: "\r") else { fatalError("bare LF") }
        case UInt8(ascii: "\t"), 0x20...0x7E: break
        default: fatalError("byte \(byte) accepted")
        }
    }
    let lines = text.split(separator: UInt8(ascii: "\n")).map { Array($0.dropLast()) }
    guard lines.first?.suffix(9) == Array(" HTTP/1.1".utf8)[...] else { fatalError("version") }
    for line in lines.dropFirst() {
        let name = String(decoding: line.prefix { $0 != UInt8(ascii: ":") }, as: UTF8.self).lowercased()
        if ["content-length", "transfer-encoding", "expect", "upgrade"].contains(name) { fatalError("\(name) accepted") }
        if line.first == UInt8(ascii: " ") || line.first == UInt8(ascii: "\t") { fatalError("folded line accepted") }
    }
    for range in [head.target, head.host, head.clientID, head.userAgent, head.ifNoneMatch].compactMap({ $0 }) {
        guard range.lowerBound >= 0, range.upperBound <= head.length else { fatalError("field range outside the head") }
    }
}
