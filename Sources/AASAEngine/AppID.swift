/// Application identifiers: `<Team ID>.<bundle ID>`.
///
/// swcd treats the part before the first `.` as a team prefix only when that `.` is at index 10,
/// and upper-cases the prefix; otherwise the whole string is a bundle ID with no prefix.
public enum AppID {
    /// The form swcd compares: team prefix upper-cased, bundle ID unchanged.
    public static func canonical(_ appID: String) -> String {
        let utf8 = Array(appID.utf8)
        guard utf8.count > 10, utf8[10] == UInt8(ascii: "."), !utf8[0..<10].contains(UInt8(ascii: ".")) else {
            return appID
        }
        let prefix = utf8[0..<10].map { $0 >= 0x61 && $0 <= 0x7A ? $0 - 0x20 : $0 }
        return String(decoding: prefix + utf8[10...], as: UTF8.self)
    }

    /// Why an app ID would not be recognised as `<10-character team ID>.<bundle ID>`, or nil when it is.
    public static func problem(_ appID: String) -> String? {
        let utf8 = Array(appID.utf8)
        guard let dot = utf8.firstIndex(of: UInt8(ascii: ".")) else {
            return "'\(appID)' has no team ID prefix (expected TEAMID.bundle.id with a 10-character team ID)"
        }
        guard dot == 10 else {
            return "'\(appID)' does not start with a 10-character team ID (found \(dot) characters before the first '.')"
        }
        let teamID = utf8[0..<10]
        guard teamID.allSatisfy({ isASCIIAlphanumeric($0) }) else {
            return "the team ID of '\(appID)' contains characters other than letters and digits"
        }
        guard utf8.count > 11 else { return "'\(appID)' has an empty bundle ID after the team ID" }
        return nil
    }

    private static func isASCIIAlphanumeric(_ b: UInt8) -> Bool {
        (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
    }
}
