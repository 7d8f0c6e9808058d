import Dispatch
import Foundation
import PostbackClient
import PostbackServer
import TestSupport
import Testing

/// Slow and abusive clients: absolute timeouts per phase, the connection limit.
@Suite struct ReceiverHardeningTests {
    @Test func slowHeadersAreCutOffAfterTheHeaderTimeout() throws {
        let server = try TestServer { $0.headerTimeoutSeconds = 0.5 }
        defer { server.stop() }
        let connection = try RawConnection(port: server.server.port)
        let start = Date()
        connection.send("POST /.well-known/skadnetwork/report-attribution/ HTTP/1.1\r\nHost: x\r\n")
        // Trickle header bytes: an inactivity timeout alone would never fire.
        for _ in 0..<4 {
            connection.send("X")
            usleep(200_000)
        }
        let result = connection.readUntilClosed()
        #expect(result.closed)
        #expect(Date().timeIntervalSince(start) < 5)
        // Meanwhile a normal client is answered.
        #expect(try server.get("/livez").status == 200)
        #expect(try server.metric(#"postback_connections_timed_out_total{phase="headers"}"#) == 1)
    }

    @Test func slowBodyIsCutOffAfterTheBodyTimeout() throws {
        let server = try TestServer { $0.bodyTimeoutSeconds = 0.5 }
        defer { server.stop() }
        let connection = try RawConnection(port: server.server.port)
        connection.send("POST /.well-known/skadnetwork/report-attribution/ HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{")
        let start = Date()
        let result = connection.readUntilClosed()
        #expect(result.closed)
        #expect(Date().timeIntervalSince(start) < 5)
        #expect(try server.metric(#"postback_connections_timed_out_total{phase="body"}"#) == 1)
    }

    @Test func idleKeepAliveConnectionsAreClosed() throws {
        let server = try TestServer { $0.idleTimeoutSeconds = 0.5 }
        defer { server.stop() }
        let connection = try RawConnection(port: server.server.port)
        connection.send("GET /livez HTTP/1.1\r\nHost: x\r\n\r\n")
        let result = connection.readUntilClosed()
        #expect(result.closed)
        #expect(String(decoding: result.bytes, as: UTF8.self).hasPrefix("HTTP/1.1 200"))
    }

    @Test func atTheLimitTheOldestIdleConnectionMakesRoom() throws {
        let server = try TestServer { $0.connectionLimit = 4 }
        defer { server.stop() }
        // Opened one after the other, each answered before the next connects: the receiver's worker
        // threads accept in their own order, and "oldest" is the order in which it took them.
        // An answered request proves each was accepted; they then stay open (keep-alive).
        var held: [RawConnection] = []
        for _ in 0..<4 {
            let connection = try RawConnection(port: server.server.port)
            connection.send("GET /livez HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(connection.readSome().hasPrefix("HTTP/1.1 200"))
            held.append(connection)
        }
        // A connection counts as idle once the receiver has finished its reply, which a loaded host
        // may do a moment after the client read it (a full test run in parallel on 2 cores: hundreds of
        // milliseconds): until then it is not a candidate to shed.
        usleep(1_000_000)
        let extra = try RawConnection(port: server.server.port, receiveTimeoutSeconds: 2)
        let start = Date()
        extra.send("GET /livez HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let answered = extra.readUntilClosed()
        #expect(String(decoding: answered.bytes, as: UTF8.self).hasPrefix("HTTP/1.1 200"), "served at once, not queued")
        #expect(Date().timeIntervalSince(start) < 1)
        held[0].setReceiveTimeout(seconds: 2)
        #expect(held[0].readUntilClosed().closed, "the oldest idle connection was closed to make room")
        // (At least: the /metrics request itself may be the one over the limit and shed another.)
        #expect(try server.metric(#"postback_connections_refused_total{reason="silent-shed"}"#) ?? 0 >= 1)
    }

    /// A flood of empty connections from one address sheds its own, not another client's slow but
    /// genuine connection (the oldest silent one).
    @Test func aFloodOfSilentConnectionsShedsTheFloodersOwn() throws {
        let server = try TestServer { $0.connectionLimit = 8 }
        defer { server.stop() }
        let genuine = try RawConnection(port: server.server.port, receiveTimeoutSeconds: 3, from: "127.0.0.2")
        usleep(50_000)
        let flood = try (0..<40).map { _ in try RawConnection(port: server.server.port, from: "127.0.0.1") }
        usleep(200_000)
        genuine.send("GET /livez HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let answer = String(decoding: genuine.readUntilClosed().bytes, as: UTF8.self)
        #expect(answer.hasPrefix("HTTP/1.1 200"), "the slow genuine client is served: \(answer)")
        #expect(try server.metric(#"postback_connections_refused_total{reason="silent-shed"}"#) ?? 0 >= 30)
        withExtendedLifetime(flood) {}
    }

    @Test func atTheLimitWithEveryConnectionBusyANewOneIsRefusedAtOnce() throws {
        let server = try TestServer {
            $0.connectionLimit = 4
            $0.headerTimeoutSeconds = 30
        }
        defer { server.stop() }
        // Four connections in the middle of their headers: busy, not silent.
        var busy = try (0..<4).map { _ in try RawConnection(port: server.server.port) }
        for connection in busy { connection.send("POST /.well-known/skadnetwork/report-attribution/ HTTP/1.1\r\nHost: x\r\n") }
        usleep(200_000)
        let extra = try RawConnection(port: server.server.port, receiveTimeoutSeconds: 5)
        let start = Date()
        extra.send("GET /livez HTTP/1.1\r\nHost: x\r\n\r\n")
        let result = extra.readUntilClosed()
        #expect(result.closed && result.bytes.isEmpty, "refused, not answered")
        #expect(Date().timeIntervalSince(start) < 1, "refused at once, not after a timeout")
        busy.removeAll()  // so /metrics can be read
        usleep(100_000)
        #expect(try server.metric(#"postback_connections_refused_total{reason="over-limit"}"#) == 1)
    }

    /// Slow readers: each connection pipelines 200 `GET /metrics` behind a tiny receive window and
    /// reads nothing, so its replies stall. At the limit a genuine postback still gets a slot (the
    /// slow reader waiting longest is shed), and a stalled reply is cut off after the body timeout.
    @Test func slowReadersAreShedAtTheLimitAndStalledRepliesCutOff() throws {
        let server = try TestServer {
            $0.connectionLimit = 4
            $0.bodyTimeoutSeconds = 3
        }
        defer { server.stop() }
        let pipelined = String(repeating: "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", count: 200)
        let readers = try (0..<4).map { _ in try RawConnection(port: server.server.port, receiveBufferBytes: 1024) }
        for reader in readers { reader.send(pipelined) }
        usleep(2_000_000)  // past ConnectionWatchdog.slowReaderSeconds
        let start = Date()
        let response = try server.post(TestPostbacks.body(0, seed: 2501))
        #expect(response.status == 200, "a genuine postback is served at the limit")
        #expect(Date().timeIntervalSince(start) < 1)
        // No connection of ours until the stalled replies are past the body timeout (3 s of being
        // queued): at the limit, each new connection (a metrics read too) sheds another slow reader
        // instead of letting it be cut off.
        usleep(4_000_000)
        // Every stalled reader is gone: one shed for the postback, the others cut off for not reading
        // their replies. Polled, because a watchdog pass on a loaded host may come later; a poll that
        // still finds the limit full sheds one more, so the two counts are checked together.
        var shed = 0.0
        var cutOff = 0.0
        let allGone = try eventually(20) {
            shed = try server.metric(#"postback_connections_refused_total{reason="slow-reader-shed"}"#) ?? 0
            cutOff = try server.metric(#"postback_connections_timed_out_total{phase="replying"}"#) ?? 0
            return shed >= 1 && cutOff >= 1 && shed + cutOff >= 4
        }
        #expect(allGone, "every stalled reader shed or cut off: \(shed) shed, \(cutOff) cut off")
        withExtendedLifetime(readers) {}
    }

    @Test func aConnectionThatSendsNothingIsClosedAfterTheHeaderTimeoutNotTheIdleTimeout() throws {
        let server = try TestServer {
            $0.headerTimeoutSeconds = 0.5
            $0.idleTimeoutSeconds = 30
        }
        defer { server.stop() }
        let silent = try RawConnection(port: server.server.port)
        let start = Date()
        #expect(silent.readUntilClosed().closed)
        #expect(Date().timeIntervalSince(start) < 5)
        #expect(try server.metric(#"postback_connections_timed_out_total{phase="new"}"#) == 1)
    }

    /// RFC 9112 §6.3 on raw sockets: each ambiguous framing is answered and the connection closed, so
    /// nothing after it runs as a second request.
    @Test(arguments: [
        ("Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
        ("Content-Length: 2\r\nContent-Length: 30\r\n\r\n{}", 400),
        ("Transfer-Encoding: gzip\r\n\r\nxyz", 501),
        ("Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", 501),
        // Empty list elements: libmicrohttpd would read the body until the connection closes.
        ("Transfer-Encoding: \r\n\r\n{}", 400),
        ("Transfer-Encoding: ,\r\n\r\n{}", 400),
        ("Transfer-Encoding: , chunked\r\n\r\n0\r\n\r\n", 400),
        ("Transfer-Encoding: chunked,\r\n\r\n0\r\n\r\n", 400),
        // obs-fold: libmicrohttpd drops a folded Content-Length ("{}" would run as the next request)
        // and ignores a folded Transfer-Encoding.
        ("Content-Length:\r\n 2\r\n\r\n{}", 400),
        ("Transfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n", 400),
        ("X-Note: a\r\n b\r\nContent-Length: 2\r\n\r\n{}", 400),
        // A bare CR or a NUL in a value.
        ("X-Note: a\rb\r\nContent-Length: 2\r\n\r\n{}", 400),
        ("X-Note: a\u{0}b\r\nContent-Length: 2\r\n\r\n{}", 400),
        ("Content-Length: 2\r\nX-Note: a\u{0}b\r\n\r\n{}", 400),
        // Header fields over 8 KiB (with a 7,900-byte line, which libmicrohttpd closed in silence).
        (
            "X-Note: \(String(repeating: "a", count: 7_900))\r\nX-More: \(String(repeating: "b", count: 400))\r\n"
                + "Content-Length: 2\r\n\r\n{}", 431
        ),
    ])
    func ambiguousFramingIsAnsweredAndClosed(headers: String, status: Int) throws {
        let server = try TestServer()
        defer { server.stop() }
        let connection = try RawConnection(port: server.server.port, receiveTimeoutSeconds: 3)
        let start = Date()
        connection.send(
            "POST /.well-known/skadnetwork/report-attribution/ HTTP/1.1\r\nHost: x\r\n" + headers
                + "GET /livez HTTP/1.1\r\nHost: x\r\n\r\n")
        let result = connection.readUntilClosed()
        let text = String(decoding: result.bytes, as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 \(status)"))
        #expect(text.components(separatedBy: "HTTP/1.1 ").count == 2, "one response only: \(text)")
        #expect(text.lowercased().contains("connection: close"))
        #expect(result.closed && Date().timeIntervalSince(start) < 2)
    }

    /// RFC 9112 §3.2: an HTTP/1.1 request without Host is refused and the connection closed.
    @Test func anHTTP11RequestWithoutHostIsRefused() throws {
        let server = try TestServer()
        defer { server.stop() }
        let connection = try RawConnection(port: server.server.port, receiveTimeoutSeconds: 3)
        connection.send("GET /livez HTTP/1.1\r\n\r\nGET /livez HTTP/1.1\r\nHost: x\r\n\r\n")
        let result = connection.readUntilClosed()
        let text = String(decoding: result.bytes, as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 400"))
        #expect(!text.contains("alive"), "the request after it is not run: \(text)")
        #expect(result.closed)
        // HTTP/1.0 needs none.
        let old = try RawConnection(port: server.server.port, receiveTimeoutSeconds: 3)
        old.send("GET /livez HTTP/1.0\r\n\r\n")
        #expect(String(decoding: old.readUntilClosed().bytes, as: UTF8.self).hasPrefix("HTTP/1.1 200"))
    }

    @Test func aTooLargeChunkedBodyIsAnsweredWithConnectionClose() throws {
        let server = try TestServer { $0.bodyLimitBytes = 1024 }
        defer { server.stop() }
        let connection = try RawConnection(port: server.server.port, receiveTimeoutSeconds: 3)
        connection.send(
            "POST /.well-known/skadnetwork/report-attribution/ HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n800\r\n"
                + String(repeating: "a", count: 0x800) + "\r\n0\r\n\r\nGET /livez HTTP/1.1\r\nHost: x\r\n\r\n")
        let result = connection.readUntilClosed()
        let text = String(decoding: result.bytes, as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 413"))
        #expect(text.lowercased().contains("connection: close"), "a pipelining client learns its next request was not read")
        #expect(result.closed)
    }
}
