import Foundation
import PostbackServer
import PostbackStore
import PostbackTesting
import Postbacks
import TestSupport
import Testing

/// Issue 24 item 2: a JWS claim or header member Apple may add tomorrow never removes a genuine
/// postback from the numbers; an unknown value of a field that decides grouping still quarantines.
@Suite struct UnknownMemberTests {
    static func signed(_ id: String, edit: (inout AdAttributionKitTestPostback) -> Void = { _ in }) throws -> [UInt8] {
        var postback = AdAttributionKitTestPostback(postbackIdentifier: id)
        edit(&postback)
        return try TestPostbacks.signer.sign(postback)
    }

    static func signed(_ id: String, header: String) throws -> [UInt8] {
        try TestPostbacks.signer.sign(AdAttributionKitTestPostback(postbackIdentifier: id), headerJSON: Array(header.utf8))
    }

    @Test func unknownClaimAndHeaderMemberAreCountedFlaggedAndMeasured() throws {
        let server = try InProcessReceiver()
        defer { server.stop() }
        let claim = try Self.signed("um-claim-1") { $0.extraClaims = [("store-region", #""eu""#)] }
        let claimAgain = try Self.signed("um-claim-2") { $0.extraClaims = [("store-region", #""us""#)] }
        let header = try Self.signed("um-header-1", header: #"{"kid":"apple-cas-identifier/0","alg":"ES256","zip":"x"}"#)
        for body in [claim, claimAgain, header] {
            let reply = try server.post(body, to: server.appAttributionURL)
            #expect(reply.status == 200, "\(reply.text)")
            #expect(reply.text.contains(#""status":"stored""#), "\(reply.text)")
        }
        let stored = try server.records(.postbacks)
        try #require(stored.count == 3, "verified and counted")
        #expect(try server.records(.unverifiable).isEmpty, "nothing quarantined")
        #expect(stored[0].flags.map(\.summary) == ["jws-claim store-region unrecognized (unknown claim; kept as signed)"])
        #expect(stored[2].flags.map(\.summary) == ["jws-header zip unrecognized (unknown JWS header member, ignored)"])
        #expect(stored.allSatisfy { $0.attribution != nil })
        #expect(try server.metric(#"postback_unrecognized_members_total{field="jws-claim",member="store-region"}"#) == 2)
        #expect(try server.metric(#"postback_unrecognized_members_total{field="jws-header",member="zip"}"#) == 1)
        let logged = server.logs.all.filter { $0.contains("this release does not know") }
        #expect(logged.count == 2, "once per member per process: \(logged)")
    }

    @Test func unknownMemberNamesShareOneLabelPastTheCap() throws {
        let server = try InProcessReceiver()
        defer { server.stop() }
        let names = (0..<(16 + 4)).map { "new-claim-\($0)" }
        for (index, name) in names.enumerated() {
            let body = try Self.signed("um-cap-\(index)") { $0.extraClaims = [(name, "1")] }
            #expect(try server.post(body, to: server.appAttributionURL).status == 200)
        }
        let page = try server.metricsPage()
        let series = page.split(separator: "\n").filter { $0.hasPrefix("postback_unrecognized_members_total{") }
        #expect(series.count == 16 + 1, "\(series)")
        #expect(try server.metric(#"postback_unrecognized_members_total{field="jws-claim",member="other"}"#) == 4)
        #expect(try server.records(.postbacks).count == names.count)
    }

    @Test func refusedHeaderMembersAndAlgorithmsStayRefused() throws {
        let server = try InProcessReceiver()
        defer { server.stop() }
        let headers = [
            #"{"kid":"apple-cas-identifier/0","alg":"ES256","crit":["zip"],"zip":"x"}"#,
            #"{"kid":"apple-cas-identifier/0","alg":"ES256","jku":"https://evil.example/k"}"#,
            #"{"kid":"apple-cas-identifier/0","alg":"ES256","jwk":{"kty":"EC"}}"#,
            #"{"kid":"apple-cas-identifier/0","alg":"ES256","x5u":"https://evil.example/c"}"#,
            #"{"kid":"apple-cas-identifier/0","alg":"ES256","x5c":["MII"]}"#,
            #"{"kid":"apple-cas-identifier/0","alg":"ES384"}"#,
        ]
        for (index, header) in headers.enumerated() {
            let reply = try server.post(try Self.signed("um-refused-\(index)", header: header), to: server.appAttributionURL)
            #expect(reply.status == 400, "\(header): \(reply.text)")
        }
        #expect(try server.records(.postbacks).isEmpty)
        #expect(try server.records(.rejected).count == headers.count)
    }

    @Test func unknownValuesOfGroupingFieldsStillQuarantine() throws {
        let server = try InProcessReceiver()
        defer { server.stop() }
        let edits: [(inout AdAttributionKitTestPostback) -> Void] = [
            { $0.conversionType = "install" },
            { $0.postbackSequenceIndex = 3 },
            { $0.sourceIdentifier = "12345" },
        ]
        for (index, edit) in edits.enumerated() {
            let reply = try server.post(
                try Self.signed("um-grouping-\(index)") {
                    edit(&$0)
                    $0.extraClaims = [("store-region", #""eu""#)]
                }, to: server.appAttributionURL)
            #expect(reply.text.contains(#""quarantine":"unrecognized-signed-value""#), "\(reply.text)")
        }
        #expect(try server.records(.unverifiable).count == edits.count)
        #expect(try server.records(.postbacks).isEmpty)
    }
}
