/// Tag balance of generated HTML or SVG, so a broken page (an unclosed element, an unescaped `<`)
/// fails a test without an external parser.
public enum MarkupCheck {
    public static let htmlVoidElements: Set<String> = ["meta", "input", "br", "link", "img", "hr"]

    public static func isBalanced(_ text: String, voidElements: Set<String> = htmlVoidElements) -> Bool {
        var stack: [String] = []
        var rest = Substring(text)
        while let open = rest.firstIndex(of: "<") {
            guard let close = rest[open...].firstIndex(of: ">") else { return false }
            let tag = rest[rest.index(after: open)..<close]
            rest = rest[rest.index(after: close)...]
            if tag.hasPrefix("!") || tag.hasPrefix("?") { continue }
            let name = tag.drop { $0 == "/" }.prefix { !$0.isWhitespace && $0 != "/" }.lowercased()
            if tag.hasPrefix("/") {
                guard stack.popLast() == name else { return false }
            } else if !tag.hasSuffix("/") && !voidElements.contains(name) {
                stack.append(name)
            }
        }
        return stack.isEmpty
    }
}
