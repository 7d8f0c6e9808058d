package import Basics
import PostbackStore

#if canImport(Glibc)
    import Glibc
#endif

/// `HOST:PORT` or `[IPv6]:PORT`, and the listening socket made from it.
package struct ListenAddress: Sendable, CustomStringConvertible {
    package let host: String
    package let port: Int

    package init(_ text: String) throws(ServerConfiguration.ConfigurationError) {
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

    package init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    package var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// A non-blocking listening socket and the port it got (port 0 asks the kernel for one).
    package func bind() throws(ServerError) -> (descriptor: Int32, port: Int) {
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

extension PostbackServer {
    /// Checks, before anything is created, what most often stops a receiver from starting: the
    /// listen address (in use, or a privileged port) and the data directory (not a directory, not
    /// writable, or not creatable). Each problem is one message with its remedy.
    package static func preflight(_ configuration: ServerConfiguration) throws(ServerError) {
        let address: ListenAddress
        do {
            address = try ListenAddress(configuration.listen)
        } catch {
            throw ServerError(error.description)
        }
        do {
            let (descriptor, _) = try address.bind()
            close(descriptor)
        } catch {
            switch error.systemCall?.errorNumber {
            case EADDRINUSE?:
                throw ServerError(
                    "cannot listen on \(address): the address is in use (another receiver?); stop it, or choose another "
                        + "address with --listen or \"listen\" in the config")
            case EACCES?:
                throw ServerError(
                    "cannot listen on \(address): ports below 1024 need root or CAP_NET_BIND_SERVICE; choose a port above "
                        + "1023 and put a TLS proxy in front (docs/serve.md)")
            case EADDRNOTAVAIL?:
                throw ServerError(
                    "cannot listen on \(address): no interface of this machine has that address; use 127.0.0.1, 0.0.0.0 "
                        + "or one of its own addresses")
            default:
                throw error
            }
        }
        // The data directory, or the nearest directory above it that exists, must be writable.
        var path = configuration.dataDirectory
        var status = stat()
        while stat(path, &status) != 0 {
            guard let slash = path.lastIndex(of: "/") else {
                path = "."  // a relative name: its parent is the working directory
                continue
            }
            path = slash == path.startIndex ? "/" : String(path[..<slash])
        }
        let isDirectory = (status.st_mode & S_IFMT) == S_IFDIR
        if path == configuration.dataDirectory, !isDirectory {
            throw ServerError(
                "the data directory \(path) is not a directory; choose another with --data or \"data_dir\" in the config")
        }
        guard access(path, W_OK | X_OK) == 0 else {
            throw ServerError(
                path == configuration.dataDirectory
                    ? "the data directory \(path) is not writable by this user; fix its owner or mode, or choose another "
                        + "with --data"
                    : "the data directory \(configuration.dataDirectory) cannot be created: \(path) is not writable by this "
                        + "user; create it (owned by this user), or choose another with --data")
        }
    }
}
