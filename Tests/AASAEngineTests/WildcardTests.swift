import Testing
@testable import AASAEngine

/// The wildcard matcher on its own (no normalisation).
func matches(_ pattern: String, _ input: String, caseInsensitive: Bool = false,
             variables: [SubstitutionVariable] = []) -> Bool {
    Array(pattern.utf8).withUnsafeBufferPointer { p in
        Array(input.utf8).withUnsafeBufferPointer { s in
            Wildcard.matches(pattern: p, component: s, variables: VariableTable(variables), caseInsensitive: caseInsensitive)
        }
    }
}

/// SWCFNMatch semantics.
@Suite struct WildcardTests {
    @Test(arguments: [
        ("*", "", true),
        ("*", "anything/at/all", true),
        ("", "", true),
        ("", "x", false),
        ("abc", "abc", true),
        ("abc", "abd", false),
        ("abc", "ab", false),
        ("ab", "abc", false),
        ("a*", "a", true),
        ("a*c", "abbbc", true),
        ("a*c", "abbbd", false),
        ("a*b*c", "aXbYc", true),
        ("a**c", "ac", true),
        ("a*c", "a", false),     // a `*` followed by more pattern never matches an exhausted input
        ("*c", "c", true),
        ("a*c", "ac", true),
        ("?", "a", true),
        ("?", "", false),
        ("?", "é", true),        // one code point, two bytes
        ("?", "😀", true),       // one code point, four bytes
        ("??", "é", false),
        ("?*", "", false),
        ("?*", "x", true),
        ("a?c", "abc", true),
        ("*/x/*", "/a/b/x/c/", true),
    ])
    func wildcardSemantics(pattern: String, input: String, expected: Bool) {
        #expect(matches(pattern, input) == expected, "\(pattern) vs \(input)")
    }

    @Test func backtracksAcrossManyCandidates() {
        #expect(matches("*a*a*a*b", "aaaaaaaaaaaaaaaaaaaab"))
        #expect(!matches("*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaa"))
    }

    @Test func depthLimitStopsEvaluation() {
        // 64 nested stars fit; the 65th level is "too complex" and the whole evaluation fails,
        // even though the pattern would otherwise match.
        let input = String(repeating: "a", count: 80)
        let fits = String(repeating: "*a", count: 64)
        let tooDeep = String(repeating: "*a", count: 65)
        #expect(matches(fits, input))
        #expect(!matches(tooDeep, input))
    }

    @Test func caseFolding() {
        #expect(!matches("/Help/", "/help/"))
        #expect(matches("/Help/", "/help/", caseInsensitive: true))
        #expect(matches("/CAFÉ/", "/café/", caseInsensitive: true))
        #expect(matches("ΣΟΦΊΑ", "σοφία", caseInsensitive: true))
        #expect(!matches("CAFÉ", "café"))
        #expect(matches("\u{212A}", "k", caseInsensitive: true))  // KELVIN SIGN folds to k
    }

    @Test func backslashEscapesTheNextCharacter() {
        #expect(matches(#"a\*b"#, "a*b"))
        #expect(!matches(#"a\*b"#, "axb"))
        #expect(matches(#"a\?"#, "a?"))
        #expect(!matches(#"a\?"#, "ab"))
        #expect(matches(#"a\"#, #"a\"#))  // a trailing backslash is literal
    }

    @Test func variablesSpliceEachAlternative() {
        let food = SubstitutionVariable(name: "food", values: ["pizza", "sushi"])
        #expect(matches("/$(food)/", "/pizza/", variables: [food]))
        #expect(matches("/$(food)/", "/sushi/", variables: [food]))
        #expect(!matches("/$(food)/", "/tacos/", variables: [food]))
        #expect(!matches("/$(food)/", "/$(food)/", variables: [food]))
        #expect(matches("/$(food)", "/pizza", variables: [food]))
    }

    @Test func variableValuesMayHoldWildcardsAndTheEmptyString() {
        let kind = SubstitutionVariable(name: "kind", values: ["a*z", ""])
        #expect(matches("/$(kind)/x", "/abcz/x", variables: [kind]))
        #expect(matches("/$(kind)/x", "//x", variables: [kind]))
        #expect(!matches("/$(kind)/x", "/abc/x", variables: [kind]))
        // swcd quirk: a `*` with pattern left never matches an exhausted input, even when the
        // rest (here the empty alternative) could match nothing.
        #expect(matches("x$(kind)", "x", variables: [kind]))
        #expect(!matches("x*$(kind)", "x", variables: [kind]))
    }

    @Test func unknownOrUnterminatedVariableNeverMatches() {
        #expect(!matches("/$(nope)/", "/anything/"))
        #expect(!matches("/$(digit", "/1"))
        #expect(!matches("$(digit", "$(digit"))
    }

    @Test func spliceThatFormsAVariableInsideTheAlternativeIsRejected() {
        // "a$" followed by "(x)" would form "$(" starting inside the alternative.
        let v = SubstitutionVariable(name: "v", values: ["a$"])
        #expect(!matches("$(v)(x)", "a$(x)", variables: [v]))
    }

    @Test func builtInClassesAreSingleCharacters() {
        #expect(matches("$(digit)", "7"))
        #expect(!matches("$(digit)", "77"))
        #expect(matches("$(xdigit)$(xdigit)", "fA"))
        #expect(!matches("$(upper)", "q"))
        #expect(matches("$(upper)", "q", caseInsensitive: true))
        #expect(matches("$(alnum)", "Z"))
        #expect(!matches("$(alpha)", "1"))
        #expect(matches("$(lower)", "q"))
    }

    @Test func regionAndLanguageCodesInBothCases() {
        #expect(matches("$(region)", "GB"))
        #expect(matches("$(region)", "gb"))
        #expect(!matches("$(region)", "UK"))
        #expect(!matches("$(region)", "EU"))
        #expect(!matches("$(region)", "Gb"))
        #expect(matches("$(lang)", "en"))
        #expect(matches("$(lang)", "EN"))
        #expect(matches("$(lang)", "haw"))
        #expect(!matches("$(lang)", "zz"))
    }

    @Test func fileVariablesShadowBuiltIns() {
        let digit = SubstitutionVariable(name: "digit", values: ["x"])
        #expect(matches("$(digit)", "x", variables: [digit]))
        #expect(!matches("$(digit)", "1", variables: [digit]))
    }

    @Test func starIsAConsistentWildcard() {
        // Property: `prefix*suffix` matches prefix + anything + suffix (all ASCII, no specials).
        var generator = SeededGenerator(seed: 7)
        let letters = Array("abcxyz/-._~")
        func word(_ n: ClosedRange<Int>) -> String {
            String((0..<Int.random(in: n, using: &generator)).map { _ in letters.randomElement(using: &generator)! })
        }
        for _ in 0..<2_000 {
            let prefix = word(0...5), middle = word(0...8), suffix = word(1...5)
            #expect(matches(prefix + "*" + suffix, prefix + middle + suffix))
            #expect(matches(prefix + middle + suffix, prefix + middle + suffix))
            #expect(!matches(prefix + middle + suffix, prefix + middle + suffix + "!"))
        }
    }
}

@Suite struct WildcardWorstCaseTests {
    @Test func pathologicalBacktrackingFinishes() {
        // Without memoisation this is C(2000, 10) attempts; with it, pattern × input.
        let pattern = String(repeating: "*a", count: 10) + "*b"
        let input = String(repeating: "a", count: 2_000)
        #expect(!matches(pattern, input))
    }
}
