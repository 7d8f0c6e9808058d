import Basics
import Foundation
import PostbackCrypto
import PostbackServer
import PostbackStore
import PostbackTesting
import Postbacks
import TestSupport
import Testing

/// What cannot be checked or counted yet is answered 200 and kept apart; flagged postbacks are stored
/// with their flags; neither changes what the signature decides.
@Suite struct QuarantineTests {
    static func skan4(version: String = "4.0", transactionID: String) -> SKAdNetworkTestPostback {
        .v4(transactionID: transactionID, version: version)
    }

    @Test func unknownVersionIsQuarantinedNotRefused() throws {
        let server = try InProcessReceiver()
        defer { server.stop() }
        let body = try TestPostbacks.signer.sign(Self.skan4(version: "5.0", transactionID: "q-unknown-version-1"))
        let reply = try server.post(body)
        #expect(reply.status == 200, "\(reply.text)")
        #expect(reply.text.contains(#""status":"quarantined""#))
        #expect(reply.text.contains(#""quarantine":"unknown-version""#))
        let records = try server.records(.unverifiable)
        #expect(records.count == 1)
        #expect(records.first?.body == body)
        #expect(records.first?.status == .unsupportedVersion)
        #expect(records.first?.quarantine == .unknownVersion)
        #expect(records.first?.reason?.contains("5.0") == true)
        #expect(records.first?.attribution == nil)
        #expect(try server.records(.postbacks).isEmpty)
        #expect(try server.records(.rejected).isEmpty)
        #expect(server.logs.contains("postback quarantined"))
        let metrics = try server.metricsPage()
        #expect(metrics.contains(#"postback_quarantined_total{reason="unknown-version"} 1"#))
        #expect(metrics.contains(#"postback_spool_records_total{spool="unverifiable"} 1"#))
    }

    /// Issue 24 item 4: the same unknown-version body sent twice is stored once (before: twice), also
    /// after a restart; another body is stored too, whatever transaction-id it claims.
    @Test func aRetriedQuarantinedBodyIsStoredOnce() throws {
        let directory = TestServer.temporaryDirectory()
        var server = try InProcessReceiver(dataDirectory: directory)
        let body = try TestPostbacks.signer.sign(Self.skan4(version: "5.0", transactionID: "q-retry-1"))
        #expect(try server.post(body).text.contains(#""status":"quarantined""#))
        let again = try server.post(body)
        #expect(again.status == 200)
        #expect(again.text.contains(#""status":"duplicate""#), "\(again.text)")
        // Another body claiming the same transaction-id: nothing vouches for the claim, so it is kept.
        var other = Self.skan4(version: "5.0", transactionID: "q-retry-1")
        other.conversionValue = 9
        #expect(try server.post(try TestPostbacks.signer.sign(other)).text.contains(#""status":"quarantined""#))
        #expect(try server.records(.unverifiable).count == 2)
        #expect(try server.metric(#"postback_quarantined_total{reason="unknown-version"}"#) == 2)
        server.stop()
        server = try InProcessReceiver(dataDirectory: directory)
        defer { server.stop() }
        #expect(try server.post(body).text.contains(#""status":"duplicate""#), "the quarantine's keys are recovered")
        #expect(try server.records(.unverifiable).count == 2)
    }

    /// The quarantine's index keeps today's and yesterday's keys only (anyone can send bodies to
    /// quarantine), and a restart reads back only those days: a retry of a body quarantined the day
    /// before yesterday is stored again (before: every day's keys were read back and kept for good).
    @Test func quarantineKeysOfTheDayBeforeYesterdayAreNotReadBack() throws {
        let directory = TestServer.temporaryDirectory()
        let layout = StoreLayout(root: directory)
        let today = UTCTimestamp.now().day
        let verifier = PostbackVerifier()
        var bodies: [[UInt8]] = []
        for back in 1...2 {
            let day = today.adding(days: -back)
            let body = try TestPostbacks.signer.sign(Self.skan4(version: "5.0", transactionID: "q-expiry-\(back)"))
            let result = verifier.verify(body: body)
            let record = SpoolRecord(
                receivedAt: UTCTimestamp(microsecondsSinceEpoch: Int64(day.daysSinceEpoch) * 86_400_000_000 + 1_000_000),
                writer: "rx0", route: "skadnetwork", result: result, body: body, reason: "unknown version")
            try DurableFile.makeDirectories(layout.partition(.unverifiable, day: day))
            try DurableFile.write(
                record.encoded(),
                to: layout.partition(.unverifiable, day: day) + "/" + StoreLayout.segmentName(writer: "rx0", sequence: 1))
            bodies.append(body)
        }
        let server = try InProcessReceiver(dataDirectory: directory)
        defer { server.stop() }
        let yesterday = try server.post(bodies[0])
        #expect(yesterday.text.contains(#""status":"duplicate""#), "\(yesterday.text)")
        let dayBefore = try server.post(bodies[1])
        #expect(dayBefore.text.contains(#""status":"quarantined""#), "\(dayBefore.text)")
        #expect(try server.records(.unverifiable).count == 3, "the two written before, and the one stored again")
    }

    /// A verified postback quarantined for a value we cannot place is keyed by its signed dedup key: a
    /// replay with other unsigned values is a duplicate. One under an unknown kid is keyed by its bytes,
    /// so a forgery posted first under the same postback-identifier cannot shadow the genuine copy.
    @Test func quarantineKeysAreSignedKeysOrBytes() throws {
        let server = try InProcessReceiver()
        defer { server.stop() }
        var postback = AdAttributionKitTestPostback(postbackIdentifier: "q-key-1")
        postback.conversionType = "install"
        postback.conversionValue = 1
        #expect(
            try server.post(try TestPostbacks.signer.sign(postback), to: server.appAttributionURL).text.contains("quarantined"))
        postback.conversionValue = 2
        #expect(try server.post(try TestPostbacks.signer.sign(postback), to: server.appAttributionURL).text.contains("duplicate"))
        var newKid = AdAttributionKitTestPostback(postbackIdentifier: "q-key-2")
        newKid.keyID = "apple-cas-identifier/7"
        let forger = TestPostbackSigner(key: try ECDSAPrivateKey(generatingOn: .p256))
        #expect(try server.post(try forger.sign(newKid), to: server.appAttributionURL).text.contains("quarantined"))
        let genuine = try server.post(try TestPostbacks.signer.sign(newKid), to: server.appAttributionURL)
        #expect(genuine.text.contains(#""status":"quarantined""#), "\(genuine.text)")
        #expect(try server.records(.unverifiable).count == 3)
    }

    @Test func unknownKeyIDIsQuarantinedButADevelopmentKeyNotAllowedIsRefused() throws {
        let server = try InProcessReceiver {
            $0.allowsDevelopment = false
            $0.testKeys = []
        }
        defer { server.stop() }
        var postback = AdAttributionKitTestPostback(postbackIdentifier: "q-unknown-kid-1")
        postback.keyID = "apple-cas-identifier/1"
        let unknown = try TestPostbacks.signer.sign(postback)
        let reply = try server.post(unknown, to: server.appAttributionURL)
        #expect(reply.status == 200, "\(reply.text)")
        #expect(reply.text.contains(#""quarantine":"unknown-kid""#))
        postback.keyID = "apple-development-identifier/0"
        #expect(try server.post(try TestPostbacks.signer.sign(postback), to: server.appAttributionURL).status == 400)
        #expect(try server.records(.unverifiable).map(\.quarantine) == [.unknownKeyID])
        #expect(try server.records(.rejected).count == 1)
    }

    @Test func signedValueWeDoNotKnowIsQuarantinedWithItsFlag() throws {
        let server = try InProcessReceiver()
        defer { server.stop() }
        var postback = AdAttributionKitTestPostback(postbackIdentifier: "q-new-conversion-type-1")
        postback.conversionType = "install"
        let reply = try server.post(try TestPostbacks.signer.sign(postback), to: server.appAttributionURL)
        #expect(reply.status == 200, "\(reply.text)")
        #expect(reply.text.contains(#""quarantine":"unrecognized-signed-value""#))
        let record = try #require(try server.records(.unverifiable).first)
        #expect(record.status == .verified)
        #expect(
            record.flags.map(\.summary) == [#"conversion-type "install" unrecognized (unknown conversion type; kept as signed)"#])
        #expect(record.attribution == nil, "an unknown value is never folded into a known one")
        #expect(try server.records(.postbacks).isEmpty)
    }

    @Test func flaggedPostbackIsStoredWithItsFlagsAndCounted() throws {
        let server = try InProcessReceiver()
        defer { server.stop() }
        var postback = Self.skan4(transactionID: "q-flagged-1")
        postback.coarseConversionValue = "HIGH"
        postback.countryCode = "USA"
        let reply = try server.post(try TestPostbacks.signer.sign(postback))
        #expect(reply.status == 200, "\(reply.text)")
        #expect(reply.text.contains(#""status":"stored""#))
        let record = try #require(try server.records(.postbacks).first)
        #expect(record.format == SpoolRecord.currentFormat)
        #expect(
            record.flags.map { "\($0.field.rawValue) \($0.action.rawValue)" } == [
                "coarse-conversion-value normalized", "country-code dropped",
            ])
        #expect(record.attribution?.coarseValue == .high)
        #expect(record.attribution?.countryCode == nil)
        let metrics = try server.metricsPage()
        #expect(metrics.contains(#"postback_flags_total{field="coarse-conversion-value",action="normalized"} 1"#))
        #expect(metrics.contains(#"postback_flags_total{field="country-code",action="dropped"} 1"#))
        #expect(!metrics.contains("USA"), "raw values never reach metric labels")
    }
}

/// Anyone can claim an unknown version (there is no key to check it with), so the quarantine must
/// not be a way to fill the disk: it has a daily budget of its own, and past it the postback gets
/// 503 with Retry-After (not stored, so not acknowledged: a genuine device retries later).
@Suite struct QuarantineBudgetTests {
    @Test func aFloodOfUnknownVersionsStaysWithinTheQuarantineBudget() throws {
        let server = try InProcessReceiver { $0.rejectedBytesPerDay = 16 << 10 }
        defer { server.stop() }
        var statuses: [Int: Int] = [:]
        var retryAfter = false
        for index in 0..<120 {
            let body = try TestPostbacks.signer.sign(QuarantineTests.skan4(version: "5.0", transactionID: "flood-\(index)"))
            let reply = try server.post(body)
            statuses[reply.status, default: 0] += 1
            if reply.status == 503 { retryAfter = retryAfter || reply.text.contains("retry later") }
        }
        #expect(statuses[200, default: 0] > 0, "the first ones are quarantined: \(statuses)")
        #expect(statuses[503, default: 0] > 0, "the rest are turned away, not stored: \(statuses)")
        #expect(statuses[200, default: 0] + statuses[503, default: 0] == 120)
        #expect(retryAfter)
        let bytes = try server.segments(.unverifiable).reduce(0) {
            $0 + ((try FileManager.default.attributesOfItem(atPath: $1.path)[.size] as? Int) ?? 0)
        }
        #expect(bytes <= 16 << 10, "\(bytes) bytes quarantined")
        #expect(try server.records(.unverifiable).count == statuses[200, default: 0], "every 200 is on disk")
        #expect(
            try server.metric(#"postback_quarantine_not_stored_total{reason="daily-budget"}"#)
                == Double(statuses[503, default: 0]))
        // Verified postbacks are not affected.
        #expect(try server.post(TestPostbacks.body(0, seed: 1401)).status == 200)
        #expect(try server.records(.postbacks).count == 1)
    }
}
