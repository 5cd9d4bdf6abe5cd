import Logging
import PostgresNIO

/// The PostgreSQL schema, as numbered migrations applied in order, each in its own transaction.
/// An advisory lock makes edges starting together migrate one at a time.
enum Schema {
    static let migrations: [(name: String, sql: [String])] = [
        ("v1 shared store", [
            // Host names sort bytewise ("C"), as in SQLite: the admin list pages by name.
            """
            CREATE TABLE host (
                name TEXT COLLATE "C" PRIMARY KEY,
                current_version BIGINT,
                confirmed_at DOUBLE PRECISION,
                expires_at DOUBLE PRECISION,
                failure_reason TEXT,
                failure_details TEXT,
                failure_at DOUBLE PRECISION,
                failure_until DOUBLE PRECISION,
                purge TEXT NOT NULL DEFAULT 'none' CHECK (purge IN ('none', 'soft', 'hard')),
                purged_at DOUBLE PRECISION,
                created_at DOUBLE PRECISION NOT NULL
            )
            """,
            """
            CREATE TABLE snapshot (
                host TEXT COLLATE "C" NOT NULL REFERENCES host(name),
                version BIGINT NOT NULL,
                sha256 TEXT NOT NULL,
                size BIGINT NOT NULL,
                body BYTEA NOT NULL,
                etag TEXT,
                last_modified TEXT,
                content_type TEXT,
                cache_control TEXT,
                first_fetched_at DOUBLE PRECISION NOT NULL,
                last_confirmed_at DOUBLE PRECISION NOT NULL,
                valid BOOLEAN NOT NULL,
                diagnostics TEXT NOT NULL,
                app_ids TEXT NOT NULL,
                PRIMARY KEY (host, version),
                UNIQUE (host, sha256)
            )
            """,
            """
            CREATE TABLE fetch_log (
                id BIGSERIAL PRIMARY KEY,
                host TEXT COLLATE "C" NOT NULL,
                at DOUBLE PRECISION NOT NULL,
                outcome TEXT NOT NULL,
                status BIGINT,
                reason TEXT,
                details TEXT,
                duration_ms DOUBLE PRECISION NOT NULL,
                version BIGINT,
                trigger TEXT NOT NULL
            )
            """,
            "CREATE INDEX fetch_log_by_host ON fetch_log (host, id)",
            """
            CREATE TABLE served_client (
                host TEXT COLLATE "C" NOT NULL,
                version BIGINT NOT NULL,
                client TEXT NOT NULL,
                first_at DOUBLE PRECISION NOT NULL,
                last_at DOUBLE PRECISION NOT NULL,
                PRIMARY KEY (host, version, client)
            )
            """,
            "CREATE INDEX served_client_by_last ON served_client (host, version, last_at)",
            """
            CREATE TABLE served_others (
                host TEXT COLLATE "C" NOT NULL,
                version BIGINT NOT NULL,
                clients BIGINT NOT NULL,
                last_at DOUBLE PRECISION NOT NULL,
                PRIMARY KEY (host, version)
            )
            """,
            """
            CREATE TABLE probe_run (
                id BIGSERIAL PRIMARY KEY,
                host TEXT NOT NULL,
                cdn_url TEXT NOT NULL,
                interval_seconds DOUBLE PRECISION NOT NULL,
                started_at DOUBLE PRECISION NOT NULL
            )
            """,
            """
            CREATE TABLE probe_observation (
                run BIGINT NOT NULL REFERENCES probe_run(id),
                at DOUBLE PRECISION NOT NULL,
                source TEXT NOT NULL CHECK (source IN ('origin', 'cdn')),
                status BIGINT,
                sha256 TEXT,
                canonical_sha256 TEXT,
                age BIGINT,
                cache_control TEXT,
                x_cache TEXT,
                failure_reason TEXT,
                failure_details TEXT,
                error TEXT,
                duration_ms DOUBLE PRECISION NOT NULL
            )
            """,
            "CREATE INDEX probe_observation_by_run ON probe_observation (run, at)",
            // What each edge announced (LISTEN/NOTIFY carries the id): an edge that lost its
            // connection re-reads from the last id it heard.
            """
            CREATE TABLE change (
                id BIGSERIAL PRIMARY KEY,
                host TEXT NOT NULL,
                kind TEXT NOT NULL,
                node TEXT NOT NULL,
                at DOUBLE PRECISION NOT NULL
            )
            """,
            "CREATE INDEX change_by_time ON change (at)",
            // One edge at a time fetches a host for clients; the others wait for its change.
            "CREATE TABLE fetch_lease (host TEXT PRIMARY KEY, node TEXT NOT NULL, until DOUBLE PRECISION NOT NULL)",
            "CREATE TABLE node (name TEXT PRIMARY KEY, started_at DOUBLE PRECISION NOT NULL, last_seen_at DOUBLE PRECISION NOT NULL, version TEXT NOT NULL)",
            "CREATE TABLE readiness (node TEXT PRIMARY KEY, checked_at DOUBLE PRECISION NOT NULL)",
        ]),
        // The newest change id pruned from the log: an edge that last heard an older one has
        // missed changes it can no longer read, and must drop what it holds.
        ("v2 change log watermark", [
            "CREATE TABLE change_pruned (id INT PRIMARY KEY CHECK (id = 1), upto BIGINT NOT NULL)",
            "INSERT INTO change_pruned (id, upto) VALUES (1, 0)",
        ]),
        // Behind a parent edge (tiers): the parent's X-Cache and Via that came with the current
        // copy and with the last failure, one per line.
        ("v3 parent tier", [
            "ALTER TABLE host ADD COLUMN upstream TEXT",
            "ALTER TABLE host ADD COLUMN failure_upstream TEXT",
        ]),
        // How each probe run ended (runs recorded before this are taken as finished).
        ("v4 probe run end", [
            "ALTER TABLE probe_run ADD COLUMN ended_at DOUBLE PRECISION",
            "ALTER TABLE probe_run ADD COLUMN state TEXT NOT NULL DEFAULT 'finished'",
        ]),
    ]

    /// Applies the migrations not yet applied; returns their names.
    @discardableResult
    static func migrate(_ connection: PostgresConnection, logger: Logger) async throws -> [String] {
        try await connection.withTransaction(logger: logger) { connection in
            // Serialises edges migrating at once (released at commit).
            try await connection.query("SELECT pg_advisory_xact_lock(7316842001)", logger: logger)
            try await connection.query("CREATE TABLE IF NOT EXISTS aasa_edge_migration (name TEXT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())",
                                       logger: logger)
            var applied = Set<String>()
            for try await name in try await connection.query("SELECT name FROM aasa_edge_migration", logger: logger).decode(String.self) {
                applied.insert(name)
            }
            var ran: [String] = []
            for migration in migrations where !applied.contains(migration.name) {
                for statement in migration.sql {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                try await connection.query("INSERT INTO aasa_edge_migration (name) VALUES (\(migration.name))", logger: logger)
                ran.append(migration.name)
            }
            return ran
        }
    }
}
