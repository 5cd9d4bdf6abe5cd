import AASAEngine
import EdgeModel

/// One origin change seen by a probe and when the CDN first served the same content.
public struct ProbeChange: Sendable, Equatable {
    /// The first origin observation with the new content (for a difference already present when
    /// the probe started: the first origin observation, so the delay is a lower bound).
    public let originChangedAt: Double
    /// The last origin observation that still had the previous content (nil at start).
    public let originPreviousSeenAt: Double?
    public let sha256: String
    public let canonicalSha256: String?
    /// The CDN already differed from the origin when the probe started.
    public let observedAtStart: Bool
    /// The first CDN observation, at or after the change, that served the same content.
    public var cdnCaughtUpAt: Double?

    public var delaySeconds: Double? { cdnCaughtUpAt.map { max(0, $0 - originChangedAt) } }
}

/// Pure analysis of a probe run's observations.
public enum ProbeAnalysis {
    /// Content identity: equal bytes, or equal canonical JSON (a CDN may re-serialise).
    public static func sameContent(_ a: (sha: String, canonical: String?), _ b: ProbeRecord) -> Bool {
        guard let sha = b.sha256 else { return false }
        if sha == a.sha { return true }
        if let left = a.canonical, let right = b.canonicalSha256 { return left == right }
        return false
    }

    /// Every origin change, in order, with when the CDN caught up. Only 200 answers count as content.
    public static func changes(_ records: [ProbeRecord]) -> [ProbeChange] {
        var changes: [ProbeChange] = []
        var origin: (sha: String, canonical: String?)?
        var firstOriginAt: Double?
        var lastOriginAt: Double?
        var sawCDN = false
        let ordered = records.enumerated().sorted { ($0.element.at, $0.offset) < ($1.element.at, $1.offset) }.map(\.element)
        for record in ordered where record.status == 200 && record.sha256 != nil {
            if record.source == "origin" {
                if let current = origin, !sameContent(current, record) {
                    changes.append(ProbeChange(originChangedAt: record.at, originPreviousSeenAt: lastOriginAt, sha256: record.sha256!,
                                               canonicalSha256: record.canonicalSha256, observedAtStart: false))
                }
                if origin == nil { firstOriginAt = record.at }
                if origin == nil || !sameContent(origin!, record) { origin = (record.sha256!, record.canonicalSha256) }
                lastOriginAt = record.at
            } else {
                if !sawCDN, let current = origin, let firstOriginAt, changes.isEmpty, !sameContent(current, record) {
                    changes.append(ProbeChange(originChangedAt: firstOriginAt, originPreviousSeenAt: nil, sha256: current.sha,
                                               canonicalSha256: current.canonical, observedAtStart: true))
                }
                if origin != nil { sawCDN = true }
                for index in changes.indices where changes[index].cdnCaughtUpAt == nil && changes[index].originChangedAt <= record.at
                    && sameContent((changes[index].sha256, changes[index].canonicalSha256), record) {
                    changes[index].cdnCaughtUpAt = record.at
                }
            }
        }
        return changes
    }

    /// The CDN serves the origin's latest change (there was at least one change or an initial difference).
    public static func converged(_ changes: [ProbeChange]) -> Bool {
        changes.last?.cdnCaughtUpAt != nil
    }

    /// What `probe --json` prints: `{"host","cdnURL","observations","converged","changes":[…]}`.
    public struct Report: Encodable, Sendable {
        public struct Change: Encodable, Sendable {
            public let originChangedAt: Timestamp
            public let cdnCaughtUpAt: Timestamp?
            public let delaySeconds: FixedPoint?
            public let originPreviousSeenAt: Timestamp?
            public let sha256: String
            public let observedAtStart: Bool

            public init(_ c: ProbeChange) {
                originChangedAt = Timestamp(c.originChangedAt, milliseconds: true)
                cdnCaughtUpAt = Timestamp.of(c.cdnCaughtUpAt, milliseconds: true)
                delaySeconds = c.delaySeconds.map { FixedPoint($0, decimals: 3) }
                originPreviousSeenAt = Timestamp.of(c.originPreviousSeenAt, milliseconds: true)
                sha256 = c.sha256
                observedAtStart = c.observedAtStart
            }
        }
        public let host: String
        public let cdnURL: String
        public let observations: Int
        public let converged: Bool
        public let changes: [Change]

        public init(host: String, cdnURL: String, observations: Int, changes: [ProbeChange]) {
            self.host = host
            self.cdnURL = cdnURL
            self.observations = observations
            converged = ProbeAnalysis.converged(changes)
            self.changes = changes.map(Change.init)
        }
    }
}
