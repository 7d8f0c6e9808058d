import Basics
import NumbersAPI
import Reporting
import TestSupport
import Testing

/// The dashboard's sessions without a browser: how long one lasts, what ends it, the bound on how
/// many are kept, and the token check each page makes (`TokenStore.current`).
@Suite struct DashboardSessionTests {
    @Test func aSessionLastsItsLifetimeAndNoLonger() throws {
        let sessions = DashboardSessions(lifetime: 3600)
        let id = try sessions.open(tokenID: "0123456789abcdef", now: 100)
        #expect(id.count == 64 && id.allSatisfy(\.isHexDigit))
        #expect(sessions.session(id, now: 100 + 3599)?.tokenID == "0123456789abcdef")
        #expect(sessions.session(id, now: 100 + 3600) == nil)
        // Forgotten once expired, even if the clock were to go back.
        #expect(sessions.session(id, now: 200) == nil && sessions.count == 0)
        // Another id, or one a character off, is no session.
        let other = try sessions.open(tokenID: "0123456789abcdef", now: 0)
        #expect(other != id)
        let flipped = String(other.dropLast()) + (other.last == "0" ? "1" : "0")
        #expect(sessions.session(flipped, now: 1) == nil && sessions.session(other, now: 1) != nil)
    }

    @Test func signingOutOrLosingTheTokenEndsSessions() throws {
        let sessions = DashboardSessions(lifetime: 3600)
        let first = try sessions.open(tokenID: "aaaaaaaaaaaaaaaa", now: 0)
        let second = try sessions.open(tokenID: "aaaaaaaaaaaaaaaa", now: 0)
        let kept = try sessions.open(tokenID: "bbbbbbbbbbbbbbbb", now: 0)
        sessions.close(first)
        #expect(sessions.session(first, now: 1) == nil && sessions.session(second, now: 1) != nil)
        sessions.close(tokenID: "aaaaaaaaaaaaaaaa")
        #expect(sessions.session(second, now: 1) == nil && sessions.session(kept, now: 1) != nil)
    }

    @Test func atTheBoundTheSessionNearestItsEndGoes() throws {
        let sessions = DashboardSessions(lifetime: 10)
        let oldest = try sessions.open(tokenID: "aaaaaaaaaaaaaaaa", now: 0)
        for second in 1..<DashboardSessions.maximumSessions { _ = try sessions.open(tokenID: "b", now: Double(second) / 1e4) }
        #expect(sessions.count == DashboardSessions.maximumSessions)
        let newest = try sessions.open(tokenID: "c", now: 1)
        #expect(sessions.count == DashboardSessions.maximumSessions)
        #expect(sessions.session(oldest, now: 2) == nil && sessions.session(newest, now: 2) != nil)
    }

    @Test func theTokenCheckOfEachPageSeesRevocationAndExpiry() throws {
        let directory = TemporaryDirectory("dashboard-tokens")
        let path = directory.path + "/tokens"
        let today = UTCDay(year: 2026, month: 12, day: 6)
        let scope = DataScope(apps: .only(["1229670720"]), networks: .all)
        let lasting = try APIToken.mint(name: "lasting", scope: scope, expires: nil, today: today)
        let ending = try APIToken.mint(name: "ending", scope: scope, expires: today.adding(days: 1), today: today)
        try TokenFile.write([lasting.record, ending.record], to: path)
        let tokens = try TokenStore(path: path)
        #expect(tokens.current(id: ending.record.id, today: today.adding(days: 1)) == .accepted(ending.record))
        #expect(tokens.current(id: ending.record.id, today: today.adding(days: 2)) == .refused)
        #expect(tokens.current(id: "ffffffffffffffff", today: today) == .refused)
        var revoked = lasting.record
        revoked.revoked = today
        try TokenFile.write([revoked, ending.record], to: path)
        #expect(tokens.current(id: lasting.record.id, today: today) == .refused)
    }
}
