@_exported import TestSupport
@testable import AASAEngine

let app = "ABCDE12345.com.example.app"

/// A document with one details entry for `app` holding `components`.
func document(components: [JSONValue], detailDefaults: JSONValue? = nil, appLinksDefaults: JSONValue? = nil,
              variables: JSONValue? = nil) -> JSONValue {
    var detail = JSONObject([JSONMember("appIDs", [.string(app)]), JSONMember("components", .array(components))])
    if let detailDefaults { detail.members.append(JSONMember("defaults", detailDefaults)) }
    var appLinks = JSONObject([JSONMember("details", .array([.object(detail)]))])
    if let appLinksDefaults { appLinks.members.append(JSONMember("defaults", appLinksDefaults)) }
    if let variables { appLinks.members.append(JSONMember("substitutionVariables", variables)) }
    return .object(JSONObject([JSONMember("applinks", .object(appLinks))]))
}

func read(_ value: JSONValue) -> AASAFile { AASAFile.read(JSONWriter.string(value)) }

func compile(_ value: JSONValue) -> CompiledAASA {
    let file = read(value)
    return CompiledAASA(file.document!)
}

func decide(_ value: JSONValue, _ url: String, appID: String = app, domain: String? = "example.com") -> Decision {
    compile(value).match(try! MatchURL(url), appID: appID, domain: domain).decision
}

/// Decision of a single component against a URL on example.com.
func decide(component: JSONValue, _ url: String) -> Decision {
    decide(document(components: [component]), url)
}

func codes(_ file: AASAFile) -> [String] { file.diagnostics.map(\.code.rawValue) }

