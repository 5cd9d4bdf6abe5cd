import AASAEngine
import EdgeModel
@testable import PropagationAnalysis
import SnapshotStore
import Testing

@Suite struct PropagationTests {
    func fetch(_ at: Double, _ outcome: String, _ version: Int?) -> LoggedFetch {
        LoggedFetch(at: at, outcome: outcome, status: outcome == "failed" ? 500 : 200, reason: nil, details: nil,
                    durationMs: 1, version: version, trigger: "request")
    }

    /// A scripted timeline: v1 at t=100, confirmed at 200 and 300, a failure at 350, v2 first seen
    /// at 400. Clients a, b, c receive v2 after 10, 50 and 200 seconds; d never does.
    @Test func scriptedTimeline() throws {
        let fetches = [fetch(100, "updated", 1), fetch(200, "unchanged", 1), fetch(300, "unchanged", 1),
                       fetch(350, "failed", 1), fetch(400, "updated", 2), fetch(500, "unchanged", 2)]
        let served = [
            ServedEvent(host: "h", version: 1, at: 110, client: "a"), ServedEvent(host: "h", version: 1, at: 120, client: "b"),
            ServedEvent(host: "h", version: 1, at: 130, client: "d"), ServedEvent(host: "h", version: 1, at: 390, client: "c"),
            ServedEvent(host: "h", version: 2, at: 410, client: "a"), ServedEvent(host: "h", version: 2, at: 450, client: "b"),
            ServedEvent(host: "h", version: 2, at: 460, client: "a"), ServedEvent(host: "h", version: 2, at: 600, client: "c"),
        ].shuffled()
        let versions = Propagation.versions(fetches: fetches.shuffled(), served: served)
        #expect(versions.map(\.version) == [2, 1])
        let v2 = versions[0]
        #expect(v2.originLastSeenPrevious == 300)  // the failure at 350 saw nothing
        #expect(v2.originFirstSeen == 400)
        #expect(v2.firstServedAt == 410)
        #expect(v2.lastServedPrevious == 390)
        #expect(v2.clientDelays == [10, 50, 200])
        #expect(v2.clientsBehind == [.init(client: "d", version: 1, lastServedAt: 130)])
        let v1 = versions[1]
        #expect(v1.originLastSeenPrevious == nil && v1.originFirstSeen == 100 && v1.lastServedPrevious == nil)
        #expect(v1.clientDelays == [10, 20, 30, 290])
        #expect(v1.clientsBehind.isEmpty)
        #expect(Propagation.percentile(v2.clientDelays, 50) == 50)
        #expect(Propagation.percentile(v2.clientDelays, 95) == 200)
        let json = try JSONValueEncoder().encode(Propagation.Report(domain: "h", versions))
        let first = try #require(json.objectValue?["versions"]?.arrayValue?.first?.objectValue)
        #expect(first.keys == ["version", "originLastSeenPrevious", "originFirstSeen", "firstServedAt", "lastServedPrevious", "clients", "clientsBehind"])
        #expect(first["clients"]?.objectValue?["count"] == 3)
        #expect(first["clients"]?.objectValue?["maxSeconds"] == .number(.init("200.000")))
    }

    @Test func revertToEarlierBytesKeepsTheFirstTransition() {
        let fetches = [fetch(1, "updated", 1), fetch(2, "updated", 2), fetch(3, "updated", 1)]
        let versions = Propagation.versions(fetches: fetches, served: [])
        #expect(versions.map(\.version) == [2, 1])
        #expect(versions.map(\.originFirstSeen) == [2, 1])
    }
}
