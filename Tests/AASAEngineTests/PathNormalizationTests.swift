import Testing
@testable import AASAEngine

@Suite struct PathNormalizationTests {
    @Test(arguments: [
        ("", "/"),
        ("*", "*"),
        ("/", "/"),
        ("a", "a"),
        ("/buy/*", "/buy/*"),
        ("/buy", "/buy/"),
        ("/buy/", "/buy/"),
        ("abc", "/abc/"),
        ("buy/*", "/buy/*"),
        ("//abc", "/abc/"),
        ("/a//b///c", "/a/b/c/"),
        ("/a/**", "/a/*"),
        ("*abc", "*abc/"),
        ("*abc*", "*abc*"),
        ("**", "/*/"),
        ("//", "/"),
        ("*/", "*/"),
        ("/id/????", "/id/????/"),
        ("/buy//", "/buy/"),
        ("/$(lang)_$(region)/", "/$(lang)_$(region)/"),
        ("é", "é"),
        ("/é", "/é/"),
    ])
    func normalizes(input: String, expected: String) {
        #expect(PathNormalization.normalize(input) == expected)
    }

    @Test func isIdempotent() {
        var generator = SeededGenerator(seed: 42)
        let alphabet: [Character] = ["/", "/", "*", "a", "b", "?", "%", "é"]
        for _ in 0..<5_000 {
            let length = Int.random(in: 0...12, using: &generator)
            let text = String((0..<length).map { _ in alphabet.randomElement(using: &generator)! })
            let once = PathNormalization.normalize(text)
            #expect(PathNormalization.normalize(once) == once, "not idempotent for \(text)")
            #expect(!once.contains("//") && !once.contains("**"), "runs left in \(once) from \(text)")
        }
    }
}
