// The wildcard matcher, reproducing swcd's SWCFNMatch (iOS 26.1, FACTS §4.6):
//
// - `*` matches zero or more characters and backtracks; runs of `*` collapse; a trailing `*`
//   matches at once; a `*` followed by more pattern never matches an exhausted input.
// - `?` matches exactly one Unicode code point.
// - `$(name)` splices each alternative of the variable in front of the rest of the pattern and
//   matches recursively; a missing `)` or an unknown name is no-match; an alternative that would
//   bring a new `$(` into the spliced pattern is skipped.
// - Every `*` retry and every spliced alternative is one level of recursion. Reaching depth 65
//   stops the whole evaluation ("Pattern … was too complex") with no-match.
// - Case-insensitive mode folds ASCII with tolower and compares other code points case-folded.
// - `\` makes the next pattern character literal (fnmatch convention; not confirmed by swcutil,
//   see docs/semantics.md).

enum Wildcard {
    static let maximumDepth = 65

    struct Context {
        let variables: VariableTable
        let caseInsensitive: Bool
        var depth = 0
        var tooComplex = false
        /// Failed (pattern offset, input offset) states of `*` retries in the original pattern.
        /// Without splicing, the depth at a pattern offset is fixed (one level per `*` run before
        /// it), so a state that failed once fails again: remembering it is exact, and turns the
        /// exponential worst case (`*a*a*a*b` against `aaaa…`) into pattern × input work.
        var failures: FailureMemo

        init(variables: VariableTable, caseInsensitive: Bool, pattern: UnsafeBufferPointer<UInt8>,
             component: UnsafeBufferPointer<UInt8>) {
            self.variables = variables
            self.caseInsensitive = caseInsensitive
            failures = FailureMemo(pattern: pattern, component: component)
        }
    }

    struct FailureMemo {
        static let maximumBits = 1 << 22
        let pattern: UnsafeBufferPointer<UInt8>
        let component: UnsafeBufferPointer<UInt8>
        private var bits: [UInt64] = []

        init(pattern: UnsafeBufferPointer<UInt8>, component: UnsafeBufferPointer<UInt8>) {
            self.pattern = pattern
            self.component = component
        }

        /// The bit index of a state, when both buffers are the originals and the table is small enough.
        private func index(_ p: UnsafeBufferPointer<UInt8>, _ s: UnsafeBufferPointer<UInt8>) -> Int? {
            guard let pBase = p.baseAddress, let rootP = pattern.baseAddress,
                  let sBase = s.baseAddress, let rootS = component.baseAddress,
                  pBase >= rootP, pBase <= rootP + pattern.count,
                  (pattern.count + 1) * (component.count + 1) <= Self.maximumBits else { return nil }
            return (pBase - rootP) * (component.count + 1) + (sBase - rootS)
        }

        func hasFailed(_ p: UnsafeBufferPointer<UInt8>, _ s: UnsafeBufferPointer<UInt8>) -> Bool {
            guard let i = index(p, s), !bits.isEmpty else { return false }
            return bits[i >> 6] & (1 << UInt64(i & 63)) != 0
        }

        mutating func recordFailure(_ p: UnsafeBufferPointer<UInt8>, _ s: UnsafeBufferPointer<UInt8>) {
            guard let i = index(p, s) else { return }
            if bits.isEmpty { bits = [UInt64](repeating: 0, count: ((pattern.count + 1) * (component.count + 1) + 63) / 64) }
            bits[i >> 6] |= 1 << UInt64(i & 63)
        }
    }

    /// Evaluates one pattern against one URL component (already normalised when it is a path).
    static func matches(pattern: UnsafeBufferPointer<UInt8>, component: UnsafeBufferPointer<UInt8>,
                        variables: VariableTable, caseInsensitive: Bool) -> Bool {
        if pattern.count == 1 && pattern[0] == UInt8(ascii: "*") { return true }
        if pattern.isEmpty { return component.isEmpty }
        var context = Context(variables: variables, caseInsensitive: caseInsensitive, pattern: pattern, component: component)
        return execute(pattern, component, &context)
    }

    static func execute(_ p: UnsafeBufferPointer<UInt8>, _ s: UnsafeBufferPointer<UInt8>,
                        _ context: inout Context) -> Bool {
        if context.tooComplex { return false }
        if context.depth >= maximumDepth {
            context.tooComplex = true
            return false
        }
        var pi = 0
        var si = 0
        while true {
            guard pi < p.count else { return si == s.count }
            switch p[pi] {
            case UInt8(ascii: "?"):
                guard si < s.count else { return false }
                si += UTF8Scalars.length(lead: s[si])
                pi += 1
            case UInt8(ascii: "*"):
                while pi < p.count && p[pi] == UInt8(ascii: "*") { pi += 1 }
                if pi == p.count { return true }
                if si == s.count { return false }
                let rest = UnsafeBufferPointer(rebasing: p[pi...])
                var start = si
                while start < s.count {
                    let candidate = UnsafeBufferPointer(rebasing: s[start...])
                    if !context.failures.hasFailed(rest, candidate) {
                        context.depth += 1
                        let matched = execute(rest, candidate, &context)
                        context.depth -= 1
                        if matched { return true }
                        if context.tooComplex { return false }
                        context.failures.recordFailure(rest, candidate)
                    }
                    start += UTF8Scalars.length(lead: s[start])
                }
                return false
            case UInt8(ascii: "$") where pi + 1 < p.count && p[pi + 1] == UInt8(ascii: "("):
                return matchVariable(p, at: pi, s, from: si, &context)
            case UInt8(ascii: "\\") where pi + 1 < p.count:
                pi += 1
                guard matchLiteral(p, &pi, s, &si, context.caseInsensitive) else { return false }
            default:
                guard matchLiteral(p, &pi, s, &si, context.caseInsensitive) else { return false }
            }
        }
    }

    private static func matchLiteral(_ p: UnsafeBufferPointer<UInt8>, _ pi: inout Int,
                                     _ s: UnsafeBufferPointer<UInt8>, _ si: inout Int,
                                     _ caseInsensitive: Bool) -> Bool {
        guard si < s.count else { return false }
        let a = p[pi]
        let b = s[si]
        if a < 0x80 && b < 0x80 {
            guard a == b || (caseInsensitive && UTF8Scalars.asciiLower(a) == UTF8Scalars.asciiLower(b)) else {
                return false
            }
            pi += 1
            si += 1
            return true
        }
        let (x, xLength) = UTF8Scalars.decode(p, at: pi)
        let (y, yLength) = UTF8Scalars.decode(s, at: si)
        guard x == y || (caseInsensitive && UTF8Scalars.caseFoldEqual(x, y)) else { return false }
        pi += xLength
        si += yLength
        return true
    }

    private static func matchVariable(_ p: UnsafeBufferPointer<UInt8>, at dollar: Int,
                                      _ s: UnsafeBufferPointer<UInt8>, from si: Int,
                                      _ context: inout Context) -> Bool {
        let nameStart = dollar + 2
        guard let close = p[nameStart...].firstIndex(of: UInt8(ascii: ")")) else { return false }
        let name = UnsafeBufferPointer(rebasing: p[nameStart..<close])
        guard let alternatives = context.variables.alternatives(named: name) else { return false }
        let rest = UnsafeBufferPointer(rebasing: p[(close + 1)...])
        let input = UnsafeBufferPointer(rebasing: s[si...])
        for alternative in alternatives {
            let matched = alternative.withUnsafeBufferPointer { alt in
                withUnsafeTemporaryAllocation(of: UInt8.self, capacity: alt.count + rest.count) { buffer in
                    var n = 0
                    for b in alt { buffer[n] = b; n += 1 }
                    for b in rest { buffer[n] = b; n += 1 }
                    let spliced = UnsafeBufferPointer(rebasing: buffer[0..<n])
                    // swcd rejects a splice whose first `$(` begins inside the alternative.
                    if let marker = firstVariableMarker(spliced), marker < alt.count { return false }
                    context.depth += 1
                    defer { context.depth -= 1 }
                    return execute(spliced, input, &context)
                }
            }
            if matched { return true }
            if context.tooComplex { return false }
        }
        return false
    }

    static func firstVariableMarker(_ bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        guard bytes.count >= 2 else { return nil }
        for i in 0..<(bytes.count - 1) where bytes[i] == UInt8(ascii: "$") && bytes[i + 1] == UInt8(ascii: "(") {
            return i
        }
        return nil
    }
}

enum UTF8Scalars {
    @inline(__always)
    static func length(lead: UInt8) -> Int {
        if lead < 0xC0 { return 1 }
        if lead < 0xE0 { return 2 }
        if lead < 0xF0 { return 3 }
        return 4
    }

    @inline(__always)
    static func asciiLower(_ b: UInt8) -> UInt8 { b >= 0x41 && b <= 0x5A ? b | 0x20 : b }

    /// Decodes the scalar at `index` of valid UTF-8 (inputs are Swift strings or validated bytes).
    static func decode(_ bytes: UnsafeBufferPointer<UInt8>, at index: Int) -> (UInt32, Int) {
        let lead = bytes[index]
        let length = min(length(lead: lead), bytes.count - index)
        switch length {
        case 1: return (UInt32(lead), 1)
        case 2: return (UInt32(lead & 0x1F) << 6 | UInt32(bytes[index + 1] & 0x3F), 2)
        case 3:
            return (UInt32(lead & 0x0F) << 12 | UInt32(bytes[index + 1] & 0x3F) << 6 | UInt32(bytes[index + 2] & 0x3F), 3)
        default:
            return (UInt32(lead & 0x07) << 18 | UInt32(bytes[index + 1] & 0x3F) << 12
                | UInt32(bytes[index + 2] & 0x3F) << 6 | UInt32(bytes[index + 3] & 0x3F), 4)
        }
    }

    /// Case-insensitive equality of two code points, as ICU's u_strcasecmp of one-scalar strings.
    static func caseFoldEqual(_ a: UInt32, _ b: UInt32) -> Bool {
        if a == b { return true }
        if a < 0x80 && b < 0x80 { return asciiLower(UInt8(a)) == asciiLower(UInt8(b)) }
        guard let x = Unicode.Scalar(a), let y = Unicode.Scalar(b) else { return false }
        return x.properties.lowercaseMapping == y.properties.lowercaseMapping
            || x.properties.uppercaseMapping == y.properties.uppercaseMapping
    }
}

/// Path normalisation (`_normalizedURLPath`), applied to path patterns at load time and to URL
/// paths at match time: collapse `**` and `//`; make sure of a leading `/` unless the string starts
/// with `*` and a trailing `/` unless it ends with `*`. Empty becomes `/`; one character is kept.
public enum PathNormalization {
    public static func normalize(_ path: String) -> String {
        String(decoding: normalize(Array(path.utf8)), as: UTF8.self)
    }

    public static func normalize(_ path: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        path.withUnsafeBufferPointer { normalize($0, into: &out) }
        return out
    }

    /// Writes the normalised form of `path` into `out` (replacing its contents).
    static func normalize(_ path: UnsafeBufferPointer<UInt8>, into out: inout [UInt8]) {
        out.removeAll(keepingCapacity: true)
        if path.isEmpty {
            out.append(UInt8(ascii: "/"))
            return
        }
        // Lengths are NSString lengths (UTF-16 code units), as in swcd.
        if utf16Length(path) == 1 {
            out.append(contentsOf: path)
            return
        }
        let star = UInt8(ascii: "*")
        let slash = UInt8(ascii: "/")
        // Collapse runs of `*` and of `/`, on the stack.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: path.count) { buffer in
            var n = 0
            var previous: UInt8 = 0
            for b in path where !((b == star || b == slash) && b == previous) {
                buffer[n] = b
                n += 1
                previous = b
            }
            var start = 0
            var end = n
            var leading = false
            var trailing = false
            if utf16Length(UnsafeBufferPointer(rebasing: buffer[0..<n])) >= 2 {
                if buffer[0] == star { leading = true; start = 1 }
                if end > start && buffer[end - 1] == star { trailing = true; end -= 1 }
            }
            out.reserveCapacity(end - start + 4)
            if leading { out.append(star) }
            if !leading && (start == end || buffer[start] != slash) { out.append(slash) }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[start..<end]))
            if !trailing && (out.isEmpty || out[out.count - 1] != slash) { out.append(slash) }
            if trailing { out.append(star) }
        }
    }

    static func utf16Length(_ bytes: UnsafeBufferPointer<UInt8>) -> Int {
        var length = 0
        for b in bytes where b & 0xC0 != 0x80 { length += b >= 0xF0 ? 2 : 1 }
        return length
    }
}
