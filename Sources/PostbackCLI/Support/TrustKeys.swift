import Basics
import PostbackCrypto
import Postbacks

/// Loads `--trust-key FILE` arguments: PEM public keys (a private key PEM is accepted too, and only its
/// public half is kept). Each key is named `test:<file name>` in output.
enum TrustKeys {
    static func load(_ paths: [String]) throws -> [TrustedTestKey] {
        var keys: [TrustedTestKey] = []
        for path in paths {
            let text: String
            do {
                text = try FileBytes.readText(path: path, limit: 1 << 20)
            } catch {
                throw CommandError.usage("--trust-key \(error)")
            }
            let key: ECDSAPublicKey
            do {
                key =
                    text.contains("PRIVATE KEY")
                    ? try ECDSAPrivateKey(pemRepresentation: text).publicKey
                    : try ECDSAPublicKey(pemRepresentation: text)
            } catch {
                throw CommandError.usage("--trust-key \(path): not a P-192 or P-256 PEM key (\(error))")
            }
            if let apple = AppleKey.allCases.first(where: { AppleKeyring.shared[$0].derRepresentation == key.derRepresentation })
            {
                throw CommandError.usage(
                    "--trust-key \(path) is Apple's key \(apple.name), which is built in; a trusted test key must be your own")
            }
            let name = "test:" + (path.split(separator: "/").last.map(String.init) ?? path)
            keys.append(TrustedTestKey(name: name, key: key))
        }
        return keys
    }

    /// `--trust-kid KID=PEM`: a test key standing in for an AdAttributionKit kid this release does
    /// not know (for `postback reverify` of quarantined postbacks, once Apple's new key is known).
    static func loadStandIns(_ values: [String]) throws -> [String: TrustedTestKey] {
        var standIns: [String: TrustedTestKey] = [:]
        for value in values {
            guard let equals = value.firstIndex(of: "="), equals != value.startIndex else {
                throw CommandError.usage("--trust-kid must be KID=PEM, e.g. apple-cas-identifier/1=new-key.pem; got '\(value)'")
            }
            let keyID = String(value[..<equals])
            guard AppleKey(keyID: keyID) == nil else {
                throw CommandError.usage("--trust-kid \(keyID) is one of Apple's keys, which are built in")
            }
            let key = try load([String(value[value.index(after: equals)...])])[0]
            standIns[keyID] = TrustedTestKey(name: key.name + " for kid " + keyID, key: key.key)
        }
        return standIns
    }
}
