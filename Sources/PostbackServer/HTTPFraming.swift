/// The message-framing checks of RFC 9112 §6.3 that libmicrohttpd leaves to the application.
///
/// A request whose body length two parties could read differently (a proxy in front and this
/// receiver) is refused, and its connection closed, so no bytes of it can run as a second request:
/// `Content-Length` together with `Transfer-Encoding`, conflicting or malformed `Content-Length`
/// values, whitespace between a field name and its colon (§5.1), a `Transfer-Encoding` list with an
/// empty element, a folded header line, a CR or NUL in a value, and a transfer coding other than
/// `chunked` (501: it cannot be decoded here). Header fields over 8 KiB get 431.
enum HTTPFraming {
    struct Violation: Equatable {
        let status: Int
        let detail: String
    }

    /// The most bytes of header fields a request may have (names, values, ": " and CR LF); more get 431.
    static let headerBytesLimit = 8 << 10

    /// How the header fields lie in libmicrohttpd's buffer (`postback_mhd_header_layout`).
    enum Layout {
        case plain, folded, controlCharacter

        init(code: Int32) {
            switch code {
            case 0: self = .plain
            case 2: self = .controlCharacter
            default: self = .folded
            }
        }
    }

    /// Obs-fold, a CR or NUL in a value, or too many header bytes: libmicrohttpd would read such a
    /// request its own way (a folded `Content-Length` dropped, a value cut at a NUL), so it is refused.
    static func violation(layout: Layout, headerBytes: Int) -> Violation? {
        switch layout {
        case .folded:
            return Violation(status: 400, detail: "a header field is folded over several lines (obs-fold, RFC 9112 §5.2)")
        case .controlCharacter:
            return Violation(status: 400, detail: "a header field value contains a CR or NUL byte (RFC 9110 §5.5)")
        case .plain:
            guard headerBytes <= headerBytesLimit else {
                return Violation(status: 431, detail: "the header fields exceed \(headerBytesLimit) bytes")
            }
            return nil
        }
    }

    /// The first violation among the request's header fields (names as received), or nil.
    static func violation(in headers: [(name: String, value: String)]) -> Violation? {
        if headers.count == 1, isPlainContentLength(headers[0]) { return nil }
        var lengths: [String] = []
        var codings: [String] = []
        for header in headers {
            if header.name.isEmpty || header.name.contains(where: { $0 == " " || $0 == "\t" }) {
                return Violation(
                    status: 400, detail: "header field name \"\(printable(header.name))\" contains whitespace (RFC 9112 §5.1)")
            }
            switch header.name.lowercased() {
            case "content-length":
                // "5, 5" is allowed to mean 5 (RFC 9110 §8.6); anything else must be one run of digits.
                lengths += header.value.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingWhitespace() }
            case "transfer-encoding":
                // Empty elements ("", ",", ", chunked", "chunked,") are refused: libmicrohttpd reads
                // such a body until the connection closes.
                codings += header.value.split(separator: ",", omittingEmptySubsequences: false).map {
                    $0.trimmingWhitespace().lowercased()
                }
            default:
                break
            }
        }
        if !codings.isEmpty, !lengths.isEmpty {
            return Violation(status: 400, detail: "both Content-Length and Transfer-Encoding are present (RFC 9112 §6.3)")
        }
        if let bad = lengths.first(where: { $0.isEmpty || $0.count > 18 || !$0.allSatisfy { ("0"..."9").contains($0) } }) {
            return Violation(status: 400, detail: "Content-Length \"\(printable(bad))\" is not a number of bytes")
        }
        if Set(lengths.map { $0.drop { $0 == "0" } }).count > 1 {
            return Violation(status: 400, detail: "conflicting Content-Length values: \(lengths.joined(separator: ", "))")
        }
        if codings.contains("") {
            return Violation(
                status: 400, detail: "Transfer-Encoding \"\(printable(codings.joined(separator: ",")))\" has an empty element")
        }
        if !codings.isEmpty, codings != ["chunked"] {
            return Violation(
                status: 501,
                detail:
                    "Transfer-Encoding \"\(printable(codings.joined(separator: ", ")))\" is not supported; send Content-Length or chunked"
            )
        }
        return nil
    }

    /// The usual request's only framing header: `Content-Length` (any case) with 1 to 18 ASCII digits.
    /// Decided on the bytes, since the general rules above cost some 27,000 instructions a request
    /// (Strings split, trimmed and lower-cased); it accepts nothing they would refuse.
    private static func isPlainContentLength(_ header: (name: String, value: String)) -> Bool {
        let digits = header.value.utf8
        return (1...18).contains(digits.count) && digits.allSatisfy { (0x30...0x39).contains($0) }
            && header.name.utf8.elementsEqual("content-length".utf8) { received, lowercase in
                received == lowercase || (lowercase >= 0x61 && lowercase <= 0x7A && received == lowercase - 0x20)
            }
    }

    /// At most 64 characters of a header for a message, control characters as `?`.
    private static func printable(_ text: String) -> String {
        String(
            text.prefix(64).map {
                $0.isASCII && ($0 == " " || !$0.isWhitespace) && $0.asciiValue.map { $0 >= 0x20 && $0 < 0x7F } == true ? $0 : "?"
            })
    }
}

extension Substring {
    fileprivate func trimmingWhitespace() -> String {
        let isBlank = { (character: Character) in character == " " || character == "\t" }
        guard let first = firstIndex(where: { !isBlank($0) }), let last = lastIndex(where: { !isBlank($0) }) else { return "" }
        return String(self[first...last])
    }
}
