/// Text that came from outside (an origin's reason phrase or headers, keys of a file being
/// validated) made safe to put in a header, a log line, JSON or a terminal: control characters
/// (C0, DEL, C1) are written as `\u{1B}`-style escapes, and the whole is cut to a bound, on a
/// character boundary, with `…` marking the cut.
public enum OutsideText {
    public static let defaultLimit = 256

    public static func clean(_ text: some StringProtocol, limit: Int = defaultLimit) -> String {
        // Most text from outside is already clean: one pass over its bytes, no rebuilding.
        if text.utf8.count <= limit && !hasControlBytes(text.utf8) { return String(text) }
        var out = ""
        var bytes = 0
        for scalar in text.unicodeScalars {
            let piece: String
            switch scalar.value {
            case 0x00...0x1F, 0x7F...0x9F: piece = "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            default: piece = String(scalar)
            }
            let size = piece.utf8.count
            if bytes + size > limit {
                out += "…"
                return out
            }
            out += piece
            bytes += size
        }
        return out
    }

    /// A C0 control or DEL (one byte), or a C1 control (U+0080-U+009F: 0xC2 then 0x80-0x9F).
    static func hasControlBytes(_ bytes: some Sequence<UInt8>) -> Bool {
        var afterC2 = false
        for byte in bytes {
            if byte < 0x20 || byte == 0x7F || (afterC2 && byte <= 0x9F && byte >= 0x80) { return true }
            afterC2 = byte == 0xC2
        }
        return false
    }

    /// Whether `clean` would return the text unchanged.
    public static func isClean(_ text: some StringProtocol, limit: Int = defaultLimit) -> Bool {
        text.utf8.count <= limit && !text.unicodeScalars.contains { (0x00...0x1F).contains($0.value) || (0x7F...0x9F).contains($0.value) }
    }
}
