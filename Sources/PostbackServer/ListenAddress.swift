package import Basics
import PostbackStore

#if canImport(Glibc)
    import Glibc
#endif

/// `HOST:PORT` or `[IPv6]:PORT`, and the listening socket made from it.
struct ListenAddress: Sendable, CustomStringConvertible {
    let host: String
    let port: Int

    init(_ text: String) throws(ServerConfiguration.ConfigurationError) {
        let hostPart: Substring
        let portPart: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else {
                throw ServerConfiguration.ConfigurationError("listen address \"\(text)\" must be [IPv6]:PORT")
            }
            hostPart = text[text.index(after: text.startIndex)..<close]
            portPart = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":") else {
                throw ServerConfiguration.ConfigurationError("listen address \"\(text)\" must be HOST:PORT, e.g. 127.0.0.1:8080")
            }
            hostPart = text[..<colon]
            portPart = text[text.index(after: colon)...]
        }
        guard !hostPart.isEmpty else {
            let port = ":" + portPart
            throw ServerConfiguration.ConfigurationError(
                "listen address \"\(text)\" has no host: use 127.0.0.1\(port) for this machine only, "
                    + "or 0.0.0.0\(port) (IPv4) or [::]\(port) (IPv6) for all interfaces")
        }
        guard let port = Int(portPart), (0...65535).contains(port) else {
            throw ServerConfiguration.ConfigurationError(
                "listen address \"\(text)\" must be HOST:PORT with a port from 0 to 65535")
        }
        host = String(hostPart)
        self.port = port
    }

    init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// A non-blocking listening socket and the port it got (port 0 asks the kernel for one).
    func bind() throws(ServerError) -> (descriptor: Int32, port: Int) {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        var results: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &results)
        guard status == 0, let first = results else {
            throw ServerError("cannot resolve listen host \(host): \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(results) }
        let fd = socket(
            first.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0
        )
        // A failed call throws the one system-call error shape, with the address as its path.
        func failure(_ operation: String, closing: Bool = true) -> ServerError {
            let error = ServerError(systemCall: SystemCallError(operation: operation, path: description, errorNumber: errno))
            if closing { close(fd) }
            return error
        }
        guard fd >= 0 else { throw failure("socket", closing: false) }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        guard Glibc.bind(fd, first.pointee.ai_addr, first.pointee.ai_addrlen) == 0 else { throw failure("bind") }
        guard listen(fd, 1024) == 0 else { throw failure("listen") }
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let bound = withUnsafeMutablePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard bound == 0 else { throw failure("getsockname") }
        let family = Int32(storage.ss_family)
        let port: UInt16 = withUnsafePointer(to: &storage) { pointer in
            if family == AF_INET6 {
                return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin6_port) }
            }
            return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) }
        }
        return (fd, Int(port))
    }
}

/// The server could not start (or was misused); the message says why. A message carrier: `serve`
/// prints it and exits. A failed system call keeps its `SystemCallError` for a caller that branches on `errno`.
package struct ServerError: Error, Sendable, CustomStringConvertible {
    package let description: String
    package let systemCall: SystemCallError?

    package init(_ description: String) {
        self.description = description
        systemCall = nil
    }

    /// "cannot listen on ADDRESS: OPERATION failed: REASON".
    package init(systemCall: SystemCallError) {
        description = "cannot listen on \(systemCall.path): \(systemCall.reason)"
        self.systemCall = systemCall
    }
}
