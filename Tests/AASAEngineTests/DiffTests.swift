import Testing
@testable import AASAEngine

@Suite struct DiffTests {
    func diff(_ old: JSONValue, _ new: JSONValue) -> AASADiff {
        AASADiff(old: read(old).document!, new: read(new).document!)
    }

    @Test func identicalAndReformattedDocumentsHaveNoDifference() {
        let a = document(components: [["/": "/buy/*", "caseSensitive": false], ["/": "/help/*"]])
        // Same rules, written differently: bare path, flag hoisted into defaults where equivalent.
        let b = document(components: [["/": "buy/*", "caseSensitive": false], ["/": "/help/*", "comment": "new comment"]])
        #expect(diff(a, a).isEmpty)
        #expect(diff(a, b).rules.isEmpty)
        let hoisted = document(components: [["/": "/x"], ["/": "/y"]], detailDefaults: ["caseSensitive": false])
        let inline = document(components: [["/": "/x", "caseSensitive": false], ["/": "/y", "caseSensitive": false]])
        let d = diff(hoisted, inline)
        #expect(d.rules.isEmpty)
        #expect(d.appDefaults.count == 1)  // the defaults object itself did change
    }

    @Test func ruleAddedRemovedAndChangedInOrder() {
        let old = document(components: [["/": "/a"], ["/": "/b"], ["/": "/c"]])
        let new = document(components: [["/": "/a"], ["/": "/b", "exclude": true], ["/": "/c"], ["/": "/d"]])
        let d = diff(old, new)
        let changes = d.rules.first?.changes ?? []
        #expect(d.rules.map(\.appID) == [app])
        #expect(changes.map(\.change) == [.changed, .added])
        #expect(changes[0].oldIndex == 1 && changes[0].newIndex == 1)
        #expect(changes[1].newIndex == 3 && changes[1].new == ["/": "/d"])
        let removal = diff(new, old).rules.first?.changes ?? []
        #expect(removal.map(\.change) == [.changed, .removed])
    }

    @Test func reorderingIsAChange() {
        let d = diff(document(components: [["/": "/a"], ["/": "/b"]]), document(components: [["/": "/b"], ["/": "/a"]]))
        #expect(!d.rules.isEmpty)
    }

    @Test func appsServicesDefaultsAndVariables() {
        let old: JSONValue = [
            "applinks": ["defaults": ["caseSensitive": true], "substitutionVariables": ["food": ["pizza"], "gone": ["x"]],
                         "details": [["appIDs": ["ABCDE12345.com.old", .string(app)], "components": [["/": "/x"]]]]],
            "webcredentials": ["apps": ["ABCDE12345.com.old"]],
        ]
        let new: JSONValue = [
            "applinks": ["defaults": ["caseSensitive": false], "substitutionVariables": ["food": ["pizza", "sushi"], "new": ["y"]],
                         "details": [["appIDs": [.string(app), "abcde12345.com.new"], "components": [["/": "/x"]]]]],
            "webcredentials": ["apps": ["ABCDE12345.com.new"]],
            "appclips": ["apps": ["ABCDE12345.com.clip"]],
        ]
        let d = diff(old, new)
        #expect(d.appsAdded == ["ABCDE12345.com.new"])
        #expect(d.appsRemoved == ["ABCDE12345.com.old"])
        #expect(d.defaults.map(\.key) == ["caseSensitive"])
        #expect(d.substitutionVariables.map(\.change) == [.changed, .removed, .added])
        #expect(d.services.map(\.service) == ["webcredentials", "appclips"])
        #expect(d.services[0].added == ["ABCDE12345.com.new"] && d.services[0].removed == ["ABCDE12345.com.old"])
        // Defaults changed caseSensitive for every rule: the rule itself changed in effect.
        #expect(d.rules.first?.changes.map(\.change) == [.changed])
    }

    @Test func jsonShape() throws {
        let d = diff(document(components: [["/": "/a"]]), document(components: [["/": "/b"]]))
        let json = try #require(d.json.objectValue)
        #expect(json.keys == ["identical", "apps", "rules", "defaults", "appDefaults", "substitutionVariables", "services"])
        #expect(json["identical"] == .bool(false))
        #expect(d.lines.contains { $0.contains("~ rule 0") })
    }

    @Test func sequenceDiffIsMinimal() {
        let ops = SequenceDiff.operations(Array("ABCBDAB"), Array("BDCABA"))
        let kept = ops.filter { if case .keep = $0 { return true } else { return false } }.count
        #expect(kept == 4)  // LCS length of the classic example
        // Applying the script rebuilds the target.
        var rebuilt: [Character] = []
        let target = Array("BDCABA")
        for op in ops {
            switch op {
            case .keep(_, let j), .insert(let j): rebuilt.append(target[j])
            case .delete: break
            }
        }
        #expect(rebuilt == target)
    }
}

/// Apps that share a details entry share its comparison: computed once, reported per app.
@Suite struct SharedEntryDiffTests {
    @Test func manyAppsOnOneEntryEachGetTheChange() {
        let apps = (0..<400).map { "ABCDE12345.com.example.app\($0)" }
        func file(_ last: String) -> AASADocument {
            let ids = apps.map { "\"\($0)\"" }.joined(separator: ",")
            let rules = (0..<300).map { #"{"/":"/r\#($0)/*"}"# }.joined(separator: ",")
            let text = #"{"applinks":{"details":[{"appIDs":[\#(ids)],"components":[\#(rules),{"/":"\#(last)"}]}]}}"#
            return AASAFile.read(Array(text.utf8)).document!
        }
        let d = AASADiff(old: file("/old"), new: file("/new"))
        #expect(d.rules.count == 400)
        #expect(d.rules.allSatisfy { $0.changes.map(\.change) == [.changed] && $0.changes.first?.newIndex == 300 })
        #expect(d.appsAdded.isEmpty && d.appsRemoved.isEmpty)
    }
}
