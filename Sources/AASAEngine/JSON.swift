// A small, strict RFC 8259 JSON reader and writer.
//
// The engine keeps its own JSON model instead of Foundation's because validation needs what
// `JSONSerialization` throws away: member order (rules are ordered), duplicate keys, the exact
// byte offset of a syntax error, and the difference between `true` and `1`.

/// A JSON number, kept as written so that output round-trips exactly.
public struct JSONNumber: Sendable, Hashable, CustomStringConvertible {
    public let text: String
    public var doubleValue: Double { Double(text) ?? .nan }
    public var description: String { text }
    public init(_ text: String) { self.text = text }
}

public struct JSONMember: Sendable, Equatable {
    public var key: String
    public var value: JSONValue
    public init(_ key: String, _ value: JSONValue) {
        self.key = key
        self.value = value
    }
}

/// An object with its members in document order. Lookups answer with the *last* member of a
/// repeated name, as Foundation's parser (and so swcd) does.
public struct JSONObject: Sendable, Equatable {
    public var members: [JSONMember] {
        didSet { index = Self.index(members) }
    }
    /// Where the last member of each name is, for objects with more than a few members, so a
    /// lookup costs the same in an object of 10,000 keys as in one of 3.
    private var index: [String: Int]?

    public init(_ members: [JSONMember] = []) {
        self.members = members
        index = Self.index(members)
    }

    private static func index(_ members: [JSONMember]) -> [String: Int]? {
        guard members.count > 8 else { return nil }
        var index = [String: Int](minimumCapacity: members.count)
        for (position, member) in members.enumerated() { index[member.key] = position }
        return index
    }

    public static func == (a: JSONObject, b: JSONObject) -> Bool { a.members == b.members }

    public subscript(key: String) -> JSONValue? {
        if let index { return index[key].map { members[$0].value } }
        for member in members.reversed() where member.key == key { return member.value }
        return nil
    }

    /// Member names in first-seen order, each once.
    public var keys: [String] {
        var seen = Set<String>()
        return members.compactMap { seen.insert($0.key).inserted ? $0.key : nil }
    }

    /// Members after duplicate removal (last value wins, first position kept).
    public var uniqueMembers: [JSONMember] { keys.map { JSONMember($0, self[$0]!) } }
    public var isEmpty: Bool { members.isEmpty }
}

public indirect enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case number(JSONNumber)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)

    public var stringValue: String? { if case .string(let s) = self { return s } else { return nil } }
    public var objectValue: JSONObject? { if case .object(let o) = self { return o } else { return nil } }
    public var arrayValue: [JSONValue]? { if case .array(let a) = self { return a } else { return nil } }

    /// The JSON type name, for messages ("a number", "an array").
    public var typeDescription: String {
        switch self {
        case .null: return "null"
        case .bool: return "a boolean"
        case .number: return "a number"
        case .string: return "a string"
        case .array: return "an array"
        case .object: return "an object"
        }
    }
}

// MARK: - Reading

public struct JSONSyntaxError: Error, Sendable, Equatable, CustomStringConvertible {
    public let offset: Int
    public let line: Int
    public let column: Int
    public let reason: String
    public var description: String { "\(reason) at line \(line), column \(column)" }
}

public enum JSONReader {
    /// Nesting deeper than this is refused: no real AASA file comes close, and it keeps
    /// hostile input from exhausting the stack.
    public static let maximumDepth = 256

    public static func parse(_ text: String) throws(JSONSyntaxError) -> JSONValue {
        let result: Result<JSONValue, JSONSyntaxError> = Array(text.utf8).withUnsafeBufferPointer { buffer in
            Result { () throws(JSONSyntaxError) in try parse(utf8: buffer) }
        }
        return try result.get()
    }

    /// Parses UTF-8 bytes. The caller is expected to have checked that the bytes are valid UTF-8
    /// (`isValidUTF8`); invalid sequences inside strings are reported as syntax errors.
    public static func parse(utf8 bytes: UnsafeBufferPointer<UInt8>) throws(JSONSyntaxError) -> JSONValue {
        var parser = Parser(bytes: bytes)
        parser.skipWhitespace()
        let value = try parser.parseValue(depth: 0)
        parser.skipWhitespace()
        if parser.position < bytes.count { throw parser.error("unexpected data after the JSON value") }
        return value
    }

    /// The 1-based line and column (in characters) of a byte offset.
    static func lineAndColumn(of offset: Int, in bytes: UnsafeBufferPointer<UInt8>) -> (line: Int, column: Int) {
        var line = 1
        var column = 1
        for byte in bytes[0..<min(max(0, offset), bytes.count)] {
            if byte == UInt8(ascii: "\n") {
                line += 1
                column = 1
            } else if byte & 0xC0 != 0x80 {
                column += 1
            }
        }
        return (line, column)
    }

    public static func isValidUTF8(_ bytes: some Collection<UInt8>) -> Bool {
        var iterator = bytes.makeIterator()
        var decoder = UTF8()
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue: continue
            case .emptyInput: return true
            case .error: return false
            }
        }
    }

    private struct Parser {
        let bytes: UnsafeBufferPointer<UInt8>
        var position = 0

        init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

        func error(_ reason: String, at offset: Int? = nil) -> JSONSyntaxError {
            let offset = offset ?? position
            let (line, column) = JSONReader.lineAndColumn(of: offset, in: bytes)
            return JSONSyntaxError(offset: offset, line: line, column: column, reason: reason)
        }

        mutating func skipWhitespace() {
            while position < bytes.count {
                switch bytes[position] {
                case 0x20, 0x09, 0x0A, 0x0D: position += 1
                default: return
                }
            }
        }

        mutating func parseValue(depth: Int) throws(JSONSyntaxError) -> JSONValue {
            guard position < bytes.count else { throw error("unexpected end of input") }
            switch bytes[position] {
            case UInt8(ascii: "{"): return try parseObject(depth: depth + 1)
            case UInt8(ascii: "["): return try parseArray(depth: depth + 1)
            case UInt8(ascii: "\""): return .string(try parseString())
            case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
            case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
            case UInt8(ascii: "n"): try expectLiteral("null"); return .null
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try parseNumber())
            default: throw error("unexpected character '\(printable(bytes[position]))'")
            }
        }

        func printable(_ byte: UInt8) -> String {
            (0x21...0x7E).contains(byte) ? String(UnicodeScalar(byte)) : "\\x" + String(byte, radix: 16)
        }

        mutating func expectLiteral(_ literal: StaticString) throws(JSONSyntaxError) {
            let start = position
            for expected in UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount) {
                guard position < bytes.count, bytes[position] == expected else {
                    throw error("invalid literal (expected \(literal))", at: start)
                }
                position += 1
            }
        }

        mutating func parseObject(depth: Int) throws(JSONSyntaxError) -> JSONValue {
            if depth > JSONReader.maximumDepth { throw error("nesting deeper than \(JSONReader.maximumDepth) levels") }
            position += 1
            var members: [JSONMember] = []
            skipWhitespace()
            if position < bytes.count, bytes[position] == UInt8(ascii: "}") {
                position += 1
                return .object(JSONObject(members))
            }
            while true {
                skipWhitespace()
                guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else {
                    throw error(position < bytes.count ? "expected a string key" : "unexpected end of input in an object")
                }
                let key = try parseString()
                skipWhitespace()
                guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else {
                    throw error("expected ':' after an object key")
                }
                position += 1
                skipWhitespace()
                members.append(JSONMember(key, try parseValue(depth: depth)))
                skipWhitespace()
                guard position < bytes.count else { throw error("unexpected end of input in an object") }
                if bytes[position] == UInt8(ascii: ",") {
                    position += 1
                    continue
                }
                if bytes[position] == UInt8(ascii: "}") {
                    position += 1
                    return .object(JSONObject(members))
                }
                throw error("expected ',' or '}' in an object")
            }
        }

        mutating func parseArray(depth: Int) throws(JSONSyntaxError) -> JSONValue {
            if depth > JSONReader.maximumDepth { throw error("nesting deeper than \(JSONReader.maximumDepth) levels") }
            position += 1
            var elements: [JSONValue] = []
            skipWhitespace()
            if position < bytes.count, bytes[position] == UInt8(ascii: "]") {
                position += 1
                return .array(elements)
            }
            while true {
                skipWhitespace()
                elements.append(try parseValue(depth: depth))
                skipWhitespace()
                guard position < bytes.count else { throw error("unexpected end of input in an array") }
                if bytes[position] == UInt8(ascii: ",") {
                    position += 1
                    continue
                }
                if bytes[position] == UInt8(ascii: "]") {
                    position += 1
                    return .array(elements)
                }
                throw error("expected ',' or ']' in an array")
            }
        }

        mutating func parseNumber() throws(JSONSyntaxError) -> JSONNumber {
            let start = position
            func isDigit(_ b: UInt8) -> Bool { b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9") }
            if bytes[position] == UInt8(ascii: "-") { position += 1 }
            guard position < bytes.count, isDigit(bytes[position]) else { throw error("invalid number", at: start) }
            if bytes[position] == UInt8(ascii: "0") {
                position += 1
                if position < bytes.count, isDigit(bytes[position]) { throw error("leading zero in a number", at: start) }
            } else {
                while position < bytes.count, isDigit(bytes[position]) { position += 1 }
            }
            if position < bytes.count, bytes[position] == UInt8(ascii: ".") {
                position += 1
                guard position < bytes.count, isDigit(bytes[position]) else { throw error("invalid number", at: start) }
                while position < bytes.count, isDigit(bytes[position]) { position += 1 }
            }
            if position < bytes.count, bytes[position] == UInt8(ascii: "e") || bytes[position] == UInt8(ascii: "E") {
                position += 1
                if position < bytes.count, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-") {
                    position += 1
                }
                guard position < bytes.count, isDigit(bytes[position]) else { throw error("invalid number", at: start) }
                while position < bytes.count, isDigit(bytes[position]) { position += 1 }
            }
            return JSONNumber(String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<position]), as: UTF8.self))
        }

        mutating func parseHex4() throws(JSONSyntaxError) -> UInt32 {
            guard position + 4 <= bytes.count else { throw error("truncated \\u escape") }
            var value: UInt32 = 0
            for _ in 0..<4 {
                let b = bytes[position]
                let digit: UInt32
                switch b {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(b - UInt8(ascii: "0"))
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(b - UInt8(ascii: "a") + 10)
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(b - UInt8(ascii: "A") + 10)
                default: throw error("invalid \\u escape")
                }
                value = value << 4 | digit
                position += 1
            }
            return value
        }

        mutating func parseString() throws(JSONSyntaxError) -> String {
            let start = position
            position += 1
            // Fast path: no escapes.
            var scan = position
            while scan < bytes.count {
                let b = bytes[scan]
                if b == UInt8(ascii: "\"") {
                    let text = UnsafeBufferPointer(rebasing: bytes[position..<scan])
                    guard JSONReader.isValidUTF8(text) else { throw error("invalid UTF-8 in a string", at: start) }
                    position = scan + 1
                    return String(decoding: text, as: UTF8.self)
                }
                if b == UInt8(ascii: "\\") || b < 0x20 { break }
                scan += 1
            }
            var out: [UInt8] = Array(bytes[position..<scan])
            position = scan
            while true {
                guard position < bytes.count else { throw error("unterminated string", at: start) }
                let b = bytes[position]
                if b == UInt8(ascii: "\"") {
                    position += 1
                    guard JSONReader.isValidUTF8(out) else { throw error("invalid UTF-8 in a string", at: start) }
                    return String(decoding: out, as: UTF8.self)
                }
                if b < 0x20 { throw error("unescaped control character in a string") }
                if b != UInt8(ascii: "\\") {
                    out.append(b)
                    position += 1
                    continue
                }
                position += 1
                guard position < bytes.count else { throw error("unterminated string", at: start) }
                let escape = bytes[position]
                position += 1
                switch escape {
                case UInt8(ascii: "\""): out.append(UInt8(ascii: "\""))
                case UInt8(ascii: "\\"): out.append(UInt8(ascii: "\\"))
                case UInt8(ascii: "/"): out.append(UInt8(ascii: "/"))
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try parseHex4()
                    if (0xD800...0xDBFF).contains(scalar) {
                        guard position + 1 < bytes.count, bytes[position] == UInt8(ascii: "\\"),
                              bytes[position + 1] == UInt8(ascii: "u") else { throw error("unpaired surrogate in \\u escape") }
                        position += 2
                        let low = try parseHex4()
                        guard (0xDC00...0xDFFF).contains(low) else { throw error("unpaired surrogate in \\u escape") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00...0xDFFF).contains(scalar) {
                        throw error("unpaired surrogate in \\u escape")
                    }
                    out.append(contentsOf: UTF8.encode(Unicode.Scalar(scalar)!)!)
                default:
                    throw error("invalid escape '\\\(printable(escape))'", at: position - 2)
                }
            }
        }
    }
}

// MARK: - Writing

public enum JSONWriter {
    /// Compact JSON. With `sortedKeys`, object members are written in code-point order of their
    /// keys (a canonical form: two documents with equal content serialise to equal bytes).
    public static func string(_ value: JSONValue, sortedKeys: Bool = false) -> String {
        var out = ""
        write(value, into: &out, sortedKeys: sortedKeys)
        return out
    }

    public static func write(_ value: JSONValue, into out: inout String, sortedKeys: Bool = false) {
        switch value {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .number(let n): out += n.text
        case .string(let s): writeString(s, into: &out)
        case .array(let elements):
            out += "["
            for (index, element) in elements.enumerated() {
                if index > 0 { out += "," }
                write(element, into: &out, sortedKeys: sortedKeys)
            }
            out += "]"
        case .object(let object):
            out += "{"
            var members = object.uniqueMembers
            if sortedKeys { members.sort { $0.key.unicodeScalars.lexicographicallyPrecedes($1.key.unicodeScalars) } }
            for (index, member) in members.enumerated() {
                if index > 0 { out += "," }
                writeString(member.key, into: &out)
                out += ":"
                write(member.value, into: &out, sortedKeys: sortedKeys)
            }
            out += "}"
        }
    }

    public static func writeString(_ s: String, into out: inout String) {
        out += "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case let c where c.value < 0x20 || c.value == 0x7F || c.value == 0x2028 || c.value == 0x2029:
                let hex = String(c.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }
}

/// RFC 6901 JSON Pointer building.
public struct JSONPointer: Sendable, Hashable, CustomStringConvertible {
    public private(set) var tokens: [String]
    public init(_ tokens: [String] = []) { self.tokens = tokens }

    public static let root = JSONPointer()

    public func appending(_ key: String) -> JSONPointer { JSONPointer(tokens + [key]) }
    public func appending(_ index: Int) -> JSONPointer { JSONPointer(tokens + [String(index)]) }

    public var description: String {
        tokens.map { "/" + $0.replacingTilde() }.joined()
    }
}

private extension String {
    func replacingTilde() -> String {
        guard contains("~") || contains("/") else { return self }
        var out = ""
        for c in self {
            switch c {
            case "~": out += "~0"
            case "/": out += "~1"
            default: out.append(c)
            }
        }
        return out
    }
}

// Conveniences for building values in code and tests.
extension JSONValue: ExpressibleByStringLiteral, ExpressibleByBooleanLiteral, ExpressibleByNilLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral
{
    public init(floatLiteral value: Double) { self = .number(JSONNumber(String(value))) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(nilLiteral: ()) { self = .null }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(JSONObject(elements.map { JSONMember($0.0, $0.1) }))
    }
    public init(integerLiteral value: Int) { self = .number(JSONNumber(String(value))) }
}
