import Basics
import Locking
package import PostbackCrypto

/// The dashboard's sign-in sessions, in memory (a restart signs everyone out). A session id is 32
/// random bytes from OpenSSL (`SecretBytes`), sent once in the cookie; only its SHA-256 is kept, so
/// the table never holds what a browser presents. A session is bound to its token's id: the token is
/// looked up again at every request (`TokenStore.current`), and a token revoked or expired since
/// ends the session there. The cookie never holds the token.
package final class DashboardSessions: Sendable {
    package struct Session: Sendable {
        package var tokenID: String
        /// Seconds on `now`'s clock after which the session is refused.
        package var expires: Double
    }

    /// At most this many live sessions; a sign-in past it ends the one closest to its expiry.
    package static let maximumSessions = 10_000
    private static let idBytes = 32

    /// How long a session lasts, in seconds.
    let lifetime: Int
    private let sessions = Locked([String: Session]())

    package init(lifetime: Int) { self.lifetime = lifetime }

    /// A new session for `tokenID`; returns the id for the cookie (64 hex digits).
    /// - Throws: `CryptoError` if OpenSSL's generator fails.
    package func open(tokenID: String, now: Double) throws(CryptoError) -> String {
        let id = Hex.encode(try SecretBytes.random(count: Self.idBytes))
        let key = Self.key(id)
        sessions.withLock { sessions in
            if sessions.count >= Self.maximumSessions {
                sessions = sessions.filter { $0.value.expires > now }
                if sessions.count >= Self.maximumSessions, let first = sessions.min(by: { $0.value.expires < $1.value.expires }) {
                    sessions[first.key] = nil
                }
            }
            sessions[key] = Session(tokenID: tokenID, expires: now + Double(lifetime))
        }
        return id
    }

    /// The live session of the cookie's `id`; nil for an unknown or expired one (which is forgotten).
    package func session(_ id: String, now: Double) -> Session? {
        guard id.utf8.count == 2 * Self.idBytes else { return nil }
        let key = Self.key(id)
        return sessions.withLock { sessions in
            guard let session = sessions[key] else { return nil }
            guard session.expires > now else {
                sessions[key] = nil
                return nil
            }
            return session
        }
    }

    /// Ends the cookie's session (signing out).
    package func close(_ id: String) { sessions.withLock { $0[Self.key(id)] = nil } }

    /// Ends every session of a token (revoked, expired, or gone from the file).
    package func close(tokenID: String) { sessions.withLock { $0 = $0.filter { $0.value.tokenID != tokenID } } }

    /// Live sessions (for tests and the log).
    package var count: Int { sessions.withLock { $0.count } }

    private static func key(_ id: String) -> String { SHA256.hash(Array(id.utf8)).description }
}
