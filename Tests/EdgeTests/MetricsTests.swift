import Foundation
import TestOrigin
import Testing

/// Parses Prometheus text into "name{labels}" → value.
func prometheusSamples(_ text: String) -> [String: Double] {
    var samples: [String: Double] = [:]
    for line in text.split(separator: "\n") where !line.hasPrefix("#") {
        guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { continue }
        samples[String(line[..<space])] = value
    }
    return samples
}

@Suite(.serialized) struct MetricsTests {
    @Test func countersMoveWithTraffic() throws {
        let good = "metrics.lab.test", bad = "metrics404.lab.test"
        try origin.serve(good, body: aasaBody())
        try origin.set(bad, ["status": 404])
        let edge = try startEdge(hosts: [good, bad])
        defer { edge.stop() }
        let before = prometheusSamples(try edge.get("/metrics").text)
        #expect(before["aasa_edge_requests_total{outcome=\"miss\"}"] ?? 0 == 0)

        _ = try edge.get("/a/v1/\(good)")          // miss
        _ = try edge.get("/a/v1/\(good)")          // hit-fresh
        _ = try edge.get("/a/v1/\(good)")          // hit-fresh
        _ = try edge.get("/a/v1/\(bad)")           // failure-miss
        _ = try edge.get("/a/v1/\(bad)")           // failure-hit
        _ = try edge.get("/a/v1/127.0.0.1")        // rejected
        _ = try edge.admin("POST", "/domains/\(good)/purge?soft=true")

        let response = try edge.get("/metrics")
        #expect(response.status == 200)
        #expect(response["content-type"]?.hasPrefix("text/plain") == true)
        let after = prometheusSamples(response.text)
        #expect(after["aasa_edge_requests_total{outcome=\"miss\"}"] == 1)
        #expect(after["aasa_edge_requests_total{outcome=\"hit-fresh\"}"] == 2)
        #expect(after["aasa_edge_requests_total{outcome=\"failure-miss\"}"] == 1)
        #expect(after["aasa_edge_requests_total{outcome=\"failure-hit\"}"] == 1)
        #expect(after["aasa_edge_requests_total{outcome=\"rejected\"}"] == 1)
        #expect(after["aasa_edge_origin_fetches_total{result=\"updated\"}"] == 1)
        #expect(after["aasa_edge_origin_fetches_total{result=\"failed\"}"] == 1)
        #expect(after["aasa_edge_origin_failures_total{reason=\"SWCERR00101\"}"] == 1)
        #expect(after["aasa_edge_purges_total{mode=\"soft\"}"] == 1)
        #expect(after["aasa_edge_hosts_cached"] == 2)
        #expect(after["aasa_edge_snapshot_versions_stored"] == 1)
        #expect(after.keys.contains { $0.hasPrefix("aasa_edge_origin_fetch_duration_seconds_bucket") })
        // No per-host labels.
        #expect(!response.text.contains(good))
    }
}
