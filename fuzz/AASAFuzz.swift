// libFuzzer entry point for the AASA engine: parser, validator, matcher and diff.
// Built by scripts/fuzz.sh together with Sources/AASAEngine (one module, no SwiftPM):
//   swiftc -sanitize=fuzzer,address -parse-as-library Sources/AASAEngine/*.swift fuzz/AASAFuzz.swift
//
// Input: an AASA body, optionally followed by a 0xFF byte and a URL to match.
// Besides "does not crash, does not hang", it checks three properties and traps when one fails:
//   - JSON that parses writes back to text that parses to the same text (round trip);
//   - a document compared with itself has an empty diff;
//   - matching is deterministic (the same URL and app give the same answer twice).

@_cdecl("LLVMFuzzerTestOneInput")
public func aasaFuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    let split = bytes.firstIndex(of: 0xFF) ?? size
    let body = UnsafeBufferPointer(rebasing: bytes[0..<split])

    if let value = try? JSONReader.parse(utf8: body) {
        let text = JSONWriter.string(value)
        guard let again = try? JSONReader.parse(text) else { fatalError("written JSON does not parse: \(text)") }
        guard JSONWriter.string(again) == text else { fatalError("JSON round trip changed: \(text)") }
    }

    let file = AASAFile.read(utf8: body)
    _ = file.isValid
    guard let document = file.document else { return 0 }
    guard AASADiff(old: document, new: document).isEmpty else { fatalError("a document differs from itself") }

    let urlText = split < size ? String(decoding: UnsafeBufferPointer(rebasing: bytes[(split + 1)...]), as: UTF8.self)
                               : "https://example.com/buy/42?x=1#frag"
    guard let url = try? MatchURL(urlText) else { return 0 }
    let matcher = CompiledAASA(document)
    for app in Array(document.allAppIDs.prefix(4)) + ["ABCDE12345.com.example.app"] {
        let first = matcher.match(url, appID: app)
        let second = matcher.match(url, appID: app)
        guard first == second else { fatalError("matching is not deterministic for \(urlText)") }
    }
    return 0
}
