import AASAEngine
import Foundation
import TestOrigin
import Testing

/// `aasa-edge store migrate|copy` and the `--store` flag, through the real binary and a real
/// PostgreSQL server.
@Suite struct StoreCommandTests {
    @Test func storeFlagsAreCheckedBeforeAnythingStarts() throws {
        let both = try Binary.run(["serve", "--store", "sqlite:/tmp/x.sqlite", "--db", "/tmp/y.sqlite"])
        #expect(both.status == 2 && both.stderr.contains("--store and --db"))
        let password = try Binary.run(["serve", "--store", "postgres://edge:hunter2@127.0.0.1/aasa"])
        #expect(password.status == 2 && password.stderr.contains("AASA_EDGE_STORE_PASSWORD"))
        #expect(!password.stderr.contains("hunter2"), "the password is never echoed")
        let scheme = try Binary.run(["store", "migrate", "--store", "mysql://u@h/d"])
        #expect(scheme.status == 2)
        let node = try Binary.run(["serve", "--node-id", "has space"])
        #expect(node.status == 2 && node.stderr.contains("--node-id"))
    }

    @Test func migrateReportsWhatItAppliedAndUnreachableIsExit3() throws {
        let url = try TestPostgres.server().database()
        let first = try Binary.run(["store", "migrate", "--store", url, "--json"])
        #expect(first.status == 0, "\(first.stderr)")
        let applied = try JSONReader.parse(first.stdout).objectValue?["applied"]?.arrayValue?.count
        #expect(applied == 4, "v1, v2 (the change log watermark), v3 (parent tier), v4 (probe run end)")
        let second = try Binary.run(["store", "migrate", "--store", url, "--json"])
        #expect(second.status == 0 && second.stdout.contains(#""applied":[]"#))
        let missingDatabase = try Binary.run(["store", "migrate", "--store", "postgres://postgres@127.0.0.1:\(try TestPostgres.server().port)/nope?sslmode=disable"])
        #expect(missingDatabase.status == 3 && missingDatabase.stderr.contains(#"database "nope" does not exist"#))
    }

    @Test func copyIsIdempotentAndStopsOnAConflictingVersion() throws {
        // A SQLite store written by the binary itself: an edge serves one host, then stops.
        let origin = try TestOrigin()
        defer { origin.stop() }
        let host = "copy.lab.test"
        try origin.serve(host, body: #"{"applinks":{"details":[]}}"#)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("copy-\(UUID().uuidString)")
        let db = folder.appendingPathComponent("edge.sqlite").path
        let edge = try EdgeProcess(db: db, arguments: ["--connect-to", origin.connectTo(host), "--ca-file", origin.caFile])
        #expect(try edge.get("/a/v1/\(host)").status == 200)
        edge.stop()

        let url = try TestPostgres.server().database()
        let first = try Binary.run(["store", "copy", "--from", "sqlite:" + db, "--to", url, "--json"])
        #expect(first.status == 0, "\(first.stderr)")
        let counts = try #require(try JSONReader.parse(first.stdout).objectValue)
        #expect(counts["hostsAdded"]?.numberInt == 1 && counts["versionsAdded"]?.numberInt == 1 && counts["fetchesAdded"]?.numberInt == 1)
        let again = try #require(try JSONReader.parse(try Binary.run(["store", "copy", "--from", "sqlite:" + db, "--to", url, "--json"]).stdout).objectValue)
        #expect(again["hostsAdded"]?.numberInt == 0 && again["versionsAdded"]?.numberInt == 0 && again["fetchesAdded"]?.numberInt == 0)

        // The target's version 1 of the host now holds other bytes: the copy stops with exit 1.
        try TestPostgres.server().psql("UPDATE snapshot SET sha256 = 'other' WHERE host = '\(host)'", database: TestPostgres.name(ofURL: url))
        let conflict = try Binary.run(["store", "copy", "--from", "sqlite:" + db, "--to", url])
        #expect(conflict.status == 1 && conflict.stderr.contains("\(host) version 1 has other bytes"))
        let missing = try Binary.run(["store", "copy", "--from", "sqlite:" + folder.appendingPathComponent("none.sqlite").path, "--to", url])
        #expect(missing.status == 3)
    }
}
