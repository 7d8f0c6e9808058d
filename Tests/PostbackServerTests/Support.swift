import Dispatch
import Foundation
import Locking
import PostbackClient
import PostbackCrypto
import PostbackServer
import PostbackStore
import PostbackTesting
import Postbacks
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

extension FaultyStorage {
    /// Lets the held sync, and every later one, go on.
    func releaseHeldSyncs() {
        holdNextSyncs(false)
        syncRelease.signal()
    }
}

/// A postback POSTed on its own thread and held inside its group commit's fdatasync (by
/// `FaultyStorage`) until `storage.releaseHeldSyncs()`: a request in flight, for the shutdown tests.
final class HeldPostback: Sendable {
    private let answer = Locked<Int?>(nil)
    private let answered = DispatchSemaphore(value: 0)

    /// Returns once the postback is inside the sync.
    init(_ body: [UInt8], to url: String, storage: FaultyStorage) {
        storage.holdNextSyncs(true)
        Thread { [self] in
            let status = (try? HTTPClient().post(url, body: body))?.status
            answer.withLock { $0 = status }
            answered.signal()
        }.start()
        #expect(storage.syncEntered.wait(timeout: .now() + 10) == .success, "the postback reached the group commit's sync")
    }

    /// The status it was answered with; nil when no answer came within 10 s.
    func status() -> Int? {
        answered.wait(timeout: .now() + 10) == .success ? answer.withLock { $0 } : nil
    }
}

extension TestServer {
    /// Starts `stop()` on its own thread; the semaphore is signalled once it returned.
    func stopInBackground() -> DispatchSemaphore {
        let stopped = DispatchSemaphore(value: 0)
        Thread { [self] in
            stop()
            stopped.signal()
        }.start()
        return stopped
    }
}

/// A raw TCP connection, for what an HTTP client library will not send (slow or broken requests).
final class RawConnection {
    /// One POST of `body` to `path` with `headers` (lines without CRLF, e.g. a `Host` or an
    /// `X-Forwarded-For` a library would set itself), closed after it; the whole answer.
    static func post(_ body: [UInt8], path: String, headers: [String], port: Int) throws -> String {
        let connection = try RawConnection(port: port)
        connection.send(
            "POST \(path) HTTP/1.1\r\n" + headers.map { $0 + "\r\n" }.joined()
                + "Connection: close\r\nContent-Length: \(body.count)\r\n\r\n")
        connection.send(body)
        return String(decoding: connection.readUntilClosed().bytes, as: UTF8.self)
    }

    let fd: Int32

    /// - Parameter receiveBufferBytes: a small receive buffer (set before the connect, so the window
    ///   the peer sees stays small): a client that reads slowly.
    /// - Parameter from: the loopback address to connect from (`127.0.0.2`: another client).
    init(port: Int, receiveTimeoutSeconds: Int = 10, receiveBufferBytes: Int32? = nil, from source: String? = nil) throws {
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

    func setReceiveTimeout(seconds: Int) {
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    func send(_ text: String) { send(Array(text.utf8)) }

    func send(_ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// One read's worth (a small response arrives whole on loopback).
    func readSome() -> String {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        return count > 0 ? String(decoding: buffer[0..<count], as: UTF8.self) : ""
    }

    /// Everything until the server closes the connection (or the receive timeout).
    func readUntilClosed() -> (bytes: [UInt8], closed: Bool) {
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

/// Runs `body` on `count` threads at once (released together) and returns their results in order.
func concurrently<T: Sendable>(_ count: Int, _ body: @escaping @Sendable (Int) -> T) -> [T] {
    let results = Locked<[Int: T]>([:])
    let start = DispatchSemaphore(value: 0)
    let group = DispatchGroup()
    for index in 0..<count {
        group.enter()
        Thread {
            start.wait()
            let result = body(index)
            results.withLock { $0[index] = result }
            group.leave()
        }.start()
    }
    for _ in 0..<count { start.signal() }
    group.wait()
    return (0..<count).map { index in results.withLock { $0[index]! } }
}

/// POSTs `bodies` to `url` from `workers` clients at once (each kept alive); the statuses, -1 for no answer.
func postConcurrently(_ bodies: [[UInt8]], to url: String, workers: Int) -> [Int] {
    concurrently(workers) { worker in
        guard let client = try? HTTPClient() else { return [-1] }
        return stride(from: worker, to: bodies.count, by: workers).map { (try? client.post(url, body: bodies[$0]))?.status ?? -1 }
    }.flatMap { $0 }
}
