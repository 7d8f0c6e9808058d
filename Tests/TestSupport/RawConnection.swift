import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A raw TCP connection, for what an HTTP client library will not send (slow or broken requests).
package final class RawConnection {
    /// One POST of `body` to `path` with `headers` (lines without CRLF, e.g. a `Host` or an
    /// `X-Forwarded-For` a library would set itself), closed after it; the whole answer.
    package static func post(_ body: [UInt8], path: String, headers: [String], port: Int) throws -> String {
        let connection = try RawConnection(port: port)
        connection.send(
            "POST \(path) HTTP/1.1\r\n" + headers.map { $0 + "\r\n" }.joined()
                + "Connection: close\r\nContent-Length: \(body.count)\r\n\r\n")
        connection.send(body)
        return String(decoding: connection.readUntilClosed().bytes, as: UTF8.self)
    }

    package let fd: Int32

    /// - Parameter receiveBufferBytes: a small receive buffer (set before the connect, so the window
    ///   the peer sees stays small): a client that reads slowly.
    /// - Parameter from: the loopback address to connect from (`127.0.0.2`: another client).
    package init(port: Int, receiveTimeoutSeconds: Int = 10, receiveBufferBytes: Int32? = nil, from source: String? = nil) throws
    {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        if var bytes = receiveBufferBytes {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, socklen_t(MemoryLayout<Int32>.size))
        }
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            local.sin_addr.s_addr = inet_addr(source)
            let bound = withUnsafePointer(to: &local) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard bound == 0 else { throw POSIXError(.EADDRNOTAVAIL) }
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { throw POSIXError(.ECONNREFUSED) }
        // A safety net so a broken server fails the test instead of hanging it.
        var timeout = timeval(tv_sec: receiveTimeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    package func setReceiveTimeout(seconds: Int) {
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    package func send(_ text: String) { send(Array(text.utf8)) }

    package func send(_ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// One read's worth (a small response arrives whole on loopback).
    package func readSome() -> String {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        return count > 0 ? String(decoding: buffer[0..<count], as: UTF8.self) : ""
    }

    /// Everything until the server closes the connection (or the receive timeout).
    package func readUntilClosed() -> (bytes: [UInt8], closed: Bool) {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count == 0 { return (received, true) }
            if count < 0 { return (received, errno == ECONNRESET) }
            received.append(contentsOf: buffer[0..<count])
        }
    }
}
