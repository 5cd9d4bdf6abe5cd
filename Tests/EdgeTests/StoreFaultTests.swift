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
    static func chattr(_ flag: String, _ paths: [String]) -> Bool { run("chattr", [flag] + paths) }

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
        let errors = prometheusSamples(try edge.get("/metrics").text)["aasa_edge_store_write_errors_total"]
        #expect((errors ?? 0) >= 1, "store_write_errors_total: \(String(describing: errors))")

        #expect(Self.chattr("-i", files))
        #expect(try eventually(5) { try edge.get("/readyz").status == 200 })
        #expect(edge.stop() == 0)
    }

    static func run(_ tool: String, _ arguments: [String]) -> Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [tool] + arguments
        process.standardError = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }

    /// A real full disk: the store on a 4 MB tmpfs, filled up while the edge runs. The edge keeps
    /// serving, says it is not ready, counts the failed write; once space is back it is ready
    /// again, and after a restart the last good snapshot is still there (integrity_check ok).
    @Test func fullDiskKeepsServingAndLosesNothing() throws {
        let host = "fulldisk.lab.test"
        try origin.serve(host, body: aasaBody(path: "/one/*"))
        let mountPoint = FileManager.default.temporaryDirectory.appendingPathComponent("full-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        guard geteuid() == 0, Self.run("mount", ["-t", "tmpfs", "-o", "size=4m", "tmpfs", mountPoint]) else {
            print("StoreFaultTests: cannot mount a tmpfs here (needs root); the full-disk path is not exercised")
            return
        }
        defer {
            _ = Self.run("umount", [mountPoint])
            try? FileManager.default.removeItem(atPath: mountPoint)
        }
        let db = mountPoint + "/aasa-edge.sqlite"
        var edge = try startEdge(hosts: [host], db: db)
        defer { edge.stop() }
        let first = try edge.get("/a/v1/\(host)")
        #expect(first.status == 200 && first["aasa-edge-version"] == "1")

        // Fill the file system to the last byte.
        let filler = mountPoint + "/filler"
        FileManager.default.createFile(atPath: filler, contents: nil)
        let handle = try #require(FileHandle(forWritingAtPath: filler))
        let chunk = Data(count: 64 * 1024)
        while (try? handle.write(contentsOf: chunk)) != nil {}
        var small = Data(count: 1)
        while (try? handle.write(contentsOf: small)) != nil { small = Data(count: 1) }
        try? handle.close()

        try origin.serve(host, body: aasaBody(path: "/two/*") + String(repeating: " ", count: 20_000))
        let refetch = try edge.admin("POST", "/domains/\(host)/refetch")
        #expect(refetch.status == 200, "\(refetch.status) \(refetch.text)")
        #expect(try edge.get("/a/v1/\(host)").status == 200, "clients are still served on a full disk")
        #expect(try edge.get("/readyz").status == 503, "a full disk is not ready")
        let errors = prometheusSamples(try edge.get("/metrics").text)["aasa_edge_store_write_errors_total"]
        #expect((errors ?? 0) >= 1, "store_write_errors_total: \(String(describing: errors))")

        try FileManager.default.removeItem(atPath: filler)
        #expect(try eventually(5) { try edge.get("/readyz").status == 200 }, "ready again once space is back")
        #expect(edge.stop() == 0)

        edge = try startEdge(hosts: [host], db: db)
        let afterRestart = try edge.get("/a/v1/\(host)")
        #expect(afterRestart.status == 200)
        #expect(["1", "2"].contains(afterRestart["aasa-edge-version"] ?? ""), "the last good snapshot survives")
        let snapshots = try json(try edge.admin("GET", "/domains/\(host)/snapshots"))["snapshots"]?.arrayValue ?? []
        #expect(!snapshots.isEmpty)
        #expect(edge.stop() == 0)
        #expect(Self.run("python3", ["-c", "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); sys.exit(0 if c.execute('PRAGMA integrity_check').fetchone()[0]=='ok' else 1)", db]),
                "integrity_check after the full disk")
    }
}
