import EdgeModel
import NIOCore
import PostgresNIO

/// `store copy` and `store migrate`: what was added, so a second run can show it added nothing.
public struct CopyCounts: Sendable, Equatable {
    public var hosts = 0
    public var versions = 0
    public var fetches = 0
    public var ledger = 0
    public var probes = 0

    public init() {}

    public static func += (lhs: inout CopyCounts, rhs: CopyCounts) {
        lhs.hosts += rhs.hosts
        lhs.versions += rhs.versions
        lhs.fetches += rhs.fetches
        lhs.ledger += rhs.ledger
        lhs.probes += rhs.probes
    }
}

extension PostgresStore {
    /// Creates or upgrades the schema; the names of the migrations applied now.
    public func migrate() async throws -> [String] {
        try await client.withConnection { connection in try await Schema.migrate(connection, logger: self.logger) }
    }

    /// Adds what the target lacks of one host (one transaction): the host row when missing,
    /// versions matched by (host, version), fetch log rows by (host, fetch time), ledger rows by
    /// their keys. A version number already present with other bytes throws `.conflict`.
    public func importHost(_ copy: HostCopy) async throws -> CopyCounts {
        try await Self.inTransaction(client, logger: logger) { connection in
            let logger = self.logger
            var counts = CopyCounts()
            let host = copy.host
            let name = host.name
            counts.hosts = try await connection.query("""
                INSERT INTO host (name, current_version, confirmed_at, expires_at, failure_reason, failure_details, failure_at,
                                  failure_until, purge, purged_at, created_at, upstream, failure_upstream)
                VALUES (\(name), \(host.currentVersion), \(host.confirmedAt), \(copy.expiresAt), \(host.failure?.reason),
                        \(host.failure?.details), \(host.failure?.at), \(copy.failureUntil), \(host.purge), \(copy.purgedAt), \(copy.createdAt),
                        \(host.upstream?.stored), \(host.failure?.upstream?.stored))
                ON CONFLICT (name) DO NOTHING RETURNING 1
                """, logger: logger).collect().count
            for snapshot in copy.snapshots {
                let present = try await connection.query("SELECT sha256 FROM snapshot WHERE host = \(name) AND version = \(snapshot.version)",
                                                          logger: logger).collect().first?.decode(String.self)
                if let present {
                    guard present == snapshot.sha256 else { throw PostgresStoreError.conflict(host: name, version: snapshot.version) }
                    continue
                }
                try await connection.query("""
                    INSERT INTO snapshot (host, version, sha256, size, body, etag, last_modified, content_type, cache_control,
                                          first_fetched_at, last_confirmed_at, valid, diagnostics, app_ids)
                    VALUES (\(name), \(snapshot.version), \(snapshot.sha256), \(snapshot.body.count), \(ByteBuffer(bytes: snapshot.body)),
                            \(snapshot.etag), \(snapshot.lastModified), \(snapshot.contentType), \(snapshot.cacheControl),
                            \(snapshot.firstFetchedAt), \(snapshot.lastConfirmedAt), \(snapshot.valid), \(snapshot.diagnostics),
                            \(StoredList.encode(snapshot.appIDs)))
                    """, logger: logger)
                counts.versions += 1
            }
            for fetch in copy.fetches {
                counts.fetches += try await connection.query("""
                    INSERT INTO fetch_log (host, at, outcome, status, reason, details, duration_ms, version, trigger)
                    SELECT \(name), \(fetch.at), \(fetch.outcome), \(fetch.status), \(fetch.reason), \(fetch.details), \(fetch.durationMs),
                           \(fetch.version), \(fetch.trigger)
                    WHERE NOT EXISTS (SELECT 1 FROM fetch_log WHERE host = \(name) AND at = \(fetch.at))
                    RETURNING 1
                    """, logger: logger).collect().count
            }
            for row in copy.clients {
                counts.ledger += try await connection.query("""
                    INSERT INTO served_client (host, version, client, first_at, last_at)
                    VALUES (\(name), \(row.version), \(row.client), \(row.firstAt), \(row.lastAt))
                    ON CONFLICT (host, version, client) DO NOTHING RETURNING 1
                    """, logger: logger).collect().count
            }
            for row in copy.others {
                counts.ledger += try await connection.query("""
                    INSERT INTO served_others (host, version, clients, last_at) VALUES (\(name), \(row.version), \(row.clients), \(row.lastAt))
                    ON CONFLICT (host, version) DO NOTHING RETURNING 1
                    """, logger: logger).collect().count
            }
            return counts
        }
    }

    /// Adds a probe run with its observations unless a run of the same host, CDN URL and start
    /// time is there. True when added.
    public func importProbeRun(_ run: ProbeRunCopy) async throws -> Bool {
        try await Self.inTransaction(client, logger: logger) { connection in
            let logger = self.logger
            let exists = try await connection.query("""
                SELECT 1 FROM probe_run WHERE host = \(run.host) AND cdn_url = \(run.cdnURL) AND started_at = \(run.startedAt)
                """, logger: logger).collect().count > 0
            guard !exists else { return false }
            guard let id = try await connection.query("""
                INSERT INTO probe_run (host, cdn_url, interval_seconds, started_at, ended_at, state)
                VALUES (\(run.host), \(run.cdnURL), \(run.interval), \(run.startedAt), \(run.endedAt), \(run.state))
                RETURNING id
                """, logger: logger).collect().first?.decode(Int64.self) else { return false }
            for o in run.observations {
                try await connection.query(Self.observationInsert(run: id, o), logger: logger)
            }
            return true
        }
    }
}
