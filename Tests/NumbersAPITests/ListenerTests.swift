import Foundation
import NumbersAPI
import PostbackServer
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The API's listener against slow clients (the receiver's watchdog: absolute deadlines per phase),
/// and whose address its audit line names. CI cost: about 6 s (one small store, three servers).
@Suite struct ListenerTests {
    @Test func slowHeadersAndIdleConnectionsAreCutOffAndOthersAnswered() throws {
        let fixture = try APIFixture(days: 1, perDay: 20)
        try TokenFile.write([], to: fixture.tokensPath)
        let (server, api) = try fixture.start { settings in
            settings.timeouts.headerSeconds = 0.5
            settings.timeouts.idleSeconds = 0.5
        }
        defer { server.quiesce() }
        let slow = try RawConnection(port: server.port)
        let start = Date()
        slow.send("GET /v1/tables HTTP/1.1\r\nHost: x\r\n")
        // A header byte every 0.2 s: libmicrohttpd's inactivity timeout alone would never fire.
        for _ in 0..<4 {
            slow.send("X")
            usleep(200_000)
        }
        #expect(slow.readUntilClosed().closed)
        #expect(Date().timeIntervalSince(start) < 5)
        #expect(eventually { api.watchdog.timedOut["headers"] == 1 })
        // Meanwhile another client is answered, and then left idle is closed too.
        let kept = try RawConnection(port: server.port)
        kept.send("GET /livez HTTP/1.1\r\nHost: x\r\n\r\n")
        let answer = kept.readUntilClosed()
        #expect(answer.closed)
        #expect(String(decoding: answer.bytes, as: UTF8.self).hasPrefix("HTTP/1.1 200"))
        #expect(eventually { api.watchdog.timedOut["idle"] == 1 })
    }

    @Test func aChunkedBodyTrickledIsCutOffAfterTheBodyTimeout() throws {
        let fixture = try APIFixture(days: 1, perDay: 20)
        try TokenFile.write([], to: fixture.tokensPath)
        let (server, api) = try fixture.start { $0.timeouts.bodySeconds = 0.5 }
        defer { server.quiesce() }
        let slow = try RawConnection(port: server.port)
        let start = Date()
        slow.send("GET /livez HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n{\r\n")
        for _ in 0..<4 {
            usleep(200_000)
            slow.send("1\r\n \r\n")
        }
        #expect(slow.readUntilClosed().closed)
        #expect(Date().timeIntervalSince(start) < 5)
        #expect(eventually { api.watchdog.timedOut["body"] == 1 })
    }

    /// `X-Forwarded-For` names the audit line's client only when the peer is a trusted proxy.
    @Test func theAuditLinesClientComesFromTrustedProxiesOnly() throws {
        let fixture = try APIFixture(days: 1, perDay: 20)
        try TokenFile.write([], to: fixture.tokensPath)
        for trusted in [false, true] {
            fixture.audit.withLock { $0.removeAll() }
            let (server, _) = try fixture.start { settings in
                if trusted { settings.trustedProxies = [CIDR("127.0.0.1/32")!] }
            }
            defer { server.quiesce() }
            #expect(
                try get(port: server.port, "/livez", token: nil, curlOptions: ["-H", "X-Forwarded-For: 203.0.113.9"]).status
                    == 200)
            let lines = fixture.audit.withLock { $0 }
            try #require(lines.count == 1)
            #expect(lines[0].contains("\"client\":\"\(trusted ? "203.0.113.9" : "127.0.0.1")\""), "\(lines[0])")
        }
    }
}
