/// Substitution variables visible to a pattern, looked up the way swcd does: the file's own
/// variables first, then the six character classes, then `$(region)` and `$(lang)`. A file
/// variable therefore shadows a built-in of the same name.
struct VariableTable: Sendable {
    private let fileVariables: [(name: [UInt8], alternatives: [[UInt8]])]

    init(_ variables: [SubstitutionVariable]) {
        fileVariables = variables.map { (Array($0.name.utf8), $0.values.map { Array($0.utf8) }) }
    }

    static let empty = VariableTable([])

    func alternatives(named name: UnsafeBufferPointer<UInt8>) -> [[UInt8]]? {
        for variable in fileVariables where variable.name.elementsEqual(name) { return variable.alternatives }
        for builtIn in BuiltInVariables.all where builtIn.name.elementsEqual(name) { return builtIn.alternatives }
        return nil
    }

    func isDefined(_ name: String) -> Bool {
        Array(name.utf8).withUnsafeBufferPointer { alternatives(named: $0) != nil }
    }
}

enum BuiltInVariables {
    static let names = ["alpha", "upper", "lower", "alnum", "digit", "xdigit", "region", "lang"]

    /// Each alternative is one whole value: the classes are single characters, region and
    /// language codes are listed in both upper and lower case (so `$(region)` takes `us` too).
    static let all: [(name: [UInt8], alternatives: [[UInt8]])] = {
        func characters(_ ranges: ClosedRange<UInt8>...) -> [[UInt8]] { ranges.flatMap { $0.map { [$0] } } }
        let upper = characters(0x41...0x5A)
        let lower = characters(0x61...0x7A)
        let digit = characters(0x30...0x39)
        func bothCases(_ codes: [String]) -> [[UInt8]] {
            codes.map { Array($0.uppercased().utf8) } + codes.map { Array($0.lowercased().utf8) }
        }
        return [
            (Array("alpha".utf8), upper + lower),
            (Array("upper".utf8), upper),
            (Array("lower".utf8), lower),
            (Array("alnum".utf8), upper + lower + digit),
            (Array("digit".utf8), digit),
            (Array("xdigit".utf8), digit + characters(0x41...0x46, 0x61...0x66)),
            (Array("region".utf8), bothCases(ISOCodeTables.regions)),
            (Array("lang".utf8), bothCases(ISOCodeTables.languages)),
        ]
    }()
}

/// A `$(…)` reference found in a pattern, for validation.
enum VariableReference: Equatable {
    case named(String)
    case unterminated
}

enum PatternScanner {
    /// The variable references of a pattern, in order, as swcd would meet them when scanning
    /// left to right (a missing `)` ends the scan).
    static func references(in pattern: String) -> [VariableReference] {
        let bytes = Array(pattern.utf8)
        var out: [VariableReference] = []
        var i = 0
        while i + 1 < bytes.count {
            if bytes[i] == UInt8(ascii: "\\") {
                i += 2
                continue
            }
            if bytes[i] == UInt8(ascii: "$") && bytes[i + 1] == UInt8(ascii: "(") {
                guard let close = bytes[(i + 2)...].firstIndex(of: UInt8(ascii: ")")) else {
                    out.append(.unterminated)
                    return out
                }
                out.append(.named(String(decoding: bytes[(i + 2)..<close], as: UTF8.self)))
                i = close + 1
                continue
            }
            i += 1
        }
        return out
    }

    /// How many levels of recursion the pattern can need at most: one per `*` run followed by more
    /// pattern, one per variable.
    static func recursionLevels(in pattern: String) -> Int {
        let bytes = Array(pattern.utf8)
        var levels = 0
        var i = 0
        while i < bytes.count {
            if bytes[i] == UInt8(ascii: "*") {
                while i < bytes.count && bytes[i] == UInt8(ascii: "*") { i += 1 }
                if i < bytes.count { levels += 1 }
                continue
            }
            if bytes[i] == UInt8(ascii: "$") && i + 1 < bytes.count && bytes[i + 1] == UInt8(ascii: "(") { levels += 1 }
            i += 1
        }
        return levels
    }
}
