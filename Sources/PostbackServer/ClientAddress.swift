#if canImport(Glibc)
    import Glibc
#endif

/// An IPv4 or IPv6 network (`10.0.0.0/8`, `fd00::/8`; a bare address is a /32 or /128).
package struct CIDR: Sendable, Equatable {
    let network: [UInt8]
    let prefixLength: Int

    package init?(_ text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count <= 2, let address = IPAddress.bytes(String(parts[0])) else { return nil }
        let bits = address.count * 8
        var length = bits
        if parts.count == 2 {
            guard let parsed = Int(parts[1]), (0...bits).contains(parsed) else { return nil }
            length = parsed
        }
        network = IPAddress.masked(address, to: length)
        prefixLength = length
    }

    func contains(_ address: [UInt8]) -> Bool {
        address.count == network.count && IPAddress.masked(address, to: prefixLength) == network
    }
}

enum IPAddress {
    /// The 4 or 16 bytes of a textual IPv4 or IPv6 address (IPv4-mapped IPv6 as IPv4), or nil.
    static func bytes(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, text, &v6) == 1 else { return nil }
        let bytes = withUnsafeBytes(of: &v6) { Array($0) }
        if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF { return Array(bytes[12...]) }
        return bytes
    }

    /// One spelling per client, for what is counted per client (the rejected and quarantine
    /// shares, silent connections): an IPv4 address as dotted decimal (also when written as
    /// IPv4-mapped IPv6), an IPv6 address as its network of `ipv6PrefixLength` bits in RFC 5952
    /// form with the length (`2001:db8:1:2::/64`), so every spelling and every address of that
    /// network is one client. Text that is no address is kept as it is.
    static func client(_ text: String, ipv6PrefixLength: Int) -> String {
        guard let address = bytes(text) else { return text }
        let isV6 = address.count == 16
        var network = isV6 ? masked(address, to: ipv6PrefixLength) : address
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let family = isV6 ? AF_INET6 : AF_INET
        guard network.withUnsafeMutableBytes({ inet_ntop(family, $0.baseAddress, &buffer, socklen_t(buffer.count)) }) != nil
        else { return text }
        let spelled = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return isV6 ? "\(spelled)/\(ipv6PrefixLength)" : spelled
    }

    static func masked(_ address: [UInt8], to length: Int) -> [UInt8] {
        address.enumerated().map { index, byte in
            let keep = max(0, min(8, length - index * 8))
            return keep == 8 ? byte : byte & UInt8(truncatingIfNeeded: 0xFF << (8 - keep))
        }
    }
}

/// Who sent a request: the socket's peer, or, when that peer is a trusted proxy, the client its
/// `X-Forwarded-For` (or RFC 7239 `Forwarded`) header names.
package enum ClientAddress {
    /// The peer's address, or (with `trusted` proxies) the client the peer forwards for.
    package static func of(_ connection: HTTPConnection, peer: String? = nil, trusted: [CIDR]) -> String {
        let peer = peer ?? connection.peerAddress
        guard !trusted.isEmpty else { return peer }
        return resolve(
            peer: peer, forwardedFor: connection.header("X-Forwarded-For"), forwarded: connection.header("Forwarded"),
            trusted: trusted)
    }

    /// Walks the forwarding chain from the right (the hop nearest to us) past trusted proxies; the
    /// first address not trusted is the client (entries further left could be forged by it). A
    /// header that does not parse leaves the peer as the answer.
    static func resolve(peer: String, forwardedFor: String?, forwarded: String?, trusted: [CIDR]) -> String {
        guard !trusted.isEmpty, isTrusted(peer, trusted) else { return peer }
        let chain: [String]
        if let forwardedFor {
            chain = forwardedFor.split(separator: ",").map { trim(String($0)) }
        } else if let forwarded {
            chain = forwarded.split(separator: ",").compactMap { element in
                element.split(separator: ";").lazy.map { trim(String($0)) }
                    .first { $0.lowercased().hasPrefix("for=") }
                    .map { unquoteForwarded(String($0.dropFirst(4))) }
            }
        } else {
            return peer
        }
        guard !chain.isEmpty, chain.allSatisfy({ IPAddress.bytes($0) != nil }) else { return peer }
        return chain.reversed().first { !isTrusted($0, trusted) } ?? chain[0]
    }

    static func isTrusted(_ address: String, _ trusted: [CIDR]) -> Bool {
        guard let bytes = IPAddress.bytes(address) else { return false }
        return trusted.contains { $0.contains(bytes) }
    }

    private static func trim(_ text: String) -> String {
        String(text.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }

    /// `"[2001:db8::1]:4711"` → `2001:db8::1`, `192.0.2.1:80` → `192.0.2.1`.
    private static func unquoteForwarded(_ value: String) -> String {
        var text =
            value.hasPrefix("\"") && value.hasSuffix("\"") && value.count >= 2 ? String(value.dropFirst().dropLast()) : value
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            text = String(text[text.index(after: text.startIndex)..<close])
        } else if text.filter({ $0 == ":" }).count == 1, let colon = text.firstIndex(of: ":") {
            text = String(text[..<colon])
        }
        return text
    }
}
