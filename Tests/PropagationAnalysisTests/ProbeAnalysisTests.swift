import Foundation
import OriginFetcher
import EdgeHTTP
import EdgeModel
@testable import PropagationAnalysis
import AASAEngine
import SnapshotStore
import TestOrigin
import Testing

/// The probe's change detection on scripted observations.
struct ProbeAnalysisTests {
    func record(_ at: Double, _ source: String, _ sha: String?, canonical: String? = nil, status: Int? = 200) -> ProbeRecord {
        ProbeRecord(at: at, source: source, status: status, sha256: sha, canonicalSha256: canonical ?? sha.map { "c-" + $0 }, age: nil,
                    cacheControl: nil, xCache: nil, failureReason: nil, failureDetails: nil, error: nil, durationMs: 1)
    }

    @Test func originChangeThenCDNCatchesUp() {
        let records = [
            record(0, "origin", "a"), record(0, "cdn", "a"),
            record(1, "origin", "b"), record(1, "cdn", "a"),
            record(2, "origin", "b"), record(2, "cdn", nil, status: 404),
            record(3, "origin", "b"), record(3, "cdn", "b"),
            record(4, "origin", "b"), record(4, "cdn", "b"),
        ]
        let changes = ProbeAnalysis.changes(records.reversed())  // order of input does not matter
        #expect(changes.count == 1)
        #expect(changes.first?.originChangedAt == 1)
        #expect(changes.first?.originPreviousSeenAt == 0)
        #expect(changes.first?.cdnCaughtUpAt == 3)
        #expect(changes.first?.delaySeconds == 2)
        #expect(ProbeAnalysis.converged(changes))
    }

    @Test func noChangeIsNotConverged() {
        let changes = ProbeAnalysis.changes([record(0, "origin", "a"), record(0, "cdn", "a"), record(1, "origin", "a"), record(1, "cdn", "a")])
        #expect(changes.isEmpty)
        #expect(!ProbeAnalysis.converged(changes))
    }

    @Test func differenceAtStartIsALowerBound() {
        let changes = ProbeAnalysis.changes([record(10, "origin", "b"), record(10, "cdn", "a"), record(15, "origin", "b"), record(15, "cdn", "b")])
        #expect(changes.count == 1)
        #expect(changes.first?.observedAtStart == true)
        #expect(changes.first?.delaySeconds == 5)
    }

    @Test func reserialisedJSONCountsAsTheSameContent() {
        // Different bytes, same canonical JSON: the CDN has caught up.
        let changes = ProbeAnalysis.changes([
            record(0, "origin", "a"), record(0, "cdn", "a"),
            record(1, "origin", "b", canonical: "B"), record(2, "cdn", "b-pretty", canonical: "B"),
        ])
        #expect(changes.first?.cdnCaughtUpAt == 2)
    }

    @Test func laterChangeNotCaughtUpKeepsTheRunOpen() throws {
        let changes = ProbeAnalysis.changes([
            record(0, "origin", "a"), record(0, "cdn", "a"),
            record(1, "origin", "b"), record(1, "cdn", "a"),
            record(2, "origin", "c"), record(2, "cdn", "b"),
            record(3, "origin", "c"), record(3, "cdn", "b"),
        ])
        #expect(changes.map(\.originChangedAt) == [1, 2])
        #expect(changes.map(\.cdnCaughtUpAt) == [2, nil])
        #expect(!ProbeAnalysis.converged(changes))
        let json = try JSONValueEncoder().encode(ProbeAnalysis.Report(host: "h.test", cdnURL: "http://x/a/v1/h.test", observations: 8, changes: changes))
        #expect(json.objectValue?["changes"]?.arrayValue?.last?.objectValue?["delaySeconds"] == .null)
        #expect(json.objectValue?["changes"]?.arrayValue?.first?.objectValue?["delaySeconds"] == .number(JSONNumber("1.000")))
    }

    @Test func originFailuresAreNotContent() {
        let changes = ProbeAnalysis.changes([
            record(0, "origin", "a"), record(0, "cdn", "a"),
            record(1, "origin", nil, status: 500), record(1, "cdn", "a"),
            record(2, "origin", "a"), record(2, "cdn", "a"),
        ])
        #expect(changes.isEmpty)
    }

    @Test func plotIsWellFormedAndEscapesText() {
        let records = [record(0, "origin", "a"), record(0, "cdn", "a"), record(1, "origin", "b"), record(1, "cdn", nil, status: nil),
                       record(2, "origin", "b"), record(2, "cdn", "b")]
        let svg = ProbePlot.svg(host: "h.test", cdnURL: "http://x/?a=<b>&c", records: records, changes: ProbeAnalysis.changes(records))
        #expect(svg.hasPrefix("<svg"))
        #expect(svg.contains("&lt;b&gt;&amp;c"))
        #expect(!svg.contains("<b>"))
        #expect(svg.contains("1.0 s"))  // the delay is labelled
        #expect(MarkupCheck.isBalanced(svg))
    }
}

/// A probe run ends after its `maximumTicks` observations of each side, whatever its duration
/// (the bound the server puts on probes started over its API), and records how it ended.
@Suite struct ProbeBoundTests {
    @Test func aRunEndsAtItsMaximumTicks() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("probe-bound-\(UUID().uuidString)/s.sqlite").path
        let store = try SnapshotStore(path: path)
        // Nothing listens on port 1: every observation is a quick failure on both sides.
        let fetcher = OriginFetcher(configuration: FetcherConfiguration(timeout: 1, connectTo: ["::127.0.0.1:1"], allowPrivateOrigins: true))
        defer { fetcher.shutdown() }
        let configuration = ProbeConfiguration(host: try OriginHost("bound.lab.test"), cdnTemplate: "http://127.0.0.1:1/a/v1/{host}",
                                               interval: 0.01, duration: 1, maximumTicks: 3)
        let report = try await Probe(configuration: configuration, fetcher: fetcher, store: store).run { _, _, _ in }
        #expect(report.records.count == 6, "3 ticks of origin and CDN, not a second's worth")
        let (run, records) = try #require(try store.probeRun(report.run))
        #expect(records.count == 6 && run.state == "finished" && run.endedAt != nil)
    }
}
