import AASAEngine
import EdgeModel
import SnapshotStore

/// The history views of a host — stored versions, one version's bytes, the semantic diff of two
/// versions, the fetch log — in the JSON shapes of the admin API. Shared by the edge's admin
/// routes and the `history` / `diff-versions` commands, which read the same store.
public enum HistoryViews {
    public enum Problem: Error, CustomStringConvertible {
        case unknownHost(String)
        case unknownVersion(String, Int)
        case unreadableVersion(String, Int)

        public var description: String {
            switch self {
            case .unknownHost(let host): return "unknown host \(host)"
            case .unknownVersion(let host, let version): return "\(host) has no version \(version)"
            case .unreadableVersion(let host, let version): return "version \(version) of \(host) is not a JSON object"
            }
        }
    }

    static func number(_ value: Int?) -> JSONValue { value.map { .number(JSONNumber(String($0))) } ?? .null }
    static func time(_ value: Double) -> JSONValue { .string(RFC3339.string(value)) }

    /// `{"snapshots":[{"version","sha256","size","firstFetchedAt","lastConfirmedAt","valid"}]}`, newest first.
    public static func snapshots(_ store: any SnapshotStoring, host: String) async throws -> JSONValue {
        guard try await store.host(host) != nil else { throw Problem.unknownHost(host) }
        return .object(JSONObject([JSONMember("snapshots", .array(try await store.snapshots(host: host).map { s in
            .object(JSONObject([
                JSONMember("version", number(s.version)), JSONMember("sha256", .string(s.sha256)), JSONMember("size", number(s.size)),
                JSONMember("firstFetchedAt", time(s.firstFetchedAt)), JSONMember("lastConfirmedAt", time(s.lastConfirmedAt)),
                JSONMember("valid", .bool(s.valid)),
            ]))
        }))]))
    }

    /// The exact stored bytes of a version.
    public static func snapshotBytes(_ store: any SnapshotStoring, host: String, version: Int) async throws -> [UInt8] {
        guard try await store.host(host) != nil else { throw Problem.unknownHost(host) }
        guard let snapshot = try await store.snapshot(host: host, version: version) else { throw Problem.unknownVersion(host, version) }
        return snapshot.body
    }

    /// The semantic diff of two stored versions (the shape of `aasa-edge diff --json`).
    public static func diff(_ store: any SnapshotStoring, host: String, from: Int, to: Int) async throws -> AASADiff {
        func document(_ version: Int) async throws -> AASADocument {
            guard let document = AASAFile.read(try await snapshotBytes(store, host: host, version: version)).document else {
                throw Problem.unreadableVersion(host, version)
            }
            return document
        }
        return AASADiff(old: try await document(from), new: try await document(to))
    }

    /// `{"fetches":[{"at","outcome","status","reason","durationMs","version"}]}`, newest first.
    public static func fetches(_ store: any SnapshotStoring, host: String, limit: Int) async throws -> JSONValue {
        guard try await store.host(host) != nil else { throw Problem.unknownHost(host) }
        return .object(JSONObject([JSONMember("fetches", .array(try await store.fetches(host: host, limit: limit).map { f in
            .object(JSONObject([
                JSONMember("at", time(f.at)), JSONMember("outcome", .string(f.outcome)), JSONMember("status", number(f.status)),
                JSONMember("reason", f.reason.map { .string($0) } ?? .null),
                JSONMember("durationMs", .number(JSONNumber(String(format: "%.1f", f.durationMs)))),
                JSONMember("version", number(f.version)), JSONMember("trigger", .string(f.trigger)),
            ]))
        }))]))
    }
}
