import Testing
@testable import AASAEngine

@Suite struct JSONReaderTests {
    @Test func keepsMemberOrderAndLastDuplicateWins() throws {
        let value = try JSONReader.parse(#"{"b":1,"a":2,"b":3}"#)
        let object = try #require(value.objectValue)
        #expect(object.members.map(\.key) == ["b", "a", "b"])
        #expect(object.keys == ["b", "a"])
        #expect(object["b"] == .number(JSONNumber("3")))
    }

    @Test func distinguishesBooleansFromNumbers() throws {
        #expect(try JSONReader.parse("[true,1,0,false,null]") == .array([.bool(true), 1, 0, .bool(false), .null]))
    }

    @Test func decodesEscapesAndSurrogatePairs() throws {
        let value = try JSONReader.parse(#""caf\u00e9 \ud83d\ude00 \n\t\"\\\/""#)
        #expect(value == .string("café 😀 \n\t\"\\/"))
    }

    @Test(arguments: [
        ("", "unexpected end of input"),
        ("{", "unexpected end of input in an object"),
        ("[1,]", "unexpected character ']'"),
        ("{\"a\" 1}", "expected ':' after an object key"),
        ("01", "leading zero in a number"),
        ("\"\\ud800\"", "unpaired surrogate in \\u escape"),
        ("\"a\u{01}\"", "unescaped control character in a string"),
        ("[1] x", "unexpected data after the JSON value"),
        ("tru", "invalid literal (expected true)"),
        ("{'a':1}", "expected a string key"),
    ])
    func rejectsMalformedInput(text: String, reason: String) {
        #expect(throws: JSONSyntaxError.self) { try JSONReader.parse(text) }
        do {
            _ = try JSONReader.parse(text)
        } catch {
            #expect(error.reason == reason)
        }
    }

    @Test func reportsLineAndColumn() {
        do {
            _ = try JSONReader.parse("{\n  \"a\": [1,\n  x]\n}")
            Issue.record("expected an error")
        } catch {
            #expect(error.line == 3)
            #expect(error.column == 3)
        }
    }

    @Test func refusesExcessiveNesting() {
        let deep = String(repeating: "[", count: JSONReader.maximumDepth + 1) + String(repeating: "]", count: JSONReader.maximumDepth + 1)
        #expect(throws: JSONSyntaxError.self) { try JSONReader.parse(deep) }
        let fine = String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
        #expect(throws: Never.self) { try JSONReader.parse(fine) }
    }

    @Test func writerRoundTripsAndEscapes() throws {
        let text = #"{"z":[1.50,-2e3,true,null],"a":"line\nquote\" tab\t ctl\u0001 é"}"#
        let value = try JSONReader.parse(text)
        let written = JSONWriter.string(value)
        #expect(written == #"{"z":[1.50,-2e3,true,null],"a":"line\nquote\" tab\t ctl\u0001 é"}"#)
        #expect(try JSONReader.parse(written) == value)
        #expect(JSONWriter.string(value, sortedKeys: true).hasPrefix(#"{"a":"#))
    }

    @Test func utf8Validation() {
        #expect(JSONReader.isValidUTF8(Array("café".utf8)))
        #expect(!JSONReader.isValidUTF8([0x63, 0xC3]))
        #expect(!JSONReader.isValidUTF8([0xFF]))
        #expect(!JSONReader.isValidUTF8([0xED, 0xA0, 0x80]))  // encoded surrogate
    }

    @Test func pointerEscaping() {
        #expect(JSONPointer.root.appending("applinks").appending("a/b~c").appending(3).description == "/applinks/a~1b~0c/3")
        #expect(JSONPointer.root.description == "")
    }
}

@Suite struct JSONValueEncoderTests {
    struct Inner: Encodable {
        let flag: Bool
        let ratio: Double
    }
    struct Outer: Encodable {
        let zeta: String
        let alpha: Int?
        let missing: String?
        let inner: Inner?
        let list: [Int8]
        let fixed: FixedPoint
        let embedded: JSONValue
        let unsigned: UInt64
    }

    @Test func declarationOrderAndExplicitNulls() throws {
        let value = Outer(zeta: "z", alpha: 3, missing: nil, inner: Inner(flag: true, ratio: 0.25), list: [1, -2],
                          fixed: FixedPoint(6.66, decimals: 1), embedded: ["k": [1, nil]], unsigned: .max)
        let text = try JSONValueEncoder().string(value)
        #expect(text == #"{"zeta":"z","alpha":3,"missing":null,"inner":{"flag":true,"ratio":0.25},"list":[1,-2],"fixed":6.7,"embedded":{"k":[1,null]},"unsigned":18446744073709551615}"#)
        let absent = Outer(zeta: "", alpha: nil, missing: nil, inner: nil, list: [], fixed: FixedPoint(0, decimals: 3), embedded: .null, unsigned: 0)
        #expect(try JSONValueEncoder().string(absent) == #"{"zeta":"","alpha":null,"missing":null,"inner":null,"list":[],"fixed":0.000,"embedded":null,"unsigned":0}"#)
    }

    /// A custom `encode(to:)` that adds members to the object another type wrote keeps both in order.
    @Test func membersAddedAfterAnotherTypesAreAppended() throws {
        struct Extended: Encodable {
            let base: Inner
            enum CodingKeys: String, CodingKey { case extra }
            func encode(to encoder: any Encoder) throws {
                try base.encode(to: encoder)
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(["a", "b"], forKey: .extra)
            }
        }
        #expect(try JSONValueEncoder().string(Extended(base: Inner(flag: false, ratio: 1))) == #"{"flag":false,"ratio":1.0,"extra":["a","b"]}"#)
    }

    @Test func nonFiniteNumbersAreRefused() {
        #expect(throws: EncodingError.self) { try JSONValueEncoder().encode(Inner(flag: true, ratio: .nan)) }
        #expect(throws: EncodingError.self) { try JSONValueEncoder().encode([Double.infinity]) }
    }

    /// What it writes reads back as the same value, and Foundation-free round trips keep strings exact.
    @Test func outputParsesBack() throws {
        let tricky = ["quote\"", "line\nbreak", "\u{1}", "é", "\u{2028}"]
        let text = try JSONValueEncoder().string(tricky)
        #expect(try JSONReader.parse(text) == .array(tricky.map { .string($0) }))
    }
}

@Suite struct FixedPointTests {
    @Test func roundsHalfAwayFromZero() {
        let cases: [(Double, Int, String)] = [(6.66, 1, "6.7"), (0, 3, "0.000"), (0.004, 3, "0.004"), (24, 3, "24.000"), (-1.25, 1, "-1.3"),
                                              (1234.5678, 1, "1234.6"), (0.05, 1, "0.1"), (-0.01, 1, "0.0"), (7.5, 0, "8"), (3, 0, "3")]
        for (value, decimals, text) in cases {
            #expect(FixedPoint(value, decimals: decimals).jsonValue == .number(JSONNumber(text)), "\(value) to \(decimals)")
        }
        #expect(FixedPoint(.nan, decimals: 1).jsonValue == .null)
    }
}

@Suite struct OutsideTextTests {
    /// Clean text comes back as it is; C0, DEL and C1 controls are shown escaped; long text is cut.
    @Test func controlsAreEscapedAndCleanTextKept() {
        #expect(OutsideText.clean("application/json; charset=utf-8") == "application/json; charset=utf-8")
        #expect(OutsideText.clean("é ü – ✓") == "é ü – ✓")
        #expect(OutsideText.clean("a\u{1B}[31mb") == "a\\u{1B}[31mb")
        #expect(OutsideText.clean("bell\u{7}") == "bell\\u{7}")
        #expect(OutsideText.clean("del\u{7F}") == "del\\u{7F}")
        #expect(OutsideText.clean("c1\u{85}x\u{9F}") == "c1\\u{85}x\\u{9F}")
        #expect(OutsideText.clean("\u{A0}\u{C2}") == "\u{A0}\u{C2}")  // 0xC2 0xA0 and 0xC3 0x82: not controls
        #expect(OutsideText.clean(String(repeating: "x", count: 20), limit: 10) == "xxxxxxxxxx…")
        #expect(OutsideText.clean("\u{1}\u{1}", limit: 7) == "\\u{1}…")
    }
}
