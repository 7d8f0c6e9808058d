import Basics
import Postbacks

/// Escaping for every string that comes from the data. Ad network ids, campaign names, labels and
/// rejection reasons are attacker-influenced (a rejected record is keyed by whatever it claims to
/// be), so none of them ever reaches the page unescaped.
enum HTMLText {
    /// `text` made safe inside element content and inside a quoted attribute value, in HTML and in
    /// inline SVG alike: `& < > " '` become character references, and controls and invisible format
    /// characters (bidi overrides, zero-width spaces, U+2063) are shown as `[U+202E]`, so that a label
    /// can neither hide itself nor reorder the text around it.
    static func escape(_ text: String) -> String {
        var text = text
        let plain = text.withUTF8 { utf8 in
            !utf8.contains { byte in
                byte < 0x20 || byte >= 0x7F || byte == 0x26 || byte == 0x3C || byte == 0x3E || byte == 0x22 || byte == 0x27
            }
        }
        if plain { return text }
        var escaped = ""
        escaped.reserveCapacity(text.utf8.count + 16)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&#39;"
            default:
                if UnicodeSafety.isControlOrInvisible(scalar) {
                    escaped += "[" + UnicodeSafety.describe(scalar).prefix(while: { $0 != " " }) + "]"
                } else {
                    escaped.unicodeScalars.append(scalar)
                }
            }
        }
        return escaped
    }

    /// `text` cut to `limit` characters (grapheme clusters, so nothing is split mid-character), with an
    /// ellipsis when cut. Charts use it for labels; tooltips and tables show the full text.
    static func clipped(_ text: String, to limit: Int) -> String {
        guard text.count > limit else { return text }
        return String(text.prefix(max(1, limit - 1))) + "…"
    }

    /// Like `clipped`, but the part after the last `separator` (an app id, say) is kept whole and the
    /// part before it is cut: an identifier cut short names a different thing, a network name cut
    /// short is still recognisable. Falls back to `clipped` when the kept part alone does not fit.
    static func clipped(_ text: String, to limit: Int, keepingAfterLast separator: String) -> String {
        guard text.count > limit, let range = text.range(of: separator, options: .backwards) else {
            return clipped(text, to: limit)
        }
        let kept = String(text[range.lowerBound...])
        let room = limit - kept.count
        guard room >= 2 else { return clipped(text, to: limit) }
        return clipped(String(text[..<range.lowerBound]), to: room) + kept
    }
}
