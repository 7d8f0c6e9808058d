import Foundation
import PostbackServer
import PostbackStore
import PostbackTesting
import Postbacks
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 24 item 3: Apple documents retries after a 500 on the AdAttributionKit side ("If the
/// device receives a 500 status code, it attempts to send the postback up to nine times"), so every
/// "try again later" answer on a route that can carry AdAttributionKit is 500; the SKAdNetwork
/// route, where anything but 200 is retried, keeps 503 and 429.
@Suite struct RetryStatusTests {
    static func unknownKid(_ id: String) throws -> [UInt8] {
        var postback = AdAttributionKitTestPostback(postbackIdentifier: id)
        postback.keyID = "apple-cas-identifier/9"
        return try TestPostbacks.signer.sign(postback)
    }

    @Test func aFullQuarantineAnswers500OnRoutesThatCarryAdAttributionKit() throws {
        let server = try TestServer {
            $0.rejectedBytesPerDay = 8 << 10
            $0.adNetworkPath = "/network/postbacks"
        }
        defer { server.stop() }
        for (url, label) in [(server.appAttributionURL, "aak"), (server.base + "/network/postbacks", "network")] {
            var statuses: [Int: Int] = [:]
            for index in 0..<60 {
                statuses[try server.post(try Self.unknownKid("retry-\(label)-\(index)"), to: url).status, default: 0] += 1
            }
            if label == "aak" { #expect(statuses[200, default: 0] > 0, "the first ones are quarantined: \(statuses)") }
            #expect(statuses[500, default: 0] > 0, "\(label): the rest are 500, which the device retries: \(statuses)")
            #expect(statuses[503] == nil && statuses[429] == nil, "\(label): \(statuses)")
        }
        // The SKAdNetwork route keeps its 503 (a device retries anything but 200 there).
        let skan = try TestPostbacks.signer.sign(QuarantineTests.skan4(version: "5.0", transactionID: "retry-skan"))
        #expect(try server.post(skan).status == 503)
    }

    @Test func perClientLimitAnswers500OnTheAdAttributionKitRoute() throws {
        let server = try TestServer {
            $0.trustedProxies = [CIDR("127.0.0.1")!]
            $0.perIPConnectionLimit = 1
        }
        defer { server.stop() }
        let slow = try RawConnection(port: server.server.port)
        slow.send(
            "POST /.well-known/appattribution/report-attribution/ HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 203.0.113.9\r\n"
                + "Content-Length: 400\r\n\r\n{\"jws-string\"")
        usleep(200_000)
        let body = try TestPostbacks.signer.sign(AdAttributionKitTestPostback(postbackIdentifier: "retry-limit-1"))
        let connection = try RawConnection(port: server.server.port)
        connection.send(
            "POST /.well-known/appattribution/report-attribution/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                + "X-Forwarded-For: 203.0.113.9\r\nContent-Length: \(body.count)\r\n\r\n")
        connection.send(body)
        let refused = String(decoding: connection.readUntilClosed().bytes, as: UTF8.self)
        #expect(refused.hasPrefix("HTTP/1.1 500"), "\(refused.prefix(200))")
        #expect(refused.lowercased().contains("retry-after: 1"))
        #expect(try server.metric("postback_client_limited_total") == 1)
        shutdown(slow.fd, Int32(SHUT_RDWR))
    }
}
