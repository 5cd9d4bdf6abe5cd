import Testing
@testable import AASAEngine

@Suite struct PathMatchingTests {
    @Test(arguments: [
        ("/shop/*", "https://example.com/shop", Decision.match),
        ("/shop/*", "https://example.com/shop/", .match),
        ("/shop/*", "https://example.com/shop/a/b/c", .match),
        ("/shop/*", "https://example.com/shopping", .noMatch),
        ("/shop", "https://example.com/shop/", .match),
        ("/shop/", "https://example.com/shop", .match),
        ("shop", "https://example.com/shop", .match),
        ("shop", "https://example.com/shopx", .noMatch),
        ("x", "https://example.com/x", .noMatch),   // one character: left unnormalised
        ("?", "https://example.com/", .match),
        ("?", "https://example.com/a", .noMatch),
        ("/a/*/c", "https://example.com/a/c", .noMatch),
        ("/a/*/c", "https://example.com/a/b/c", .match),
        ("/code/???", "https://example.com/code/12", .noMatch),
        ("/code/???", "https://example.com/code/123", .match),
        ("/", "https://example.com", .match),
        ("/", "https://example.com/x", .noMatch),
        ("*", "https://example.com", .match),
        ("///deep//path", "https://example.com/deep/path", .match),
        ("/x/*", "https://example.com/x///", .match),
    ])
    func path(pattern: String, url: String, expected: Decision) {
        #expect(decide(component: ["/": .string(pattern)], url) == expected)
    }

    @Test func allSpecifiedPartsMustMatch() {
        let rule: JSONValue = ["/": "/p", "?": "q=1", "#": "top"]
        #expect(decide(component: rule, "https://example.com/p?q=1#top") == .match)
        #expect(decide(component: rule, "https://example.com/p?q=1") == .noMatch)
        #expect(decide(component: rule, "https://example.com/p#top") == .noMatch)
        #expect(decide(component: rule, "https://example.com/other?q=1#top") == .noMatch)
    }

    @Test func unspecifiedPartsMatchAnything() {
        #expect(decide(component: ["#": "f"], "https://example.com/any/path?x=1#f") == .match)
        #expect(decide(component: [:], "https://example.com/whatever?x#y") == .match)
    }

    @Test func fragmentAndQueryAreNotNormalised() {
        #expect(decide(component: ["#": "/a/"], "https://example.com/#/a/") == .match)
        #expect(decide(component: ["#": "/a/"], "https://example.com/#/a") == .noMatch)
        #expect(decide(component: ["?": "a"], "https://example.com/?a") == .match)
        #expect(decide(component: ["?": "a"], "https://example.com/?a&") == .noMatch)
    }
}

@Suite struct QueryMatchingTests {
    @Test func dictionaryChecksOnlyListedNames() {
        let rule: JSONValue = ["?": ["ref": "?*"]]
        #expect(decide(component: rule, "https://example.com/?ref=x&other=1") == .match)
        #expect(decide(component: rule, "https://example.com/?other=1") == .noMatch)
        #expect(decide(component: rule, "https://example.com/?ref=") == .noMatch)
    }

    @Test func absentOrValuelessItemsReadAsEmpty() {
        #expect(decide(component: ["?": ["flag": ""]], "https://example.com/?flag") == .match)
        #expect(decide(component: ["?": ["flag": ""]], "https://example.com/") == .match)
        #expect(decide(component: ["?": ["flag": "*"]], "https://example.com/") == .match)
        #expect(decide(component: ["?": ["flag": "?"]], "https://example.com/?flag") == .noMatch)
    }

    @Test func everyOccurrenceOfARepeatedNameMustMatch() {
        let rule: JSONValue = ["?": ["tag": "$(alpha)"]]
        #expect(decide(component: rule, "https://example.com/?tag=a&tag=b") == .match)
        #expect(decide(component: rule, "https://example.com/?tag=a&tag=1") == .noMatch)
        #expect(decide(component: rule, "https://example.com/?tag=1&tag=a") == .noMatch)
    }

    @Test func nonStringValueVoidsTheWholeDictionary() {
        for junk: JSONValue in [true, 3, .null, ["x"], ["k": "v"]] {
            let rule: JSONValue = ["?": ["must": "exact", "junk": junk]]
            #expect(decide(component: rule, "https://example.com/?must=other") == .match)
        }
    }

    @Test func namesAreLookedUpExactly() {
        let rule: JSONValue = ["?": ["Key": "v"], "caseSensitive": false]
        // The value folds under caseSensitive=false, the name never does.
        #expect(decide(component: rule, "https://example.com/?Key=V") == .match)
        // "key" is not "Key": the listed name is absent, read as "", which is not "v".
        #expect(decide(component: rule, "https://example.com/?key=v") == .noMatch)
    }

    @Test func emptyDictionaryMatchesAnyQuery() {
        #expect(decide(component: ["?": [:]], "https://example.com/?a=1") == .match)
    }

    @Test func valueSplitsOnFirstEquals() {
        #expect(decide(component: ["?": ["a": "1=2"]], "https://example.com/?a=1=2") == .match)
    }
}

@Suite struct PercentEncodingTests {
    @Test func defaultComparesTheEncodedText() {
        #expect(decide(component: ["/": "/a%2Fb"], "https://example.com/a%2Fb") == .match)
        #expect(decide(component: ["/": "/a/b"], "https://example.com/a%2Fb") == .noMatch)
        #expect(decide(component: ["/": "/%E2%82%AC"], "https://example.com/%e2%82%ac") == .noMatch)
    }

    @Test func falseDecodesTheURLNeverThePattern() {
        #expect(decide(component: ["/": "/€", "percentEncoded": false], "https://example.com/%E2%82%AC") == .match)
        #expect(decide(component: ["/": "/%E2%82%AC", "percentEncoded": false], "https://example.com/%E2%82%AC") == .noMatch)
        #expect(decide(component: ["?": ["q": "a b"], "percentEncoded": false], "https://example.com/?q=a%20b") == .match)
        #expect(decide(component: ["?": ["q": "a b"]], "https://example.com/?q=a%20b") == .noMatch)
        #expect(decide(component: ["#": "x y", "percentEncoded": false], "https://example.com/#x%20y") == .match)
    }

    @Test func questionMarkCountsDecodedCodePoints() {
        #expect(decide(component: ["/": "/?", "percentEncoded": false], "https://example.com/%C3%A9") == .match)
        #expect(decide(component: ["/": "/?"], "https://example.com/%C3%A9") == .noMatch)
    }

    @Test func undecodableBytesReadAsEmpty() {
        // %FF is not UTF-8: the decoded accessor is nil, which swcd reads as "".
        #expect(decide(component: ["#": "", "percentEncoded": false], "https://example.com/#%FF") == .match)
    }
}

@Suite struct DefaultsTests {
    @Test func cascadeDomainThenAppThenRule() {
        let doc = document(components: [["/": "/A/*"], ["/": "/B/*", "caseSensitive": true]],
                           detailDefaults: ["caseSensitive": false], appLinksDefaults: ["caseSensitive": true])
        #expect(decide(doc, "https://example.com/a/1") == .match)   // app level wins over domain
        #expect(decide(doc, "https://example.com/b/1") == .noMatch) // rule level wins over app
    }

    @Test func patternKeysAndExcludeInheritFromDefaults() {
        let pathDefault = document(components: [["#": "*"]], appLinksDefaults: ["/": "/only/*"])
        #expect(decide(pathDefault, "https://example.com/only/x") == .match)
        #expect(decide(pathDefault, "https://example.com/elsewhere") == .noMatch)
        let excludeDefault = document(components: [["/": "/x"], ["/": "/y", "exclude": false]], detailDefaults: ["exclude": true])
        #expect(decide(excludeDefault, "https://example.com/x") == .exclude)
        #expect(decide(excludeDefault, "https://example.com/y") == .match)
        let queryDefault = document(components: [["/": "/q"]], detailDefaults: ["?": ["id": "??"]])
        #expect(decide(queryDefault, "https://example.com/q?id=12") == .match)
        #expect(decide(queryDefault, "https://example.com/q?id=1") == .noMatch)
    }

    @Test func flagsUseBoolValueReadings() {
        #expect(decide(component: ["/": "/X", "caseSensitive": "no"], "https://example.com/x") == .match)
        #expect(decide(component: ["/": "/X", "caseSensitive": "yes"], "https://example.com/x") == .noMatch)
        #expect(decide(component: ["/": "/X", "caseSensitive": 0], "https://example.com/x") == .match)
        #expect(decide(component: ["/": "/X", "caseSensitive": .null], "https://example.com/x") == .match)
        #expect(decide(component: ["/": "/x", "exclude": "true"], "https://example.com/x") == .exclude)
        #expect(decide(component: ["/": "/x", "exclude": ["a"]], "https://example.com/x") == .match)
    }
}

@Suite struct RuleOrderTests {
    @Test func firstMatchingRuleDecidesAndExcludeDoesNotFallThrough() {
        let doc = document(components: [["/": "/docs/private/*", "exclude": true], ["/": "/docs/*"]])
        #expect(decide(doc, "https://example.com/docs/private/a") == .exclude)
        #expect(decide(doc, "https://example.com/docs/public") == .match)
        let reversed = document(components: [["/": "/docs/*"], ["/": "/docs/private/*", "exclude": true]])
        #expect(decide(reversed, "https://example.com/docs/private/a") == .match)
    }

    @Test func firstDetailsEntryForAnAppWins() {
        let doc: JSONValue = ["applinks": ["details": [
            ["appIDs": [.string(app)], "components": [["/": "/one"]]],
            ["appIDs": [.string(app)], "components": [["/": "/two"]]],
        ]]]
        #expect(decide(doc, "https://example.com/one") == .match)
        #expect(decide(doc, "https://example.com/two") == .noMatch)
    }

    @Test func reportsTheDecidingRule() throws {
        let result = compile(document(components: [["/": "/a"], ["/": "/b"]]))
            .match(try MatchURL("https://example.com/b"), appID: app)
        #expect(result.rule?.description == "/applinks/details/0/components/1")
        #expect(result.detail?.description == "/applinks/details/0")
        #expect(result.reason == .rule)
    }
}

@Suite struct LegacyFormTests {
    @Test func pathsWithNotExclusions() {
        let doc: JSONValue = ["applinks": ["apps": [], "details": [["appID": .string(app), "paths": ["not /old/*", "/*"]]]]]
        #expect(decide(doc, "https://example.com/old/page") == .exclude)
        #expect(decide(doc, "https://example.com/new") == .match)
    }

    @Test func notExclusionsStayCaseSensitiveUnderCaseInsensitiveDefaults() {
        let doc: JSONValue = ["applinks": [
            "defaults": ["caseSensitive": false],
            "details": [["appID": .string(app), "paths": ["NOT /Old/*", "/*"]]],
        ]]
        #expect(decide(doc, "https://example.com/Old/x") == .exclude)
        #expect(decide(doc, "https://example.com/old/x") == .match)
    }

    @Test func pathsIgnoreQueryAndFragment() {
        let doc: JSONValue = ["applinks": ["details": [["appID": .string(app), "paths": ["/p"]]]]]
        #expect(decide(doc, "https://example.com/p?x=1#frag") == .match)
    }

    @Test func componentsWinOverPaths() {
        let doc: JSONValue = ["applinks": ["details": [["appIDs": [.string(app)], "paths": ["/legacy"], "components": [["/": "/modern"]]]]]]
        #expect(decide(doc, "https://example.com/modern") == .match)
        #expect(decide(doc, "https://example.com/legacy") == .noMatch)
    }

    @Test func appIDsWinOverAppID() {
        let doc: JSONValue = ["applinks": ["details": [["appIDs": ["ABCDE12345.com.other"], "appID": .string(app), "components": [["/": "*"]]]]]]
        #expect(decide(doc, "https://example.com/x") == .noMatch)
        #expect(decide(doc, "https://example.com/x", appID: "ABCDE12345.com.other") == .match)
    }

    @Test func detailsDictionaryKeyedByAppID() {
        let doc: JSONValue = ["applinks": ["apps": [], "details": [.init(stringLiteral: app): ["paths": ["/d/*"]]]]]
        #expect(decide(doc, "https://example.com/d/1") == .match)
    }

    @Test func nonObjectComponentAndNonStringPathMatchEverything() {
        #expect(decide(document(components: ["/just-a-string"]), "https://example.com/anything") == .match)
        let doc: JSONValue = ["applinks": ["details": [["appID": .string(app), "paths": [42]]]]]
        #expect(decide(doc, "https://example.com/anything") == .match)
    }

    @Test func detailWithoutPatternsMatchesEverything() throws {
        let doc: JSONValue = ["applinks": ["details": [["appIDs": [.string(app)]]]]]
        let result = compile(doc).match(try MatchURL("https://example.com/x"), appID: app)
        #expect(result.decision == .match)
        #expect(result.reason == .detailWithoutPatterns)
        #expect(decide(document(components: []), "https://example.com/x") == .noMatch)
    }
}

@Suite struct AppAndHostTests {
    @Test func teamPrefixComparedUpperCased() {
        #expect(decide(document(components: [["/": "*"]]), "https://example.com/x", appID: "abcde12345.com.example.app") == .match)
        #expect(decide(document(components: [["/": "*"]]), "https://example.com/x", appID: "ABCDE12345.com.Example.app") == .noMatch)
        #expect(AppID.canonical("abcde12345.com.x") == "ABCDE12345.com.x")
        #expect(AppID.canonical("short.com.x") == "short.com.x")
    }

    @Test func otherServicesNeverMatchURLs() {
        #expect(decide(["webcredentials": ["apps": [.string(app)]]], "https://example.com/x") == .noMatch)
    }

    @Test func hostCheck() {
        let doc = document(components: [["/": "*"]])
        #expect(decide(doc, "https://EXAMPLE.com:443/x", domain: "Example.COM") == .match)
        #expect(decide(doc, "https://user@example.com/x", domain: "example.com") == .match)
        #expect(decide(doc, "https://www.example.com/x", domain: "example.com") == .noMatch)
        #expect(decide(doc, "https://anywhere.test/x", domain: "") == .match)
        #expect(decide(doc, "https://anywhere.test/x", domain: nil) == .match)
    }

    @Test(arguments: ["", "example.com/x", "https://example.com/a b", "https://example.com/%zz", "https://example.com/é", "1http://x"])
    func rejectsMalformedURLs(url: String) {
        #expect(throws: MatchURL.ParseError.self) { try MatchURL(url) }
    }
}

@Suite struct SubstitutionTests {
    @Test func appleReferenceShape() {
        let doc = document(components: [["/": "/$(lang)_$(region)/$(food)/"]], variables: ["food": ["burrito", "pizza"]])
        #expect(decide(doc, "https://example.com/fr_CA/pizza/") == .match)
        #expect(decide(doc, "https://example.com/fr_CA/taco/") == .noMatch)
        #expect(decide(doc, "https://example.com/xx_CA/pizza/") == .noMatch)
    }

    @Test func singleStringValueAndDroppedReferences() {
        let doc = document(components: [["/": "/$(v)"]], variables: ["v": "solo"])
        #expect(decide(doc, "https://example.com/solo") == .match)
        let dropped = document(components: [["/": "/$(v)"]], variables: ["v": ["$(digit)", "ok"]])
        #expect(decide(dropped, "https://example.com/ok") == .match)
        #expect(decide(dropped, "https://example.com/1") == .noMatch)
    }

    @Test func caseInsensitiveFoldsAlternatives() {
        let doc = document(components: [["/": "/$(v)", "caseSensitive": false]], variables: ["v": ["Menu"]])
        #expect(decide(doc, "https://example.com/MENU") == .match)
    }

    @Test func variablesWorkInQueryAndFragmentPatterns() {
        let doc = document(components: [["?": ["page": "$(digit)"], "#": "$(v)"]], variables: ["v": ["top"]])
        #expect(decide(doc, "https://example.com/?page=3#top") == .match)
        #expect(decide(doc, "https://example.com/?page=x#top") == .noMatch)
    }
}

@Suite struct MatcherPropertyTests {
    @Test func literalPatternMatchesItsOwnPath() throws {
        // Property: a path pattern without wildcards or variables matches a URL with that path,
        // with or without a trailing slash, and not the same path with an extra segment.
        var generator = SeededGenerator(seed: 2024)
        let alphabet = Array("abcxyz0189-._~%2F")
        for _ in 0..<1_000 {
            let segments = (0..<Int.random(in: 1...4, using: &generator)).map { _ in
                String((0..<Int.random(in: 2...6, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! })
                    .replacingOccurrences(of: "%", with: "%25")
            }
            let path = "/" + segments.joined(separator: "/")
            let compiled = compile(document(components: [["/": .string(path)]]))
            for url in ["https://example.com" + path, "https://example.com" + path + "/"] {
                #expect(compiled.match(try MatchURL(url), appID: app).decision == .match, "\(path) vs \(url)")
            }
            #expect(compiled.match(try MatchURL("https://example.com" + path + "/more"), appID: app).decision == .noMatch)
        }
    }

    @Test func starMatchesEveryURL() throws {
        var generator = SeededGenerator(seed: 99)
        let compiled = compile(document(components: [["/": "*", "?": "*", "#": "*"]]))
        let alphabet = Array("abc/%20?=&#-")
        for _ in 0..<1_000 {
            var tail = String((0..<Int.random(in: 0...20, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! })
            tail = tail.replacingOccurrences(of: "%", with: "%25")
            guard let url = try? MatchURL("https://example.com/" + tail) else { continue }
            #expect(compiled.match(url, appID: app).decision == .match, "\(tail)")
        }
    }
}
