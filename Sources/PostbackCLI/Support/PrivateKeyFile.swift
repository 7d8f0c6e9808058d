import Basics
import PostbackCrypto

#if canImport(Glibc)
    import Glibc
#endif

/// Reading the ad network's private key (`postback impression sign --key`): refused when the file
/// can be read by its group or by others, with the remedy; the key's text never appears in a message.
/// The process is made non-dumpable before the key is read (`CoreDumpProtection`): no core file
/// holds it.
enum PrivateKeyFile {
    static func load(_ path: String, option: String = "--key") throws -> ECDSAPrivateKey {
        try checkOwnerOnly(path, option: option)
        do {
            try CoreDumpProtection.holdPrivateKey()
        } catch {
            throw CommandError.usage("\(option) \(path): cannot keep the key out of core files: \(error)")
        }
        let text: String
        do {
            text = try FileBytes.readText(path: path, limit: 1 << 20)
        } catch {
            throw CommandError.usage("\(option) \(error)")
        }
        guard text.contains("PRIVATE KEY") else {
            throw CommandError.usage(
                "\(option) \(path): no '-----BEGIN PRIVATE KEY-----' (PKCS #8) or 'EC PRIVATE KEY' (SEC1) block")
        }
        do {
            return try ECDSAPrivateKey(pemRepresentation: text)
        } catch let error as CryptoError where error.code == .encryptedKey {
            throw CommandError.usage(
                "\(option) \(path): the key is encrypted; postback needs an unencrypted PKCS #8 or SEC1 key readable by "
                    + "its owner only: openssl pkey -in \(path) -out KEY.pem, then chmod 600 KEY.pem")
        } catch {
            // Not `error` itself: a message about a key file should not carry anything read from it.
            throw CommandError.usage("\(option) \(path): not a P-256 EC private key in PEM (PKCS #8 or SEC1)")
        }
    }

    /// A private key readable by group or others is refused: anyone on the machine could sign ads
    /// as the network (`SigningFileMode`, the check `web_ads` gets too).
    static func checkOwnerOnly(_ path: String, option: String) throws {
        if let refusal = SigningFileMode.refusal(path, rule: .ownerOnly, what: "\(option) \(path)") {
            throw CommandError.usage(refusal)
        }
    }
}
