import Postbacks

extension SpoolRecord {
    /// `body` as a quoted JSON string, byte for byte what `JSONWriter` writes for it, but fast.
    ///
    /// The body is JSON itself, so it is full of quotes, which send `JSONWriter` down its per-scalar
    /// path: on the receiver that cost about a third of a signature check per postback. Printable
    /// ASCII (what Apple sends) is escaped here byte by byte; a body with any other byte takes
    /// `JSONWriter`'s own path, so the two can never disagree on anything but speed.
    static func quotedBody(_ text: String, bytes body: [UInt8]) -> [UInt8] {
        var quoted: [UInt8] = []
        quoted.reserveCapacity(body.count + body.count / 8 + 2)
        quoted.append(UInt8(ascii: "\""))
        for byte in body {
            switch byte {
            case UInt8(ascii: "\""):
                quoted.append(UInt8(ascii: "\\"))
                quoted.append(byte)
            case UInt8(ascii: "\\"):
                quoted.append(UInt8(ascii: "\\"))
                quoted.append(byte)
            case 0x20..<0x7F:
                quoted.append(byte)
            default:
                // Controls, DEL and non-ASCII: JSONWriter decides (\n, \u00xx, U+2063 → \u2063, …).
                quoted.removeAll(keepingCapacity: true)
                JSONWriter.appendQuoted(text, to: &quoted)
                return quoted
            }
        }
        quoted.append(UInt8(ascii: "\""))
        return quoted
    }
}
