/// What happened to one client request. The single source of `X-Cache`, `Cache-Status` and the
/// metrics label, so the three can never disagree.
public enum CacheOutcome: String, Sendable, CaseIterable {
    case hitFresh = "hit-fresh"
    case hitStale = "hit-stale"
    case miss
    case revalidated
    case failureHit = "failure-hit"
    case failureMiss = "failure-miss"
    case rejected
    /// `503`: the edge itself ran short (file descriptors, memory, an origin-fetch slot) and had
    /// no usable copy. Never an origin failure, never cached.
    case unavailable
    /// `?mode=developer` (or `managed`): fetched from the origin for this request, nothing
    /// stored, memory unchanged — the modes in which devices bypass Apple's CDN.
    case bypass

    /// `X-Cache`, in Apple's vocabulary; nil for rejected and unavailable requests.
    public var xCache: String? {
        switch self {
        case .hitFresh, .revalidated, .failureHit: return "hit-fresh"
        case .hitStale: return "hit-stale"
        case .miss, .failureMiss, .bypass: return "miss"
        case .rejected, .unavailable: return nil
        }
    }

    /// `Cache-Status` (RFC 9211) with the cache name `aasa-edge`.
    /// - Parameters:
    ///   - ttl: seconds of freshness left (negative when stale), for hits and revalidations.
    ///   - originStatus: the status the origin answered with, when it was asked.
    ///   - collapsed: the request waited for a fetch another request started.
    ///   - revalidating: a stale copy served within `--stale-while-revalidate`.
    public func cacheStatus(ttl: Int, originStatus: Int? = nil, collapsed: Bool = false, revalidating: Bool = false) -> String? {
        switch self {
        case .hitStale where revalidating: return "aasa-edge; hit; ttl=\(ttl); detail=stale-while-revalidate"
        case .hitFresh, .hitStale: return "aasa-edge; hit; ttl=\(ttl)"
        case .failureHit: return "aasa-edge; hit; ttl=\(ttl); detail=failure"
        case .miss: return "aasa-edge; fwd=uri-miss; stored" + (collapsed ? "; collapsed" : "")
        case .revalidated:
            return "aasa-edge; fwd=stale; fwd-status=\(originStatus ?? 304); ttl=\(ttl)" + (collapsed ? "; collapsed" : "")
        case .failureMiss:
            return "aasa-edge; fwd=uri-miss" + (originStatus.map { "; fwd-status=\($0)" } ?? "") + (collapsed ? "; collapsed" : "")
        case .unavailable: return "aasa-edge; fwd=uri-miss; detail=unavailable"
        case .bypass: return "aasa-edge; fwd=bypass"
        case .rejected: return nil
        }
    }
}
