package import Basics
import Locking

#if canImport(Glibc)
    import Glibc
#endif

/// The tokens the API accepts, read from the tokens file and read again whenever the file changes
/// (its inode, size or modification time; looked at with one `stat` per request), so a token revoked
/// with `postback api token revoke` is refused from the next request on. A file that becomes
/// unreadable, or readable by group or others, refuses every token until it is fixed (never the
/// last good list: a revocation must not be undone by a broken file).
package final class TokenStore: Sendable {
    /// What a presented `Authorization` header proves.
    package enum Outcome: Equatable {
        case accepted(APIToken)
        /// No token, a malformed one, or one unknown, revoked or expired: all answered alike.
        case refused
        /// The tokens file cannot be used (the reason, for the log; clients get a 503).
        case unavailable(String)
    }

    private struct Loaded {
        var signature: [Int64] = []
        var byID: [String: APIToken] = [:]
        var failure: String?
    }

    package let path: String
    private let loaded = Locked(Loaded())
    /// A record compared against when the id is unknown, so an unknown id costs the same hash.
    private static let decoy = APIToken(
        name: "-", id: "", salt: String(repeating: "0", count: 32), sha256: String(repeating: "0", count: 64),
        scope: .init(apps: .only([]), networks: .only([])), expires: nil, created: UTCDay(daysSinceEpoch: 0), revoked: nil)

    /// - Throws: `TokenFile.Failure` when the file cannot be read at start.
    package init(path: String) throws(TokenFile.Failure) {
        self.path = path
        let tokens = try TokenFile.read(path)
        let signature = Self.signature(path)
        loaded.withLock { $0 = Loaded(signature: signature, byID: Self.index(tokens), failure: nil) }
    }

    /// Checks an `Authorization` header (`Bearer pbk_…`) on `today`.
    package func authenticate(_ header: String?, today: UTCDay) -> Outcome {
        refreshIfChanged()
        let (byID, failure) = loaded.withLock { ($0.byID, $0.failure) }
        if let failure { return .unavailable(failure) }
        guard let header, header.hasPrefix("Bearer "), let parts = APIToken.parts(of: String(header.dropFirst(7))) else {
            return .refused
        }
        let record = byID[parts.id]
        let proven = (record ?? Self.decoy).proves(secret: parts.secret)
        guard let record, proven, Self.isUsable(record, today: today) else { return .refused }
        return .accepted(record)
    }

    /// The token with id `id` as the file says now (re-read if it changed): a dashboard session's
    /// check at each request, so a token revoked or expired since sign-in ends its sessions at once.
    package func current(id: String, today: UTCDay) -> Outcome {
        refreshIfChanged()
        let (byID, failure) = loaded.withLock { ($0.byID, $0.failure) }
        if let failure { return .unavailable(failure) }
        guard let record = byID[id], Self.isUsable(record, today: today) else { return .refused }
        return .accepted(record)
    }

    /// Neither revoked nor past its last day.
    private static func isUsable(_ record: APIToken, today: UTCDay) -> Bool {
        record.revoked == nil && record.expires.map { today <= $0 } ?? true
    }

    private func refreshIfChanged() {
        let signature = Self.signature(path)
        guard loaded.withLock({ $0.signature != signature }) else { return }
        let fresh: Loaded
        do {
            fresh = Loaded(signature: signature, byID: Self.index(try TokenFile.read(path)), failure: nil)
        } catch {
            fresh = Loaded(signature: signature, byID: [:], failure: error.description)
        }
        loaded.withLock { $0 = fresh }
    }

    private static func index(_ tokens: [APIToken]) -> [String: APIToken] {
        Dictionary(tokens.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// Inode, size, modification time and mode: what changes when the file is replaced or edited.
    private static func signature(_ path: String) -> [Int64] {
        var status = stat()
        guard stat(path, &status) == 0 else { return [-1, Int64(errno)] }
        return [
            Int64(bitPattern: UInt64(status.st_ino)), Int64(status.st_size), Int64(status.st_mtim.tv_sec),
            Int64(status.st_mtim.tv_nsec), Int64(status.st_mode),
        ]
    }
}
