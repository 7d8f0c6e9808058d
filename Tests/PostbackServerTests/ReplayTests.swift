import Basics
import Foundation
import PostbackCLI
import PostbackClient
import PostbackServer
import PostbackStore
import Postbacks
import TestSupport
import Testing

/// Replays of Apple's own signed postbacks with other unsigned values (conversion values, country),
/// through the real server: stored once, with whichever copy arrived first, in the spool and in
/// the aggregate; also after a restart and from many connections at once.
@Suite struct ReplayTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    static func apple(_ name: String) throws -> [UInt8] {
        Array(try Data(contentsOf: root.appendingPathComponent("Tests/Vectors/apple/\(name)")))
    }

    /// `body` with one unsigned member's text replaced (the signature stays Apple's).
    static func replay(_ body: [UInt8], _ from: String, _ to: String) -> [UInt8] {
        let text = String(decoding: body, as: UTF8.self)
        precondition(text.contains(from), "\(from) is not in the sample")
        return Array(text.replacingOccurrences(of: from, with: to).utf8)
    }

    /// The rows of a day's campaign_daily table as column → value.
    static func campaignDaily(_ data: String) throws -> [[String: String]] {
        let day = UTCTimestamp.now().day
        let text = try String(contentsOfFile: "\(data)/agg/postback_detail_daily/dt=\(day)/part-00000.csv", encoding: .utf8)
        let lines = text.split(separator: "\n").map {
            $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        }
        guard let header = lines.first else { return [] }
        return lines.dropFirst().map { Dictionary(uniqueKeysWithValues: zip(header, $0)) }
    }

    static func aggregate(_ data: String) -> PostbackCLI.ExitStatus {
        let out = MemorySink()
        let err = MemorySink()
        return PostbackCommand.run(
            [
                "aggregate", "--data", data, "--schemas", root.appendingPathComponent("Samples/schemas").path,
                "--date", UTCTimestamp.now().day.description, "--allow-open-day",
                // A day of development postbacks only is a failed run without it (exit 1).
                "--allow-dev",
            ],  // today, still being received
            io: CommandIO(standardOutput: out, standardError: err))
    }

    @Test func genuineSKAdNetworkPostbackReplayedWithOtherValuesIsStoredOnceWithTheFirst() throws {
        let genuine = try Self.apple("skan-4.0_apple-doc_web-ad-tier-high.json")
        let replays = [
            Self.replay(genuine, #""conversion-value": 63"#, #""conversion-value": 0"#),
            Self.replay(genuine, #""conversion-value": 63"#, #""conversion-value": 20"#),
            Self.replay(genuine, #""conversion-value": 63,"#, #""coarse-conversion-value": "low","#),
            Self.replay(genuine, #""conversion-value": 63,"#, #""conversion-value": 5, "country-code": "FR","#),
        ]
        for body in replays { #expect(PostbackVerifier().verify(body: body).isVerified, "the altered fields are not signed") }

        let server = try TestServer()
        let data = server.dataDirectory
        let first = try server.post(genuine)
        #expect(first.status == 200 && first.text.contains(#""status":"stored""#))
        for body in replays {
            let answer = try server.post(body)
            #expect(answer.status == 200 && answer.text.contains(#""status":"duplicate""#), "\(answer.text)")
        }
        // Many devices (or an attacker) at once, every variant.
        let statuses = postConcurrently(
            Array(repeating: replays, count: 6).flatMap { $0 }, to: server.skadnetworkURL, workers: 12)
        #expect(statuses.allSatisfy { $0 == 200 }, "\(statuses)")
        server.stop()

        // After a restart the index still holds the key.
        let restarted = try TestServer(dataDirectory: data)
        #expect(try restarted.post(replays[0]).text.contains(#""status":"duplicate""#))
        let records = try restarted.records(.postbacks)
        restarted.stop()
        #expect(records.count == 1)
        #expect(records.first?.body == genuine, "the stored body is the first one, byte for byte")
        #expect(records.first?.attribution?.fineValue == 63)
        #expect(records.first?.attribution?.countryCode == nil)
        #expect(records.first?.environment == .production)

        #expect(Self.aggregate(data) == .success)
        let rows = try Self.campaignDaily(data).filter { $0["app_id"] == "525463029" }
        #expect(rows.count == 1, "\(rows)")
        #expect(rows.first?["fine_cv"] == "63")
        #expect(rows.first?["decoded_label"] == "whale")
        #expect(rows.first?["postbacks"] == "1")
        #expect(rows.first?["duplicates_dropped"] == "0", "the replays never reached the spool")
        #expect(rows.first?["country_code"] == "")
    }

    @Test func theFirstCopyWinsEvenWhenItIsTheAlteredOne() throws {
        let genuine = try Self.apple("skan-4.0_apple-doc_web-ad-tier-low.json")
        let altered = Self.replay(genuine, #""coarse-conversion-value": "high""#, #""coarse-conversion-value": "low""#)
        let server = try InProcessReceiver()
        defer { server.stop() }
        #expect(try server.post(altered).status == 200)
        #expect(try server.post(genuine).text.contains(#""status":"duplicate""#))
        let records = try server.records(.postbacks)
        #expect(records.count == 1)
        // Nothing in a postback says which copy is Apple's: the receiver keeps the first, as documented.
        #expect(records.first?.attribution?.coarseValue == .low)
        #expect(Self.aggregate(server.dataDirectory) == .success)
        let rows = try Self.campaignDaily(server.dataDirectory).filter { $0["app_id"] == "525463029" }
        #expect(rows.count == 1 && rows.first?["coarse_cv"] == "low" && rows.first?["postbacks"] == "1", "\(rows)")
    }

    @Test func adAttributionKitReplayWithOtherOuterValuesIsStoredOnce() throws {
        let genuine = try Self.apple("aak_apple-doc_developer-settings_apple-development-identifier-1.json")
        let replays = [
            Self.replay(genuine, #""conversion-value": 24"#, #""conversion-value": 63"#),
            Self.replay(genuine, #""country-code": "US""#, #""country-code": "DE""#),
            Self.replay(genuine, #""ad-interaction-type": "click""#, #""ad-interaction-type": "view""#),
        ]
        let server = try InProcessReceiver()
        defer { server.stop() }
        #expect(try server.post(genuine, to: server.appAttributionURL).status == 200)
        for body in replays {
            let answer = try server.post(body, to: server.appAttributionURL)
            #expect(answer.status == 200 && answer.text.contains(#""status":"duplicate""#), "\(answer.text)")
        }
        let records = try server.records(.postbacks)
        #expect(records.count == 1)
        #expect(records.first?.body == genuine)
        #expect(records.first?.attribution?.fineValue == 24)
        #expect(records.first?.attribution?.countryCode == "US")
        #expect(records.first?.attribution?.interaction == .click)
        #expect(Self.aggregate(server.dataDirectory) == .success)
        let rows = try Self.campaignDaily(server.dataDirectory)
        #expect(
            rows.count == 1 && rows.first?["fine_cv"] == "24" && rows.first?["development_postbacks"] == "1"
                && rows.first?["country_code"] == "US" && rows.first?["postbacks"] == "0",
            "development: never a headline postback; \(rows)")
    }
}
