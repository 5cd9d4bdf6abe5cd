import Foundation

/// Where a PostgreSQL store lives: `postgres://USER@HOST[:PORT]/DB[?sslmode=disable|prefer|require]`.
/// The password never sits in the URL (it comes from `AASA_EDGE_STORE_PASSWORD` or `PGPASSWORD`),
/// so the location can be logged and shown as it is.
public struct PostgresLocation: Sendable, Equatable, CustomStringConvertible {
    public enum TLSMode: String, Sendable {
        case disable, prefer, require
    }

    public let user: String
    public let host: String
    public let port: Int
    public let database: String
    public let tls: TLSMode

    public struct Invalid: Error, CustomStringConvertible {
        public let description: String
    }

    /// Whether `text` names a PostgreSQL store (by its scheme), valid or not.
    public static func isPostgres(_ text: String) -> Bool {
        let lower = text.lowercased()
        return lower.hasPrefix("postgres://") || lower.hasPrefix("postgresql://")
    }

    public init(url text: String) throws(Invalid) {
        guard Self.isPostgres(text), let url = URLComponents(string: text) else {
            throw Invalid(description: "not a postgres:// URL")
        }
        if url.password != nil {
            throw Invalid(description: "the URL holds a password: put it in AASA_EDGE_STORE_PASSWORD (or PGPASSWORD) instead")
        }
        guard let user = url.user, !user.isEmpty else { throw Invalid(description: "the URL names no user (postgres://USER@HOST/DB)") }
        guard var host = url.host, !host.isEmpty else { throw Invalid(description: "the URL names no host") }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        let database = String(url.path.drop { $0 == "/" })
        guard !database.isEmpty, !database.contains("/") else { throw Invalid(description: "the URL names no database (postgres://USER@HOST/DB)") }
        var tls = TLSMode.prefer
        for item in url.queryItems ?? [] {
            guard item.name == "sslmode", let value = item.value else {
                throw Invalid(description: "unknown URL parameter \(item.name) (only sslmode=disable|prefer|require)")
            }
            guard let mode = TLSMode(rawValue: value) else { throw Invalid(description: "sslmode must be disable, prefer or require") }
            tls = mode
        }
        self.user = url.percentEncodedUser.flatMap { $0.removingPercentEncoding } ?? user
        self.host = host
        port = url.port ?? 5432
        self.database = database
        self.tls = tls
    }

    public var description: String {
        let shownHost = host.contains(":") ? "[\(host)]" : host
        return "postgres://\(user)@\(shownHost):\(port)/\(database)" + (tls == .prefer ? "" : "?sslmode=\(tls.rawValue)")
    }
}
