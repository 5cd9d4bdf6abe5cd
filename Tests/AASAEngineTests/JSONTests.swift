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
