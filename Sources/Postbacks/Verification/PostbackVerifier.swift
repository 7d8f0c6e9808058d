import Basics
import PostbackCrypto

/// Checks postbacks against Apple's keys: parse strictly, build the exact signed message, verify.
///
/// Immutable and `Sendable`: build one at start-up and share it between threads.
package struct PostbackVerifier: Sendable {
    package let policy: VerificationPolicy
    private let keyring: AppleKeyring

    package init(policy: VerificationPolicy = .production) {
        self.policy = policy
        self.keyring = .shared
    }

    /// One signature check that was made, for `postback explain`.
    package struct Attempt: Sendable {
        package let keyName: String
        /// "as received", or "test mode: source-app-id 0 left out".
        package let variant: String
        package let message: [UInt8]
        package let isValid: Bool
    }

    /// Parses and verifies one postback body.
    package func verify(body: UnsafeRawBufferPointer) -> VerificationResult {
        let postback: Postback
        do {
            postback = try Postback(body: body)
        } catch {
            return VerificationResult(rejection: error)
        }
        return verify(postback)
    }

    package func verify(body: [UInt8]) -> VerificationResult {
        body.withUnsafeBytes { verify(body: $0) }
    }

    /// Verifies an already parsed postback.
    package func verify(_ postback: Postback) -> VerificationResult {
        verify(postback) { _ in }
    }

    /// Verifies and also returns every signature check made, in order, for `postback explain`.
    package func verifyRecordingAttempts(_ postback: Postback) -> (result: VerificationResult, attempts: [Attempt]) {
        var attempts: [Attempt] = []
        let result = verify(postback) { attempts.append($0) }
        return (result, attempts)
    }

    private func verify(_ postback: Postback, record: (Attempt) -> Void) -> VerificationResult {
        switch postback {
        case .skadnetwork(let skan): return verify(skan, postback: postback, record: record)
        case .adAttributionKit(let aak): return verify(aak, postback: postback, record: record)
        }
    }

    // MARK: SKAdNetwork

    private func verify(_ skan: SKAdNetworkPostback, postback: Postback, record: (Attempt) -> Void) -> VerificationResult {
        let appleKey = AppleKey(for: skan.version)
        let candidates = candidateKeys(apple: appleKey, curve: skan.version.curve)
        var messages: [(variant: String, bytes: [UInt8])] = [("as received", skan.signedMessage())]
        if skan.isTestMode {
            // Real test-mode postbacks are signed without their source-app-id of 0 (spec §10).
            messages.append(("test mode: source-app-id 0 left out", skan.signedMessage(omittingZeroSourceAppID: true)))
        }
        let environmentIfApple: PostbackEnvironment = skan.isTestMode ? .development : .production
        for message in messages {
            let digest = SHA256.hash(message.bytes)
            for candidate in candidates {
                let valid = skan.attributionSignature.withUnsafeBytes {
                    candidate.key.isValidSignature(derSignature: $0, digest: digest)
                }
                record(Attempt(keyName: candidate.name, variant: message.variant, message: message.bytes, isValid: valid))
                if valid {
                    return VerificationResult(
                        status: .verified, postback: postback, keyName: candidate.name,
                        environment: candidate.isApple ? environmentIfApple : .development, reason: nil,
                        isTestMode: skan.isTestMode)
                }
            }
        }
        let fieldCount = skan.signedFields().count
        return VerificationResult(
            status: .invalidSignature, postback: postback, keyName: candidates.map(\.name).joined(separator: ","),
            environment: environmentIfApple,
            reason:
                "attribution-signature does not verify with \(describe(candidates)) over the SKAdNetwork \(skan.version.rawValue) message of \(fieldCount) fields"
                + (skan.isTestMode ? " (also tried without the test-mode source-app-id 0)" : ""))
    }

    // MARK: AdAttributionKit

    private func verify(_ aak: AdAttributionKitPostback, postback: Postback, record: (Attempt) -> Void) -> VerificationResult {
        guard let appleKey = AppleKey(keyID: aak.keyID) else {
            if policy.allowsDevelopment, let standIn = policy.standInKeyIDs[aak.keyID] {
                return verify(aak, postback: postback, standIn: standIn, record: record)
            }
            return VerificationResult(
                status: .untrustedKey, postback: postback, keyName: aak.keyID, environment: nil,
                reason:
                    "JWS kid \"\(JSONWriter.escapedForMessage(aak.keyID))\" is not one of Apple's keys (apple-cas-identifier/0, apple-development-identifier/0, apple-development-identifier/1)"
            )
        }
        if appleKey.environment == .development, !policy.allowsDevelopment {
            return VerificationResult(
                status: .untrustedKey, postback: postback, keyName: appleKey.name, environment: .development,
                reason:
                    "\(appleKey.name) is a development key; development postbacks are accepted only when allowed (postback verify --allow-dev, serve's allow_development)"
            )
        }
        let candidates = candidateKeys(apple: appleKey, curve: .p256)
        guard let der = ECDSASignature.derFromRaw(aak.jws.signature, curve: .p256) else {
            return VerificationResult(
                status: .invalidSignature, postback: postback, keyName: appleKey.name, environment: appleKey.environment,
                reason: "JWS signature is \(aak.jws.signature.count) bytes; ES256 needs exactly 64 (raw r ‖ s)")
        }
        let digest = SHA256.hash(aak.jws.signingInput)
        for candidate in candidates {
            let valid = der.withUnsafeBytes { candidate.key.isValidSignature(derSignature: $0, digest: digest) }
            record(Attempt(keyName: candidate.name, variant: "JWS signing input", message: aak.jws.signingInput, isValid: valid))
            if valid {
                return VerificationResult(
                    status: .verified, postback: postback, keyName: candidate.name,
                    environment: candidate.isApple ? appleKey.environment : .development, reason: nil)
            }
        }
        return VerificationResult(
            status: .invalidSignature, postback: postback, keyName: candidates.map(\.name).joined(separator: ","),
            environment: appleKey.environment,
            reason: "JWS signature does not verify with \(describe(candidates))")
    }

    /// A kid this release does not know, checked with the key the user says stands in for it.
    private func verify(
        _ aak: AdAttributionKitPostback, postback: Postback, standIn: TrustedTestKey,
        record: (Attempt) -> Void
    ) -> VerificationResult {
        guard standIn.key.curve == .p256, let der = ECDSASignature.derFromRaw(aak.jws.signature, curve: .p256) else {
            return VerificationResult(
                status: .invalidSignature, postback: postback, keyName: standIn.name, environment: .development,
                reason: "JWS signature is not a 64-byte ES256 signature, or \(standIn.name) is not a P-256 key")
        }
        let valid = der.withUnsafeBytes {
            standIn.key.isValidSignature(derSignature: $0, digest: SHA256.hash(aak.jws.signingInput))
        }
        record(Attempt(keyName: standIn.name, variant: "JWS signing input", message: aak.jws.signingInput, isValid: valid))
        return VerificationResult(
            status: valid ? .verified : .invalidSignature, postback: postback, keyName: standIn.name, environment: .development,
            reason: valid
                ? nil
                : "JWS signature does not verify with \(standIn.name), standing in for kid \"\(JSONWriter.escapedForMessage(aak.keyID))\""
        )
    }

    // MARK: Keys

    private struct Candidate {
        let name: String
        let key: ECDSAPublicKey
        let isApple: Bool
    }

    /// Test keys first (when allowed), then Apple's key.
    private func candidateKeys(apple: AppleKey, curve: Curve) -> [Candidate] {
        var candidates: [Candidate] = []
        if policy.allowsDevelopment {
            for test in policy.testKeys where test.key.curve == curve {
                candidates.append(Candidate(name: test.name, key: test.key, isApple: false))
            }
        }
        candidates.append(Candidate(name: apple.name, key: keyring[apple], isApple: true))
        return candidates
    }

    private func describe(_ candidates: [Candidate]) -> String {
        candidates.count == 1 ? "Apple's key \(candidates[0].name)" : "any of " + candidates.map(\.name).joined(separator: ", ")
    }
}
