import Basics
import Foundation
import NumbersAPI
import TestSupport
import Testing

/// Every answer of the numbers API stays inside its token's scope, and every in-scope figure is
/// DuckDB's over the same published files filtered the same way: a synthetic month of eight apps and
/// ten ad networks published by the nightly job, random tokens with random scopes, and random queries
/// of rows (JSON, CSV, Parquet, paged; the day tables and the install-date cohorts) and summaries sent to the real server on loopback by
/// `scripts/api_scope_check.py` (written from docs/api.md, not from the Swift code), which also asks
/// for an app or network outside each narrow scope and for one that does not exist, and compares the
/// two answers byte for byte.
///
/// Size: `POSTBACK_API_SCOPE_TOKENS` tokens (default 150) and as many queries, over
/// `POSTBACK_API_SCOPE_DAYS` days (default 30) of `POSTBACK_API_SCOPE_PER_DAY` postbacks (default
/// 150). The default takes 60–90 s of CI on two loaded cores; e.g.
/// `POSTBACK_API_SCOPE_TOKENS=2000 POSTBACK_API_SCOPE_PER_DAY=3000 swift test --filter ScopeTests`.
@Suite(.serialized) struct ScopeTests {
    static func setting(_ name: String, _ fallback: Int) -> Int {
        ProcessInfo.processInfo.environment[name].flatMap(Int.init) ?? fallback
    }

    @Test func everyAnswerStaysInItsScopeAndMatchesDuckDB() throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: VenvPython.path), "no \(VenvPython.path): run scripts/setup --test")
        let count = TestScale.count(Self.setting("POSTBACK_API_SCOPE_TOKENS", 150), minimum: 20)
        let fixture = try APIFixture(
            days: Self.setting("POSTBACK_API_SCOPE_DAYS", 30),
            // The month keeps its size under a sanitizer (it is made once, in process): the thresholds
            // below count rows the queries return, which only fewer tokens and queries should shrink.
            perDay: Self.setting("POSTBACK_API_SCOPE_PER_DAY", 150), spend: true)
        let tokens = try fixture.writeTokens(count: count, seed: 3)
        let (server, _) = try fixture.start()
        defer { server.quiesce() }
        var listed: [[String: String]] = []
        for token in tokens {
            listed.append([
                "token": token.text, "apps": token.record.scope.apps.text, "networks": token.record.scope.networks.text,
            ])
        }
        let tokensJSON = fixture.store.path + "/tokens.json"
        try JSONSerialization.data(withJSONObject: listed).write(to: URL(fileURLWithPath: tokensJSON))
        let script = try String(
            contentsOfFile: Fixtures.root.appendingPathComponent("scripts/api_scope_check.py").path, encoding: .utf8)
        let result = try VenvPython.run(
            script: script,
            arguments: [
                fixture.store.path, "http://127.0.0.1:\(server.port)", tokensJSON, "--seed", "17", "--queries", String(count),
            ])
        try #require(result.status == 0, "api_scope_check.py failed: \(result.stderr)")
        let line = result.stdout.split(separator: "\n").last.map(String.init) ?? ""
        let answer = try #require(
            try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "no answer: \(result.stdout)")
        let mismatches = answer["mismatches"] as? Int ?? -1
        #expect(mismatches == 0, "\(line)")
        // The checker looked at enough to mean something: rows, summaries and out-of-scope pairs.
        #expect((answer["rows"] as? Int ?? 0) >= count * 5, "\(line)")
        #expect((answer["summaries"] as? Int ?? 0) >= count / 6, "\(line)")
        #expect((answer["oracle_pairs"] as? Int ?? 0) >= count / 2, "\(line)")
        #expect((answer["costs"] as? Int ?? 0) >= count / 20, "\(line)")
        // The cohort table was asked for as rows, and answered some.
        #expect((answer["cohort_queries"] as? Int ?? 0) >= count / 20, "\(line)")
        #expect((answer["cohort_rows"] as? Int ?? 0) >= count / 20, "\(line)")
        // The audit log names tokens, never holds one.
        let audit = fixture.audit.withLock { $0 }
        #expect(audit.count >= count)
        for token in tokens.prefix(50) {
            #expect(!audit.contains { $0.contains(token.text) || $0.contains(String(token.text.suffix(64))) })
        }
        #expect(fixture.operatorLog.withLock { $0 }.isEmpty)
    }
}
