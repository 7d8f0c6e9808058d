import Foundation
import Postbacks
import Testing

@testable import PostbackCLI

/// `postback generate` shaped like one advertiser's traffic (issue 14): app, schema values, networks,
/// source identifiers, null share and windows, all verifying with the test key.
@Suite struct GenerateTrafficTests {
    let command = VerifyCommandTests()
    static let schema = VerifyCommandTests.root.appendingPathComponent("Samples/schemas/525463029/2025-06-01.json").path

    /// The postbacks' fields: SKAdNetwork bodies as they are, AdAttributionKit's JWS payload decoded
    /// with the body's unsigned fields beside it.
    func fields(_ text: String) throws -> [[String: Any]] {
        try text.split(separator: "\n").map { line in
            var object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            if let jws = object["jws-string"] as? String {
                var payload = String(jws.split(separator: ".")[1]).replacingOccurrences(of: "-", with: "+").replacingOccurrences(
                    of: "_", with: "/")
                while payload.count % 4 != 0 { payload += "=" }
                let decoded = try #require(Data(base64Encoded: payload))
                let claims = try #require(try JSONSerialization.jsonObject(with: decoded) as? [String: Any])
                object.merge(claims) { body, _ in body }
            }
            return object
        }
    }

    @Test func aSchemaShapesTheTrafficAndEveryPostbackVerifies() throws {
        let key = NSTemporaryDirectory() + "shape-\(UUID().uuidString).pem"
        let generated = command.run([
            "generate", "--key", key, "--create-key", "--count", "600", "--kinds", "4.0,aak", "--schema", Self.schema,
            "--source-identifier", "1234", "--source-identifier", "5678", "--null-share", "0", "--windows", "0",
            "--reengagement-share", "0",
        ])
        #expect(generated.status == .success, "\(generated.stderr.text)")
        let postbacks = try fields(generated.stdout.text)
        #expect(postbacks.count == 600)
        var sources: [String: Int] = [:]
        for postback in postbacks {
            let app = (postback["app-id"] ?? postback["advertised-item-identifier"]) as? Int
            #expect(app == 525_463_029)
            let network = (postback["ad-network-id"] ?? postback["ad-network-identifier"]) as? String
            #expect(network == "example123.skadnetwork", "the schema's source map names the network")
            let source = try #require(postback["source-identifier"] as? String)
            #expect("1234".hasSuffix(source) || "5678".hasSuffix(source), "\(source)")
            sources["1234".hasSuffix(source) ? "1234" : "5678", default: 0] += 1
            #expect(postback["postback-sequence-index"] as? Int == 0)
            #expect(postback["conversion-type"] as? String != "re-engagement")
            if postback["did-win"] as? Bool != false {
                #expect(postback["conversion-value"] != nil || postback["coarse-conversion-value"] != nil, "no null values")
            }
        }
        #expect(
            2 * sources["1234", default: 0] > 3 * sources["5678", default: 0],
            "the first source identifier is drawn most: \(sources)")

        let file = try command.temporaryFile(Array(generated.stdout.text.utf8))
        let verified = command.run(["verify", "--allow-dev", "--trust-key", key, file])
        #expect(verified.status == .success, "\(verified.stdout.text.suffix(300))")
    }

    @Test func fineValuesComeFromTheSchemasTable() throws {
        let key = NSTemporaryDirectory() + "shape-\(UUID().uuidString).pem"
        // A schema that maps only 7 and 42.
        let schema = NSTemporaryDirectory() + "two-values-\(UUID().uuidString).json"
        try Data(
            """
            {"schema_id": "two", "app_id": 4242, "effective_from": "2026-01-01", "currency": "EUR",
             "windows": {"0": {"fine": {"entries": [{"value": 7, "label": "seven"}, {"value": 42, "label": "answer"}]}}}}
            """.utf8
        ).write(to: URL(fileURLWithPath: schema))
        let generated = command.run([
            "generate", "--key", key, "--create-key", "--count", "300", "--kinds", "3.0,4.0,aak", "--schema", schema,
        ])
        #expect(generated.status == .success, "\(generated.stderr.text)")
        let values = Set(try fields(generated.stdout.text).compactMap { $0["conversion-value"] as? Int })
        #expect(values == [7, 42])
    }

    @Test func badShapingOptionsAreUsageErrors() {
        let key = NSTemporaryDirectory() + "shape-\(UUID().uuidString).pem"
        let cases: [([String], String)] = [
            (["--app", "abc"], "--app must be a numeric app id, got 'abc'"),
            (["--source-identifier", "12"], "--source-identifier must be four digits"),
            (["--null-share", "1.5"], "--null-share must be a number from 0 to 1, got '1.5'"),
            (["--windows", "0,3"], "--windows must list postback windows 0, 1 or 2"),
            (["--schema", "/nonexistent/schema.json"], "--schema /nonexistent/schema.json is not a valid conversion schema"),
        ]
        for (words, message) in cases {
            let result = command.run(["generate", "--key", key, "--create-key", "--count", "1"] + words)
            #expect(result.status == .usageOrIOError, "\(words)")
            #expect(result.stderr.text.contains(message), "\(words): \(result.stderr.text)")
        }
    }
}
