import Dispatch
import Foundation
import PostbackClient
import PostbackServer
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

    @Test func connectionsBeyondTheLimitWaitForAFreeSlot() throws {
        let server = try TestServer { $0.connectionLimit = 4 }
        defer { server.stop() }
        var held = try (0..<4).map { _ in try RawConnection(port: server.server.port) }
        // An answered request proves each of the four was accepted; they then stay open (keep-alive).
        for connection in held {
            connection.send("GET /livez HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(connection.readSome().hasPrefix("HTTP/1.1 200"))
        }
        let extra = try RawConnection(port: server.server.port, receiveTimeoutSeconds: 1)
        extra.send("GET /livez HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let waiting = extra.readUntilClosed()
        #expect(!waiting.closed && waiting.bytes.isEmpty, "over the limit: not accepted (backpressure), not answered")
        held.removeFirst()
        extra.setReceiveTimeout(seconds: 10)
        let answered = extra.readUntilClosed()
        #expect(String(decoding: answered.bytes, as: UTF8.self).hasPrefix("HTTP/1.1 200"), "served once a slot is free")
        _ = held
    }
}
