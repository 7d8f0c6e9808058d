/// A URL as it may be printed (logs, `forward status`, messages): its user-info (`user:password@`)
/// and its query (which some partners use for an API key) are replaced by `…`; the scheme, host, port
/// and path stay, so an operator still sees where it points. The one function every printed URL goes
/// through.
package enum URLRedaction {
    /// `https://user:secret@host:8443/path?key=abc` → `https://…@host:8443/path?…`.
    package static func redacted(_ url: String) -> String {
        var text = Substring(url)
        var query = ""
        if let mark = text.firstIndex(of: "?") {
            text = text[..<mark]
            query = "?…"
        }
        var authorityStart = text.startIndex
        if let colon = text.firstIndex(of: ":"), text[colon...].hasPrefix("://") {
            authorityStart = text.index(colon, offsetBy: 3)
        }
        let authorityEnd = text[authorityStart...].firstIndex { $0 == "/" || $0 == "#" } ?? text.endIndex
        guard let at = text[authorityStart..<authorityEnd].lastIndex(of: "@") else { return String(text) + query }
        return String(text[..<authorityStart]) + "…" + String(text[at...]) + query
    }
}
