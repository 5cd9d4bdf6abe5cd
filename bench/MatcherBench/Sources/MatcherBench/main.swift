// Matcher benchmark: decisions per second on one core for Apple's documentation example over a
// mixed list of URLs, and the cost of reading + validating + compiling a ~100 KB AASA file.
// Prints a table on stderr and one JSON object on stdout.
import AASAEngine
import Foundation

let overview = """
{"applinks":{"details":[{"appIDs":["ABCDE12345.com.example.app","ABCDE12345.com.example.app2"],
"components":[{"#":"no_universal_links","exclude":true},{"/":"/buy/*"},{"/":"/help/website/*","exclude":true},
{"/":"/help/*","?":{"articleNumber":"????"}}]}]},
"webcredentials":{"apps":["ABCDE12345.com.example.app"]},"appclips":{"apps":["ABCED12345.com.example.MyApp.Clip"]}}
"""

/// A mix of outcomes and URL shapes: paths, queries, fragments, encoded bytes.
let urlStrings = [
    "https://example.com/buy/42",
    "https://example.com/buy/42#no_universal_links",
    "https://example.com/help/website/faq?articleNumber=4815",
    "https://example.com/help/123?articleNumber=4815",
    "https://example.com/help/123?articleNumber=481",
    "https://example.com/help/123",
    "https://example.com/elsewhere",
    "https://example.com/",
    "https://example.com/buy",
    "https://example.com/buy/shoes/red?size=42&color=red",
    "https://example.com/help/articles/2024/05?articleNumber=1234&ref=mail",
    "https://example.com/caf%C3%A9/menu",
    "https://example.com/account/settings#profile",
    "https://example.com/help/website",
    "https://example.com/a/b/c/d/e/f/g",
    "https://example.com/search?q=swift&page=2",
]

func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }

let clock = ContinuousClock()
func seconds(_ d: Duration) -> Double { Double(d.components.seconds) + Double(d.components.attoseconds) * 1e-18 }

// MARK: decisions

let document = AASAFile.read(overview).document!
let compiled = CompiledAASA(document)
let urls = try urlStrings.map { try MatchURL($0) }
let appID = "ABCDE12345.com.example.app"
var sink = 0
// Warm-up.
for _ in 0..<20_000 { for url in urls { sink &+= compiled.match(url, appID: appID).decision == .match ? 1 : 0 } }

let rounds = 7
let iterations = 150_000  // × 16 URLs = 2.4 M decisions per round
var decisionRates: [Double] = []
for _ in 0..<rounds {
    let elapsed = clock.measure {
        for _ in 0..<iterations {
            for url in urls { sink &+= compiled.match(url, appID: appID, domain: "example.com").decision == .match ? 1 : 0 }
        }
    }
    decisionRates.append(Double(iterations * urls.count) / seconds(elapsed))
}

// End to end: parse the URL string too.
var endToEndRates: [Double] = []
for _ in 0..<rounds {
    let n = iterations / 3
    let elapsed = clock.measure {
        for _ in 0..<n {
            for text in urlStrings {
                let url = try! MatchURL(text)
                sink &+= compiled.match(url, appID: appID, domain: "example.com").decision == .match ? 1 : 0
            }
        }
    }
    endToEndRates.append(Double(n * urlStrings.count) / seconds(elapsed))
}

// MARK: compile a ~100 KB file

func largeAASA(targetBytes: Int) -> String {
    var details: [String] = []
    var size = 0
    var i = 0
    while size < targetBytes {
        let components = (0..<8).map { j in
            switch j % 4 {
            case 0: return #"{"/":"/shop/\#(i)/item/\#(j)/*","comment":"product pages of category \#(i)"}"#
            case 1: return #"{"/":"/help/\#(i)/*","?":{"article":"????","lang":"$(lang)"},"exclude":false}"#
            case 2: return #"{"/":"/private/\#(i)/*","exclude":true}"#
            default: return ##"{"/":"/$(region)/promo/\##(i)/*","#":"*","caseSensitive":false}"##
            }
        }
        let detail = #"{"appIDs":["ABCDE12345.com.example.app\#(i)","ABCDE12345.com.example.extra\#(i)"],"components":[\#(components.joined(separator: ","))]}"#
        details.append(detail)
        size += detail.utf8.count + 1
        i += 1
    }
    return #"{"applinks":{"details":["# + details.joined(separator: ",") + #"]}}"#
}

let large = Array(largeAASA(targetBytes: 100_000).utf8)
var compileTimes: [Double] = []
var ruleCount = 0
for _ in 0..<rounds * 3 {
    let elapsed = clock.measure {
        let file = AASAFile.read(large)
        let c = CompiledAASA(file.document!)
        ruleCount = file.document!.appLinks!.details.reduce(0) { $0 + ($1.rules?.count ?? 0) }
        sink &+= c.match(urls[0], appID: "ABCDE12345.com.example.app3").decision == .match ? 1 : 0
    }
    compileTimes.append(seconds(elapsed))
}

// Worst cases for validation, each close to the 131072-byte limit: one details entry with
// thousands of unknown keys (each with a did-you-mean search), one key repeated thousands of
// times, thousands of malformed app IDs, and thousands of tiny rules.
func nearLimit(_ make: (Int) -> String) -> [UInt8] {
    var n = 1_000
    while make(n * 2).utf8.count <= AASAFile.maximumSize { n *= 2 }
    var step = n / 2
    while step > 0 {
        if make(n + step).utf8.count <= AASAFile.maximumSize { n += step }
        step /= 2
    }
    return Array(make(n).utf8)
}
let worstCases: [(String, [UInt8])] = [
    ("wide entry", nearLimit { n in #"{"applinks":{"details":[{"appIDs":["ABCDE12345.com.a"],"components":[{"/":"/x"}],"# + (0..<n).map { #""appIdz\#($0)":1"# }.joined(separator: ",") + "}]}}" }),
    ("repeated key", nearLimit { n in #"{"webcredentials":{"apps":["ABCDE12345.com.a"]},"pad":{"# + String(repeating: #""x":1,"#, count: n) + #""x":1}}"# }),
    ("malformed app IDs", nearLimit { n in #"{"webcredentials":{"apps":["# + (0..<n).map { #""app\#($0)""# }.joined(separator: ",") + "]}}" }),
    ("tiny rules", nearLimit { n in #"{"applinks":{"details":[{"appIDs":["ABCDE12345.com.a"],"components":["# + (0..<n).map { #"{"/":"/\#($0)#x?"}"# }.joined(separator: ",") + "]}]}}" }),
]
var worstValidation: [(String, Int, Double)] = []
for (name, bytes) in worstCases {
    var times: [Double] = []
    for _ in 0..<5 {
        let elapsed = clock.measure { sink &+= AASAFile.read(bytes).diagnostics.count }
        times.append(seconds(elapsed))
    }
    worstValidation.append((name, bytes.count, times.max()! * 1000))
}
let worstMs = worstValidation.map(\.2).max()!

let decisions = median(decisionRates)
let endToEnd = median(endToEndRates)
let compileMs = median(compileTimes) * 1000
FileHandle.standardError.write(Data("""
matcher benchmark (release, one core)
  decisions/s, Apple overview example, \(urls.count) mixed URLs, pre-parsed:  \(Int(decisions))  (min \(Int(decisionRates.min()!)), max \(Int(decisionRates.max()!)))
  decisions/s including URL parsing:                               \(Int(endToEnd))  (min \(Int(endToEndRates.min()!)), max \(Int(endToEndRates.max()!)))
  read + validate + compile \(large.count) bytes (\(ruleCount) rules):          \(String(format: "%.2f", compileMs)) ms  (min \(String(format: "%.2f", compileTimes.min()! * 1000)), max \(String(format: "%.2f", compileTimes.max()! * 1000)))
  worst-case validation (slowest of 5 runs each): \(worstValidation.map { "\($0.0) \($0.1) bytes \(String(format: "%.2f", $0.2)) ms" }.joined(separator: "; "))
  (checksum \(sink % 997))

""".utf8))
print(#"{"decisionsPerSecond":\#(Int(decisions)),"decisionsPerSecondWithURLParsing":\#(Int(endToEnd)),"compileMilliseconds":\#(String(format: "%.3f", compileMs)),"compileBytes":\#(large.count),"compileRules":\#(ruleCount),"worstValidationMilliseconds":\#(String(format: "%.3f", worstMs)),"rounds":\#(rounds)}"#)
