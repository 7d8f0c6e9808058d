import Basics
import Foundation
import NumbersAPI
import PostbackCrypto
import Reporting
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Tokens: what the file keeps (never the token), how a presented one is checked (constant time,
/// expiry, revocation seen at once), the file's mode, the CLI's explicit scopes, and the audit log.
@Suite struct TokenTests {
    static let today = UTCDay(year: 2026, month: 12, day: 6)
    static let scope = DataScope(apps: .only(["1229670720"]), networks: .only(["example.skadnetwork"]))

    /// A tokens file with one token of `scope`, and a store reading it.
    static func oneToken(expires: UTCDay? = nil) throws -> (TemporaryDirectory, (record: APIToken, text: String), TokenStore) {
        let directory = TemporaryDirectory("tokens")
        let minted = try APIToken.mint(name: "agency", scope: scope, expires: expires, today: today)
        try TokenFile.write([minted.record], to: directory.path + "/tokens")
        return (directory, minted, try TokenStore(path: directory.path + "/tokens"))
    }

    @Test func theFileKeepsASaltedHashNotTheToken() throws {
        let directory = TemporaryDirectory("tokens")
        let path = directory.path + "/tokens"
        let first = try APIToken.mint(name: "agency", scope: Self.scope, expires: nil, today: Self.today)
        let second = try APIToken.mint(name: "other", scope: Self.scope, expires: nil, today: Self.today)
        try TokenFile.write([first.record, second.record], to: path)
        let text = try directory.read("tokens")
        let secret = String(first.text.suffix(64))
        #expect(first.text.hasPrefix("pbk_") && first.text.count == 4 + 16 + 1 + 64)
        #expect(!text.contains(secret) && !text.contains(first.text))
        // The stored digest is SHA-256 of the salt, ':' and the secret, computed here independently.
        let expected = SHA256.hash(Array("\(first.record.salt):\(secret)".utf8)).description
        #expect(text.contains(expected))
        // Salted: two tokens never share a salt, so equal secrets would not share a digest.
        #expect(first.record.salt != second.record.salt && first.record.salt.count == 32)
        var status = stat()
        #expect(stat(path, &status) == 0 && status.st_mode & 0o777 == 0o600)
        #expect(try TokenFile.read(path) == [first.record, second.record])
    }

    @Test func aPresentedTokenIsCheckedInConstantTimeAndByItsWholeSecret() throws {
        let (directory, minted, store) = try Self.oneToken()
        defer { withExtendedLifetime(directory) {} }
        #expect(store.authenticate("Bearer \(minted.text)", today: Self.today) == .accepted(minted.record))
        // Every wrong shape is refused alike: none, another scheme, a flipped last digit, a cut one,
        // another token's id with this secret.
        var flipped = Array(minted.text)
        flipped[flipped.count - 1] = flipped.last == "0" ? "1" : "0"
        for header in [
            nil, "", minted.text, "Basic \(minted.text)", "Bearer \(String(flipped))", "Bearer \(minted.text.dropLast())",
            "Bearer pbk_0000000000000000_\(minted.text.suffix(64))", "Bearer \(minted.text.uppercased())",
        ] {
            #expect(store.authenticate(header, today: Self.today) == .refused, "\(header ?? "nil")")
        }
        // The comparison is OpenSSL's CRYPTO_memcmp: equal and unequal inputs of the same length.
        #expect(SecretBytes.constantTimeEquals(Array("abc".utf8), Array("abc".utf8)))
        #expect(!SecretBytes.constantTimeEquals(Array("abc".utf8), Array("abd".utf8)))
        #expect(!SecretBytes.constantTimeEquals(Array("abc".utf8), Array("ab".utf8)))
        // Its source (the one compare of a presented secret) uses it, not ==.
        let source = try String(
            contentsOfFile: Fixtures.root.appendingPathComponent("Sources/NumbersAPI/APIToken.swift").path, encoding: .utf8)
        #expect(source.contains("SecretBytes.constantTimeEquals(Array(Self.digest(salt: salt, secret: secret).utf8)"))
    }

    @Test func anExpiredTokenIsRefusedFromTheDayAfterItsLastDay() throws {
        let (directory, minted, store) = try Self.oneToken(expires: Self.today.adding(days: 2))
        defer { withExtendedLifetime(directory) {} }
        #expect(store.authenticate("Bearer \(minted.text)", today: Self.today.adding(days: 2)) == .accepted(minted.record))
        #expect(store.authenticate("Bearer \(minted.text)", today: Self.today.adding(days: 3)) == .refused)
    }

    @Test func aRevokedTokenIsRefusedAtOnceByARunningStore() throws {
        let directory = TemporaryDirectory("tokens")
        let path = directory.path + "/tokens"
        let created = run([
            "api", "token", "create", "--tokens", path, "--name", "agency", "--apps", "1229670720", "--networks",
            "example.skadnetwork",
        ])
        try #require(created.status == .success, "\(created.stderr)")
        let token = created.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let store = try TokenStore(path: path)
        guard case .accepted = store.authenticate("Bearer \(token)", today: Self.today) else {
            Issue.record("the new token is refused")
            return
        }
        let revoked = run(["api", "token", "revoke", "--tokens", path, "--name", "agency"])
        try #require(revoked.status == .success, "\(revoked.stderr)")
        #expect(store.authenticate("Bearer \(token)", today: Self.today) == .refused)
        let listed = run(["api", "token", "list", "--tokens", path])
        #expect(listed.stdout.contains("agency\t1229670720\texample.skadnetwork\t-\t"))
        #expect(!listed.stdout.contains(String(token.suffix(64))))
    }

    @Test func aTokensFileOthersCanReadIsRefused() throws {
        let (directory, minted, store) = try Self.oneToken()
        let path = directory.path + "/tokens"
        chmod(path, 0o644)
        #expect(throws: TokenFile.Failure.self) { try TokenStore(path: path) }
        // A running store refuses every token until the file is fixed, rather than keep the old list.
        guard case .unavailable(let reason) = store.authenticate("Bearer \(minted.text)", today: Self.today) else {
            Issue.record("a world-readable tokens file was used")
            return
        }
        #expect(reason.contains("chmod 600"))
        let listed = run(["api", "token", "list", "--tokens", path])
        #expect(listed.status == .usageOrIOError && listed.stderr.contains("readable by its group or others"))
        chmod(path, 0o600)
        #expect(store.authenticate("Bearer \(minted.text)", today: Self.today) == .accepted(minted.record))
    }

    @Test(arguments: [
        (["--networks", "all"], "--apps is required"), (["--apps", "all"], "--networks is required"),
        (["--apps", "", "--networks", "all"], "--apps must be"), (["--apps", "1,,2", "--networks", "all"], "--apps must be"),
        (["--apps", "1,all", "--networks", "all"], "--apps must be"),
    ])
    func aScopeIsNeverImplied(_ options: [String], _ message: String) throws {
        let directory = TemporaryDirectory("tokens")
        let result = run(["api", "token", "create", "--tokens", directory.path + "/tokens", "--name", "x"] + options)
        #expect(result.status == .usageOrIOError && result.stderr.contains(message), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: directory.path + "/tokens"))
    }

    @Test func theAuditLogNamesTheTokenNeverHoldsIt() throws {
        let fixture = try APIFixture(days: 2, perDay: 50)
        let tokens = try fixture.writeTokens(count: 2, seed: 9)
        let (server, _) = try fixture.start(requestsPerMinute: 2)
        defer { server.quiesce() }
        let token = tokens[0].text
        let first = try get(port: server.port, "/v1/tables", token: token)
        #expect(first.status == 200)
        // A token pasted into the query by mistake is not written either.
        _ = try get(port: server.port, "/v1/summary?from=2026-03-01&to=2026-03-02&app=\(token)", token: token)
        // Over the rate limit (2 a minute, bursts of 2): 429 with Retry-After, before anything is read.
        let limited = try get(port: server.port, "/v1/tables", token: token)
        #expect(limited.status == 429 && limited.body.contains("too-many-requests"))
        let refused = try get(port: server.port, "/v1/tables", token: String(token.dropLast()) + "x")
        #expect(refused.status == 401)
        let lines = fixture.audit.withLock { $0 }
        #expect(lines.count == 4)
        #expect(lines.filter { $0.contains("\"token\":\"token-0\"") }.count == 3)
        for line in lines {
            #expect(!line.contains(String(token.suffix(64))) && !line.contains(String(token.prefix(21))), "\(line)")
        }
        #expect(lines[0].contains("\"status\":200") && lines[0].contains("\"bytes\":"))
    }
}
