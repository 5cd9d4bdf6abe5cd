import AASAEngine
import Foundation
import TestOrigin
import Testing

/// A store that stops accepting writes (read-only volume, full disk): `/readyz` says so, clients
/// keep being served from memory, the write errors are counted, and readiness returns once the
/// store is writable again. Root ignores file modes, so the fault is made with the immutable
/// attribute (`chattr +i`), which binds root too; where the filesystem or the container does not
/// allow it, the test says so and checks nothing else.
@Suite(.serialized) struct StoreFaultTests {
    static func chattr(_ flag: String, _ paths: [String]) -> Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["chattr", flag] + paths
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }

    @Test func unwritableStoreIsNotReadyButStillServes() throws {
        let host = "readonly.lab.test"
        try origin.serve(host, body: aasaBody(path: "/one/*"))
        let db = temporaryDB()
        let edge = try startEdge(hosts: [host], db: db)
        defer { edge.stop() }
        #expect(try edge.get("/a/v1/\(host)").status == 200)
        #expect(try edge.get("/readyz").status == 200)

        let files = [db, db + "-wal"]
        guard Self.chattr("+i", files) else {
            print("StoreFaultTests: chattr +i is not permitted here; the unwritable-store path is not exercised")
            return
        }
        defer { _ = Self.chattr("-i", files) }
        let notReady = try edge.get("/readyz")
        #expect(notReady.status == 503)
        #expect(notReady.text.hasPrefix("not ready: the store is not writable"))

        // Hits are still answered from memory; a refetch of new content cannot be stored but is served.
        #expect(try edge.get("/a/v1/\(host)").status == 200)
        try origin.serve(host, body: aasaBody(path: "/two/*"))
        let refetch = try json(try edge.admin("POST", "/domains/\(host)/refetch"))
        #expect(refetch["outcome"] == "updated")
        let served = try edge.get("/a/v1/\(host)")
        #expect(served.status == 200 && served.text.contains("/two/*"))
        let metrics = try edge.get("/metrics").text
        let errors = metrics.split(separator: "\n").first { $0.hasPrefix("aasa_edge_store_write_errors_total") }
        #expect(errors.flatMap { Double($0.split(separator: " ").last ?? "") }.map { $0 >= 1 } == true, "\(errors ?? "no line")")

        #expect(Self.chattr("-i", files))
        #expect(try eventually(5) { try edge.get("/readyz").status == 200 })
        #expect(edge.stop() == 0)
    }
}
