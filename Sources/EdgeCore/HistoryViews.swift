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

    /// The stored versions, newest first.
    public static func snapshots(_ store: any SnapshotStoring, host: String) async throws -> AdminJSON.Snapshots {
        guard try await store.host(host) != nil else { throw Problem.unknownHost(host) }
        return AdminJSON.Snapshots(try await store.snapshots(host: host))
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

    /// The fetch log, newest first.
    public static func fetches(_ store: any SnapshotStoring, host: String, limit: Int) async throws -> AdminJSON.Fetches {
        guard try await store.host(host) != nil else { throw Problem.unknownHost(host) }
        return AdminJSON.Fetches(try await store.fetches(host: host, limit: limit))
    }
}
