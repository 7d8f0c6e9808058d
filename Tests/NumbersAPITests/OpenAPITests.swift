import Basics
import Foundation
import NumbersAPI
import TestSupport
import Testing

/// The OpenAPI document is the API's one description: it validates (openapi-spec-validator), it names
/// every route and table the server answers, and schemathesis's generated requests against the real
/// server on loopback get no 5xx and only answers the document allows (status, content type, headers,
/// body schema; requests outside the schema rejected; no answer without a token).
///
/// Size: `POSTBACK_API_SCHEMATHESIS_EXAMPLES` examples per operation (default 25: about 20 s of CI,
/// with the validator's 2 s); e.g. `POSTBACK_API_SCHEMATHESIS_EXAMPLES=500 swift test --filter OpenAPITests`.
@Suite(.serialized) struct OpenAPITests {
    static let bin = Fixtures.root.appendingPathComponent(".build/venv/bin")

    /// Runs a tool of the venv in `directory` (schemathesis writes its cache, `.schemathesis/`, in the
    /// directory it runs in: a test's temporary directory, never the checkout).
    static func tool(_ name: String, _ arguments: [String], directory: String? = nil) throws -> (status: Int32, output: String) {
        try runTool(bin.appendingPathComponent(name).path, arguments, directory: directory)
    }

    @Test func theServedDocumentValidatesAndNamesEveryRouteAndTable() throws {
        let fixture = try APIFixture(days: 2, perDay: 30)
        _ = try fixture.writeTokens(count: 1, seed: 1)
        let (server, _) = try fixture.start()
        defer { server.quiesce() }
        let answer = try get(port: server.port, OpenAPIDocument.path, token: nil)
        try #require(answer.status == 200)
        let path = fixture.store.path + "/openapi.json"
        try answer.body.write(toFile: path, atomically: true, encoding: .utf8)
        try #require(
            FileManager.default.isExecutableFile(atPath: Self.bin.appendingPathComponent("openapi-spec-validator").path),
            "no openapi-spec-validator in .build/venv: run scripts/setup --test")
        let validated = try Self.tool("openapi-spec-validator", [path])
        #expect(validated.status == 0, "\(validated.output)")
        // A broken document is refused by the same validator (the check can fail).
        try answer.body.replacingOccurrences(of: "\"type\": \"http\", \"scheme\"", with: "\"type\": \"cookie\", \"scheme\"")
            .write(toFile: path + ".broken", atomically: true, encoding: .utf8)
        #expect(try Self.tool("openapi-spec-validator", [path + ".broken"]).status != 0)

        let document = try #require(try JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any])
        let paths = try #require(document["paths"] as? [String: Any])
        #expect(Set(paths.keys) == ["/livez", "/openapi.json", "/v1/tables", "/v1/tables/{table}/rows", "/v1/summary"])
        let rows = try #require((paths["/v1/tables/{table}/rows"] as? [String: Any])?["get"] as? [String: Any])
        let parameters = try #require(rows["parameters"] as? [[String: Any]])
        let tableEnum = (parameters.first { $0["name"] as? String == "table" }?["schema"] as? [String: Any])?["enum"] as? [String]
        #expect(tableEnum == APITables.all.map(\.name))
        #expect(tableEnum?.contains("campaign_cohort_daily") == true)
        #expect(Set(parameters.map { $0["name"] as? String ?? "" }) == APIQuery.rowsArguments.union(["table"]))
        let summary = try #require((paths["/v1/summary"] as? [String: Any])?["get"] as? [String: Any])
        let summaryParameters = try #require(summary["parameters"] as? [[String: Any]])
        #expect(Set(summaryParameters.map { $0["name"] as? String ?? "" }) == APIQuery.summaryArguments)
        // A route the document does not name is not answered.
        let tokens = try TokenFile.read(fixture.tokensPath)
        #expect(tokens.count == 1)
        #expect(try get(port: server.port, "/v1/other", token: nil).status == 404)
    }

    @Test func schemathesisFindsNoAnswerOutsideTheDocument() throws {
        let fixture = try APIFixture(days: 3, perDay: 40)
        let minted = try APIToken.mint(
            name: "all", scope: .everything, expires: nil, today: APIFixture.first)
        try TokenFile.write([minted.record], to: fixture.tokensPath)
        let (server, _) = try fixture.start()
        defer { server.quiesce() }
        try #require(
            FileManager.default.isExecutableFile(atPath: Self.bin.appendingPathComponent("st").path),
            "no schemathesis in .build/venv: run scripts/setup --test")
        let examples = ProcessInfo.processInfo.environment["POSTBACK_API_SCHEMATHESIS_EXAMPLES"] ?? "25"
        // positive_data_acceptance is left out: a schema-valid query can still be refused by a rule
        // OpenAPI cannot state (more than 92 days between two dates, a cursor of another query).
        let result = try Self.tool(
            "st",
            [
                "run", "http://127.0.0.1:\(server.port)\(OpenAPIDocument.path)", "--header",
                "Authorization: Bearer \(minted.text)", "--checks", "all", "--exclude-checks", "positive_data_acceptance",
                "--max-examples", examples, "--workers", "1", "--seed", "1", "--no-color",
            ], directory: fixture.store.path)
        #expect(result.status == 0, "\(result.output.suffix(6000))")
        #expect(result.output.contains("passed"), "\(result.output.suffix(2000))")
        #expect(!fixture.audit.withLock { $0 }.isEmpty)
    }
}
