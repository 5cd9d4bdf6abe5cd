import Foundation
import EdgeModel
import PropagationAnalysis
import SnapshotStore

/// Text for HTML and SVG: the five markup characters escaped, control characters replaced.
public enum Markup {
    public static func escape(_ text: String) -> String {
        var out = ""
        for c in text.unicodeScalars {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default:
                // Control characters are not allowed in XML 1.0.
                if c.value < 0x20 && c != "\n" && c != "\t" { out += "\u{FFFD}" } else { out.unicodeScalars.append(c) }
            }
        }
        return out
    }
}

/// Minimal SVG drawing shared by the probe plot and the dashboard's propagation timeline.
struct SVGCanvas {
    let width: Double
    let height: Double
    private(set) var body = ""

    init(width: Double, height: Double) {
        self.width = width
        self.height = height
    }

    static func escape(_ text: String) -> String { Markup.escape(text) }

    private static func n(_ value: Double) -> String { String(format: "%.1f", value) }

    mutating func rect(x: Double, y: Double, width: Double, height: Double, fill: String, title: String? = nil, opacity: Double = 1) {
        body += "<rect x=\"\(Self.n(x))\" y=\"\(Self.n(y))\" width=\"\(Self.n(max(0.5, width)))\" height=\"\(Self.n(height))\" fill=\"\(fill)\""
        if opacity < 1 { body += " fill-opacity=\"\(Self.n(opacity))\"" }
        if let title { body += "><title>\(Self.escape(title))</title></rect>\n" } else { body += "/>\n" }
    }

    mutating func line(x1: Double, y1: Double, x2: Double, y2: Double, stroke: String, width: Double = 1, dashed: Bool = false,
                       markerEnd: Bool = false) {
        body += "<line x1=\"\(Self.n(x1))\" y1=\"\(Self.n(y1))\" x2=\"\(Self.n(x2))\" y2=\"\(Self.n(y2))\" stroke=\"\(stroke)\" stroke-width=\"\(Self.n(width))\""
        if dashed { body += " stroke-dasharray=\"4 3\"" }
        if markerEnd { body += " marker-end=\"url(#arrow)\"" }
        body += "/>\n"
    }

    mutating func circle(x: Double, y: Double, r: Double, fill: String, title: String? = nil) {
        body += "<circle cx=\"\(Self.n(x))\" cy=\"\(Self.n(y))\" r=\"\(Self.n(r))\" fill=\"\(fill)\""
        if let title { body += "><title>\(Self.escape(title))</title></circle>\n" } else { body += "/>\n" }
    }

    mutating func text(_ text: String, x: Double, y: Double, size: Double = 12, anchor: String = "start", fill: String = "#222",
                       weight: String = "normal") {
        body += "<text x=\"\(Self.n(x))\" y=\"\(Self.n(y))\" font-size=\"\(Self.n(size))\" text-anchor=\"\(anchor)\" fill=\"\(fill)\" font-weight=\"\(weight)\">\(Self.escape(text))</text>\n"
    }

    /// A time axis from `t0` to `t1` along y, labelled in seconds (or minutes) since `t0`.
    mutating func timeAxis(t0: Double, t1: Double, x: (Double) -> Double, y: Double, top: Double) {
        let span = max(t1 - t0, 1e-3)
        let steps: [Double] = [0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 43200, 86400]
        let step = steps.first { span / $0 <= 10 } ?? 86400
        line(x1: x(t0), y1: y, x2: x(t1), y2: y, stroke: "#444")
        var t = 0.0
        while t <= span + 1e-9 {
            line(x1: x(t0 + t), y1: y, x2: x(t0 + t), y2: y + 5, stroke: "#444")
            line(x1: x(t0 + t), y1: top, x2: x(t0 + t), y2: y, stroke: "#ddd")
            let label = step >= 60 ? String(format: "+%dm%02ds", Int(t) / 60, Int(t) % 60) : String(format: step < 1 ? "+%.1fs" : "+%.0fs", t)
            text(label, x: x(t0 + t), y: y + 18, size: 11, anchor: "middle", fill: "#444")
            t += step
        }
    }

    var svg: String {
        """
        <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" viewBox="0 0 \(Int(width)) \(Int(height))" font-family="sans-serif">
        <defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#c0392b"/></marker></defs>
        <rect width="100%" height="100%" fill="#fff"/>
        \(body)</svg>

        """
    }

    static let palette = ["#4e79a7", "#59a14f", "#f28e2b", "#b07aa1", "#76b7b2", "#edc948", "#9c755f", "#ff9da7"]
    static let failureFill = "#e15759"
    static let errorFill = "#999999"
}

/// The probe's timeline: origin content vs CDN content over time, each origin change and the CDN's
/// delay marked.
public enum ProbePlot {
    public static func svg(host: String, cdnURL: String, records: [ProbeRecord], changes: [ProbeChange]) -> String {
        var canvas = SVGCanvas(width: 960, height: 330)
        let left = 90.0, right = 30.0
        let times = records.map(\.at)
        let t0 = times.min() ?? 0
        let lastAt = times.max() ?? 1
        let step = records.count > 2 ? (lastAt - t0) / Double(max(1, records.count / 2 - 1)) : 1
        let t1 = max(lastAt + step, t0 + 1)
        let x = { (t: Double) in left + (t - t0) / (t1 - t0) * (960 - left - right) }

        // Colours by content, in order of first appearance.
        var contents: [(sha: String, canonical: String?)] = []
        func colourIndex(_ r: ProbeRecord) -> Int? {
            guard r.status == 200, let sha = r.sha256 else { return nil }
            if let i = contents.firstIndex(where: { ProbeAnalysis.sameContent($0, r) }) { return i }
            contents.append((sha, r.canonicalSha256))
            return contents.count - 1
        }

        canvas.text("aasa-edge probe — \(host)", x: 20, y: 24, size: 15, weight: "bold")
        canvas.text("CDN: \(cdnURL)", x: 20, y: 42, size: 11, fill: "#555")
        let lanes = [("origin", 70.0), ("cdn", 150.0)]
        for (source, y) in lanes {
            canvas.text(source == "origin" ? "origin" : "CDN", x: left - 10, y: y + 24, size: 13, anchor: "end")
            let lane = records.filter { $0.source == source }.sorted { $0.at < $1.at }
            for (i, r) in lane.enumerated() {
                let end = i + 1 < lane.count ? lane[i + 1].at : t1
                let fill: String
                var title = RFC3339.milliseconds(r.at)
                if let index = colourIndex(r) {
                    fill = SVGCanvas.palette[index % SVGCanvas.palette.count]
                    title += " \(r.status ?? 0) sha256 \(r.sha256!.prefix(12))"
                    if let age = r.age { title += " Age \(age)" }
                    if let xCache = r.xCache { title += " X-Cache \(xCache)" }
                } else if let status = r.status {
                    fill = SVGCanvas.failureFill
                    title += " \(status)" + (r.failureReason.map { " \($0)" } ?? "")
                } else {
                    fill = SVGCanvas.errorFill
                    title += " " + (r.failureReason ?? r.error ?? "no answer")
                }
                canvas.rect(x: x(r.at), y: y, width: x(end) - x(r.at), height: 36, fill: fill, title: title)
            }
        }
        for change in changes {
            let cx = x(change.originChangedAt)
            canvas.line(x1: cx, y1: 62, x2: cx, y2: 196, stroke: "#c0392b", width: 1.5, dashed: true)
            if let caught = change.cdnCaughtUpAt {
                let cy = x(caught)
                canvas.line(x1: cy, y1: 146, x2: cy, y2: 196, stroke: "#c0392b", width: 1.5)
                canvas.line(x1: cx, y1: 206, x2: cy, y2: 206, stroke: "#c0392b", width: 1.5, markerEnd: true)
                canvas.text(String(format: "%@%.1f s", change.observedAtStart ? "≥ " : "", change.delaySeconds ?? 0),
                            x: (cx + cy) / 2, y: 222, size: 12, anchor: "middle", fill: "#c0392b", weight: "bold")
            } else {
                canvas.text("not caught up", x: cx + 4, y: 222, size: 12, fill: "#c0392b")
            }
        }
        canvas.timeAxis(t0: t0, t1: t1, x: x, y: 240, top: 62)
        // Legend.
        var lx = left
        for (i, content) in contents.enumerated() {
            canvas.rect(x: lx, y: 290, width: 12, height: 12, fill: SVGCanvas.palette[i % SVGCanvas.palette.count])
            canvas.text("sha256 \(content.sha.prefix(10))…", x: lx + 16, y: 300, size: 11)
            lx += 150
        }
        canvas.rect(x: lx, y: 290, width: 12, height: 12, fill: SVGCanvas.failureFill)
        canvas.text("failure", x: lx + 16, y: 300, size: 11)
        canvas.rect(x: lx + 80, y: 290, width: 12, height: 12, fill: SVGCanvas.errorFill)
        canvas.text("no answer", x: lx + 96, y: 300, size: 11)
        canvas.text("start \(RFC3339.string(t0)) · dashed: origin changed · arrow: CDN delay", x: left, y: 322, size: 10, fill: "#555")
        return canvas.svg
    }
}

/// The dashboard's propagation timeline of a host: per version, the window in which the origin
/// changed, when the edge first served it, and how long clients took (p50, p95, max).
public enum PropagationPlot {
    public static func svg(_ versions: [VersionPropagation]) -> String {
        let rows = versions.sorted { $0.version < $1.version }
        let height = Double(70 + max(1, rows.count) * 34 + 40)
        var canvas = SVGCanvas(width: 960, height: height)
        guard !rows.isEmpty else {
            canvas.text("no versions yet", x: 20, y: 40)
            return canvas.svg
        }
        var times: [Double] = []
        for v in rows {
            times += [v.originFirstSeen] + [v.originLastSeenPrevious, v.firstServedAt, v.lastServedPrevious].compactMap { $0 }
            if let max = v.clientDelays.last { times.append(v.originFirstSeen + max) }
        }
        let t0 = times.min()!
        let t1 = max(times.max()!, t0 + 1) + 1
        let left = 90.0, right = 30.0
        let x = { (t: Double) in left + (t - t0) / (t1 - t0) * (960 - left - right) }
        canvas.text("origin change window (grey) · first served (●) · last served previous (|) · clients p50–p95 (bar), max (◆)",
                    x: 20, y: 22, size: 11, fill: "#555")
        for (i, v) in rows.enumerated() {
            let y = 44 + Double(i) * 34
            let colour = SVGCanvas.palette[(v.version - 1 + SVGCanvas.palette.count) % SVGCanvas.palette.count]
            canvas.text("v\(v.version)", x: left - 10, y: y + 16, size: 13, anchor: "end", weight: "bold")
            if let previous = v.originLastSeenPrevious {
                canvas.rect(x: x(previous), y: y + 4, width: x(v.originFirstSeen) - x(previous), height: 16, fill: "#bbb",
                            title: "origin changed between \(RFC3339.string(previous)) and \(RFC3339.string(v.originFirstSeen))")
            }
            canvas.line(x1: x(v.originFirstSeen), y1: y, x2: x(v.originFirstSeen), y2: y + 24, stroke: colour, width: 2)
            if let p50 = Propagation.percentile(v.clientDelays, 50), let p95 = Propagation.percentile(v.clientDelays, 95) {
                canvas.rect(x: x(v.originFirstSeen + p50), y: y + 8, width: x(v.originFirstSeen + p95) - x(v.originFirstSeen + p50),
                            height: 8, fill: colour, title: String(format: "%d clients: p50 %.1f s, p95 %.1f s", v.clientDelays.count, p50, p95),
                            opacity: 0.6)
            }
            if let max = v.clientDelays.last {
                canvas.text("◆", x: x(v.originFirstSeen + max), y: y + 17, size: 11, anchor: "middle", fill: colour)
                // The delays in words beside the marks: clients, p50 and max.
                let label = String(format: "%d client%@ · p50 %.1f s · max %.1f s", v.clientDelays.count, v.clientDelays.count == 1 ? "" : "s",
                                   Propagation.percentile(v.clientDelays, 50) ?? max, max)
                let at = x(v.originFirstSeen + max) + 10
                canvas.text(label, x: at > 700 ? x(v.originFirstSeen) - 8 : at, y: y + 17, size: 11, anchor: at > 700 ? "end" : "start", fill: "#333")
            }
            if let served = v.firstServedAt {
                canvas.circle(x: x(served), y: y + 12, r: 5, fill: colour, title: "first served \(RFC3339.string(served))")
            }
            if let last = v.lastServedPrevious {
                canvas.line(x1: x(last), y1: y + 2, x2: x(last), y2: y + 22, stroke: "#222", width: 2)
            }
        }
        canvas.timeAxis(t0: t0, t1: t1, x: x, y: height - 36, top: 36)
        canvas.text("start \(RFC3339.string(t0))", x: left, y: height - 6, size: 10, fill: "#555")
        return canvas.svg
    }
}
