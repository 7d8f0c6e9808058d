import CMicroHTTPD
import CMicroHTTPDShim

#if canImport(Glibc)
    import Glibc
#endif

// The C fence's other half (with `HTTPDaemon.swift`): every libmicrohttpd call the request state
// machine needs goes through these types, so `RequestHandler` reads and answers requests in Swift
// terms and makes no libmicrohttpd call itself.

/// One libmicrohttpd connection, as the callbacks hand it over. A value is only used while
/// libmicrohttpd keeps the connection (during a callback, or while it is suspended); libmicrohttpd
/// synchronizes its own use of the pointer, hence `@unchecked Sendable`.
package struct HTTPConnection: @unchecked Sendable {
    fileprivate let pointer: OpaquePointer

    init(_ pointer: OpaquePointer) { self.pointer = pointer }

    /// The connection's socket.
    var descriptor: Int32 { postback_mhd_connection_fd(pointer) }

    /// The connection's watchdog track, which `HTTPDaemon` keeps from the connection's start to its end.
    /// Only on the receiver's daemons, whose responder (`RequestHandler`) makes a `Track` the
    /// connection's state; internal, so another module's responder never reads its own state as one.
    var track: ConnectionWatchdog.Track? {
        postback_mhd_socket_context(pointer).map { Unmanaged<ConnectionWatchdog.Track>.fromOpaque($0).takeUnretainedValue() }
    }

    /// The socket peer's address ("unknown" if libmicrohttpd cannot say).
    package var peerAddress: String {
        var buffer = [CChar](repeating: 0, count: 64)
        return postback_mhd_client_address(pointer, &buffer, buffer.count) == 0
            ? String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "unknown"
    }

    /// The status of the reply libmicrohttpd queued on this connection (its own answers included); 0 if none.
    var replyStatus: Int { Int(postback_mhd_http_status(pointer)) }

    /// The request header `name` (the first, if repeated), nil when absent.
    package func header(_ name: String) -> String? {
        MHD_lookup_connection_value(pointer, .HEADER_KIND, name).map { String(cString: $0) }
    }

    func hasHeader(_ name: String) -> Bool { MHD_lookup_connection_value(pointer, .HEADER_KIND, name) != nil }

    /// How the header fields lie in libmicrohttpd's buffer, and the header block's size.
    func headerLayout() -> (layout: HTTPFraming.Layout, headerBytes: Int) {
        var headerBytes = 0
        let code = postback_mhd_header_layout(pointer, &headerBytes)
        return (HTTPFraming.Layout(code: code), headerBytes)
    }

    /// The request headers the framing checks look at (names as received): `Content-Length`,
    /// `Transfer-Encoding`, and any name with whitespace. Others are skipped without making Strings.
    func framingHeaders() -> [(name: String, value: String)] {
        final class Collected { var headers: [(name: String, value: String)] = [] }
        let collected = Collected()
        _ = MHD_get_connection_values(
            pointer, .HEADER_KIND,
            { context, _, key, value in
                guard let context, let key else { return .YES }
                let relevant =
                    strcasecmp(key, "Content-Length") == 0 || strcasecmp(key, "Transfer-Encoding") == 0
                    || key[0] == 0 || strpbrk(key, " \t") != nil
                guard relevant else { return .YES }
                let collected = Unmanaged<Collected>.fromOpaque(context).takeUnretainedValue()
                collected.headers.append((String(cString: key), value.map { String(cString: $0) } ?? ""))
                return .YES
            }, Unmanaged.passUnretained(collected).toOpaque())
        return withExtendedLifetime(collected) { collected.headers }
    }

    /// The query string's arguments, in order, as libmicrohttpd decoded them (`%XX` and `+` undone); a
    /// name without `=` has a nil value.
    package func queryArguments() -> [(name: String, value: String?)] {
        final class Collected { var arguments: [(name: String, value: String?)] = [] }
        let collected = Collected()
        _ = MHD_get_connection_values(
            pointer, .GET_ARGUMENT_KIND,
            { context, _, key, value in
                guard let context, let key else { return .YES }
                let collected = Unmanaged<Collected>.fromOpaque(context).takeUnretainedValue()
                collected.arguments.append((String(cString: key), value.map { String(cString: $0) }))
                return .YES
            }, Unmanaged.passUnretained(collected).toOpaque())
        return withExtendedLifetime(collected) { collected.arguments }
    }

    /// Carries out the request state machine's step; libmicrohttpd's answer to the access callback.
    func take(_ step: HTTPStep) -> Int32 {
        switch step {
        case .proceed: return 1
        case .refuse: return 0
        case .reply(let reply, let closing): return queue(reply, closing: closing) ? 1 : 0
        case .suspend(let then):
            // Suspended before `then` hands the resumption to another thread, which may resume at once.
            MHD_suspend_connection(pointer)
            then { [self] in MHD_resume_connection(pointer) }
            return 1
        }
    }

    /// Queues `reply` (its body copied). `closing`: with `Connection: close`. False if libmicrohttpd refused it.
    private func queue(_ reply: HTTPReply, closing: Bool) -> Bool {
        let response = reply.body.withUnsafeBytes { bytes in
            MHD_create_response_from_buffer(bytes.count, UnsafeMutableRawPointer(mutating: bytes.baseAddress), Self.mustCopy)
        }
        guard let response else { return false }
        defer { MHD_destroy_response(response) }
        MHD_add_response_header(response, "Content-Type", reply.contentType)
        for header in reply.headers { MHD_add_response_header(response, header.name, header.value) }
        if closing { MHD_add_response_header(response, "Connection", "close") }
        return MHD_queue_response(pointer, UInt32(reply.status), response) == .YES
    }

    /// MHD_RESPMEM_MUST_COPY (the importer gives this enum no usable case names).
    private static let mustCopy = MHD_ResponseMemoryMode(rawValue: 2)!
}

/// What the request state machine (`RequestHandler.handle`) asks of the connection after each call.
package enum HTTPStep {
    /// Go on: read more of the body, or call again once there is something to do.
    case proceed
    /// Close the connection without an answer.
    case refuse
    /// Queue this reply; `closing`: with `Connection: close`, and the connection ends after it.
    case reply(HTTPReply, closing: Bool)
    /// Suspend the connection until the answer is ready; `then` gets the one way to resume it
    /// (callable once, from any thread).
    case suspend(then: (_ resume: @escaping @Sendable () -> Void) -> Void)
}

/// A request's line as libmicrohttpd gives it to the access callback; read (into Strings) only
/// when the state machine asks, once per request.
package struct HTTPRequestLine {
    fileprivate let url: UnsafePointer<CChar>?
    fileprivate let method: UnsafePointer<CChar>?
    fileprivate let version: UnsafePointer<CChar>?

    init(url: UnsafePointer<CChar>?, method: UnsafePointer<CChar>?, version: UnsafePointer<CChar>?) {
        self.url = url
        self.method = method
        self.version = version
    }

    package var path: String { url.map { String(cString: $0) } ?? "/" }
    package var methodName: String { method.map { String(cString: $0) } ?? "" }
    var isHTTP11: Bool { version.map { strcmp($0, "HTTP/1.1") == 0 } == true }
}

/// The part of a request body libmicrohttpd has read so far (the access callback's upload data).
package struct HTTPBodyChunk {
    fileprivate let data: UnsafePointer<CChar>?
    fileprivate let size: UnsafeMutablePointer<Int>

    init(data: UnsafePointer<CChar>?, size: UnsafeMutablePointer<Int>) {
        self.data = data
        self.size = size
    }

    /// Bytes waiting; 0 when the body is complete (or there is none).
    package var count: Int { size.pointee }

    package func append(to body: inout [UInt8]) {
        guard let data, size.pointee > 0 else { return }
        data.withMemoryRebound(to: UInt8.self, capacity: size.pointee) {
            body.append(contentsOf: UnsafeBufferPointer(start: $0, count: size.pointee))
        }
    }

    /// Tells libmicrohttpd every byte was taken.
    package func consumed() { size.pointee = 0 }
}
