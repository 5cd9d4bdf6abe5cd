import EdgeModel
import Testing
import AASAEngine
@testable import OriginFetcher

@Suite struct SHA256Tests {
    @Test(arguments: [
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
    ])
    func knownVectors(input: String, expected: String) {
        #expect(SHA256.hex(Array(input.utf8)) == expected)
    }

    @Test func millionAs() {
        #expect(SHA256.hex([UInt8](repeating: 0x61, count: 1_000_000)) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test func paddingBoundaries() {
        // 55, 56 and 64 bytes straddle the padding rules; digests must differ and be stable.
        let digests = [55, 56, 63, 64, 65].map { SHA256.hex([UInt8](repeating: 0x62, count: $0)) }
        #expect(Set(digests).count == 5)
        #expect(digests.allSatisfy { $0.count == 64 })
    }
}

@Suite struct OriginHostTests {
    @Test(arguments: [
        ("example.com", "example.com"),
        ("Example.COM", "example.com"),
        ("*.example.com", "example.com"),
        ("example.com:443", "example.com"),
        ("example.com:8443", "example.com:8443"),
        ("xn--bcher-kva.example", "xn--bcher-kva.example"),
        ("a-b.c-d.example", "a-b.c-d.example"),
        ("1.example.com", "1.example.com"),
    ])
    func accepts(input: String, canonical: String) throws {
        #expect(try OriginHost(input).description == canonical)
    }

    @Test(arguments: [
        "", "localhost", "com", "127.0.0.1", "[::1]", "10.0.0.1:443", "example.0x1f", "a..b.com", ".example.com",
        "example.com.", "-a.example.com", "a-.example.com", "under_score.example.com", "ex%61mple.com",
        "bücher.example", "example.com:0", "example.com:65536", "example.com:", "example.com:x",
        String(repeating: "a", count: 64) + ".com", (0..<60).map { _ in "abcd" }.joined(separator: ".") + ".com",
        "a b.com", "foo.localhost",
    ])
    func refuses(input: String) {
        #expect(throws: OriginHost.Invalid.self) { try OriginHost(input) }
    }

    @Test func originURL() throws {
        #expect(try OriginHost("Example.com:8443").originURL == "https://example.com:8443/.well-known/apple-app-site-association")
        #expect(try OriginHost("example.com").originURL == "https://example.com/.well-known/apple-app-site-association")
    }
}

@Suite struct AddressPolicyTests {
    func v4(_ text: String) -> [UInt8] { text.split(separator: ".").map { UInt8($0)! } }
    func v6(_ groups: [UInt16]) -> [UInt8] { groups.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] } }

    @Test(arguments: ["10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1", "127.0.0.1", "169.254.169.254",
                      "100.64.0.1", "100.127.255.255", "0.0.0.0", "224.0.0.1", "255.255.255.255", "192.0.2.7",
                      "198.51.100.1", "203.0.113.9", "198.18.0.1", "240.0.0.1"])
    func privateIPv4(address: String) {
        #expect(AddressPolicy.isPrivateOrReserved(v4(address)))
    }

    @Test(arguments: ["8.8.8.8", "17.253.144.10", "172.32.0.1", "100.128.0.1", "1.1.1.1", "192.169.0.1"])
    func publicIPv4(address: String) {
        #expect(!AddressPolicy.isPrivateOrReserved(v4(address)))
    }

    @Test func ipv6() {
        #expect(AddressPolicy.isPrivateOrReserved(v6([0, 0, 0, 0, 0, 0, 0, 1])))                        // ::1
        #expect(AddressPolicy.isPrivateOrReserved(v6([0, 0, 0, 0, 0, 0, 0, 0])))                        // ::
        #expect(AddressPolicy.isPrivateOrReserved(v6([0xfe80, 0, 0, 0, 1, 2, 3, 4])))                   // link-local
        #expect(AddressPolicy.isPrivateOrReserved(v6([0xfd00, 1, 2, 3, 4, 5, 6, 7])))                   // ULA
        #expect(AddressPolicy.isPrivateOrReserved(v6([0xff02, 0, 0, 0, 0, 0, 0, 1])))                   // multicast
        #expect(AddressPolicy.isPrivateOrReserved(v6([0x2001, 0x0db8, 0, 0, 0, 0, 0, 1])))              // documentation
        // IPv4-mapped ::ffff:0:0/96: the IPv4 address inside is checked against the IPv4 ranges.
        #expect(AddressPolicy.isPrivateOrReserved(v6([0, 0, 0, 0, 0, 0xffff, 0x7f00, 0x0001])))         // ::ffff:127.0.0.1
        #expect(AddressPolicy.isPrivateOrReserved(v6([0, 0, 0, 0, 0, 0xffff, 0x0a01, 0x0203])))         // ::ffff:10.1.2.3
        #expect(AddressPolicy.isPrivateOrReserved(v6([0, 0, 0, 0, 0, 0xffff, 0xa9fe, 0xa9fe])))         // ::ffff:169.254.169.254
        #expect(AddressPolicy.isPrivateOrReserved(v6([0, 0, 0, 0, 0, 0xffff, 0xc0a8, 0x0001])))         // ::ffff:192.168.0.1
        #expect(!AddressPolicy.isPrivateOrReserved(v6([0, 0, 0, 0, 0, 0xffff, 0x0808, 0x0808])))        // ::ffff:8.8.8.8
        #expect(!AddressPolicy.isPrivateOrReserved(v6([0x2620, 0x149, 0, 0, 0, 0, 0, 1])))              // Apple's CDN range
        #expect(!AddressPolicy.isPrivateOrReserved(v6([0x2a00, 0x1450, 0x4001, 0, 0, 0, 0, 0x200e])))
    }

    @Test func formatting() {
        #expect(AddressPolicy.format(v4("127.0.0.1")) == "127.0.0.1")
        #expect(AddressPolicy.format(v6([0, 0, 0, 0, 0, 0, 0, 1])) == "::1")
        #expect(AddressPolicy.format(v6([0x2001, 0xdb8, 0, 0, 1, 0, 0, 1])) == "2001:db8::1:0:0:1")
        #expect(AddressPolicy.format(v6([0xfe80, 0, 0, 0, 0, 0, 0, 0])) == "fe80::")
    }
}

@Suite struct FailureTableTests {
    @Test func reasonsAndTryDirect() {
        let table: [(FailureCode, String, Bool)] = [
            (.badHTTPResponse, "SWCERR00101 Bad HTTP Response", false),
            (.dnsFailure, "SWCERR00201 DNS Failure", true),
            (.privateAddress, "SWCERR00202 Connections to private/reserved IP addresses are not allowed", false),
            (.connectionFailed, "SWCERR00203 Connection Failed", true),
            (.tlsFailure, "SWCERR00204 TLS Failure", true),
            (.timeout, "SWCERR00301 Timeout", true),
            (.tooLarge, "SWCERR00401 Too Large", false),
            (.invalidJSON, "SWCERR00402 Invalid JSON", false),
        ]
        for (code, reason, tryDirect) in table {
            let failure = OriginFailure(code: code, details: JSONObject())
            #expect(failure.reason == reason)
            #expect(failure.tryDirect == tryDirect)
        }
        let withStatus = OriginFailure(code: .badHTTPResponse, statusLine: "404 Not Found", details: .init())
        #expect(withStatus.reason == "SWCERR00101 Bad HTTP Response: 404 Not Found")
    }

    @Test func jsonObjectCheck() {
        #expect(Transfer.jsonObjectProblem(Array(#"{"a":1}"#.utf8)) == nil)
        #expect(Transfer.jsonObjectProblem([0xEF, 0xBB, 0xBF] + Array("{}".utf8)) == nil)
        #expect(Transfer.jsonObjectProblem([]) == "the body is empty")
        #expect(Transfer.jsonObjectProblem(Array("[1]".utf8)) == "the body is an array, not a JSON object")
        #expect(Transfer.jsonObjectProblem(Array("{".utf8))?.hasPrefix("not valid JSON") == true)
        #expect(Transfer.jsonObjectProblem([0xFF]) == "the body is not valid UTF-8")
    }
}
