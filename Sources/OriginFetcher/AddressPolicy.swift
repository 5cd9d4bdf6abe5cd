import EdgeModel
/// Which addresses an origin fetch may connect to. Apple's CDN refuses private and reserved
/// addresses (`SWCERR00202`); so does the edge, unless the lab flag allows them. The check runs
/// on the address actually being connected to, so a DNS answer that changes between lookups
/// cannot slip through.
public enum AddressPolicy {
    /// The IPv4 or IPv6 address bytes (4 or 16) is private, loopback, link-local, CGNAT, ULA,
    /// unspecified, multicast, a documentation/benchmark/reserved range, or IPv4-mapped.
    public static func isPrivateOrReserved(_ bytes: [UInt8]) -> Bool {
        switch bytes.count {
        case 4: return isPrivateIPv4(bytes)
        case 16: return isPrivateIPv6(bytes)
        default: return true
        }
    }

    static func isPrivateIPv4(_ b: [UInt8]) -> Bool {
        switch (b[0], b[1], b[2]) {
        case (0, _, _): return true                          // "this network", unspecified
        case (10, _, _): return true                         // RFC 1918
        case (100, 64...127, _): return true                 // CGNAT (RFC 6598)
        case (127, _, _): return true                        // loopback
        case (169, 254, _): return true                      // link-local (incl. cloud metadata)
        case (172, 16...31, _): return true                  // RFC 1918
        case (192, 0, 0): return true                        // IETF protocol assignments
        case (192, 0, 2): return true                        // TEST-NET-1
        case (192, 88, 99): return true                      // 6to4 relay anycast (deprecated)
        case (192, 168, _): return true                      // RFC 1918
        case (198, 18...19, _): return true                  // benchmarking
        case (198, 51, 100): return true                     // TEST-NET-2
        case (203, 0, 113): return true                      // TEST-NET-3
        case (224...255, _, _): return true                  // multicast, reserved, broadcast
        default: return false
        }
    }

    static func isPrivateIPv6(_ b: [UInt8]) -> Bool {
        if b[0..<15].allSatisfy({ $0 == 0 }) { return true }  // :: and ::1
        // IPv4-mapped ::ffff:0:0/96: the IPv4 address inside decides (::ffff:127.0.0.1 is loopback).
        if b[0..<10].allSatisfy({ $0 == 0 }) && b[10] == 0xFF && b[11] == 0xFF { return isPrivateIPv4(Array(b[12..<16])) }
        if b[0..<12].allSatisfy({ $0 == 0 }) { return true }  // IPv4-compatible (deprecated)
        if b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xFF && b[3] == 0x9B { return true }  // NAT64 64:ff9b::/96 and /48
        if b[0] == 0x01 && b[1] == 0x00 && b[2..<8].allSatisfy({ $0 == 0 }) { return true }  // discard 100::/64
        if b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x0D && b[3] == 0xB8 { return true }  // documentation 2001:db8::/32
        if b[0] == 0x20 && b[1] == 0x01 && b[2] < 0x02 { return true }  // 2001::/23 IETF special purpose (Teredo, benchmarking…)
        if b[0] == 0x20 && b[1] == 0x02 { return true }  // 6to4 2002::/16 (can embed private IPv4)
        if b[0] == 0x3F && b[1] == 0xFF && b[2] & 0xF0 == 0 { return true }  // documentation 3fff::/20
        if b[0] & 0xFE == 0xFC { return true }  // ULA fc00::/7
        if b[0] == 0xFE && b[1] & 0xC0 == 0x80 { return true }  // link-local fe80::/10
        if b[0] == 0xFE && b[1] & 0xC0 == 0xC0 { return true }  // site-local fec0::/10 (deprecated)
        if b[0] == 0xFF { return true }  // multicast
        return false
    }

    /// Printable form of the address bytes (dotted quad, or RFC 5952 IPv6).
    public static func format(_ b: [UInt8]) -> String {
        if b.count == 4 { return b.map(String.init).joined(separator: ".") }
        guard b.count == 16 else { return "?" }
        let groups = stride(from: 0, to: 16, by: 2).map { UInt16(b[$0]) << 8 | UInt16(b[$0 + 1]) }
        // The longest run (≥ 2) of zero groups becomes "::".
        var best = (start: -1, length: 0)
        var i = 0
        while i < 8 {
            if groups[i] == 0 {
                var j = i
                while j < 8 && groups[j] == 0 { j += 1 }
                if j - i > best.length && j - i >= 2 { best = (i, j - i) }
                i = j
            } else {
                i += 1
            }
        }
        func hex(_ range: Range<Int>) -> String { range.map { String(groups[$0], radix: 16) }.joined(separator: ":") }
        guard best.start >= 0 else { return hex(0..<8) }
        return hex(0..<best.start) + "::" + hex((best.start + best.length)..<8)
    }
}
