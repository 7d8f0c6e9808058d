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
    static func load(_ path: String, option: String = "--key") throws(UsageError) -> ECDSAPrivateKey {
        try checkOwnerOnly(path, option: option)
        do {
            try CoreDumpProtection.holdPrivateKey()
        } catch {
            throw UsageError("\(option) \(path): cannot keep the key out of core files: \(error)")
        }
        let text: String
        do {
            text = try FileBytes.readText(path: path, limit: 1 << 20)
        } catch {
            throw UsageError("\(option) \(error)")
        }
        guard text.contains("PRIVATE KEY") else {
            throw UsageError("\(option) \(path): no '-----BEGIN PRIVATE KEY-----' (PKCS #8) or 'EC PRIVATE KEY' (SEC1) block")
        }
        do {
            return try ECDSAPrivateKey(pemRepresentation: text)
        } catch {
            // Not `error` itself: a message about a key file should not carry anything read from it.
            throw UsageError("\(option) \(path): not a P-256 EC private key in PEM (PKCS #8 or SEC1)")
        }
    }

    /// A private key readable by group or others is refused: anyone on the machine could sign ads
    /// as the network. The mode is read before the file is opened.
    static func checkOwnerOnly(_ path: String, option: String) throws(UsageError) {
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw UsageError("\(option) \(path): \(String(cString: strerror(errno)))")
        }
        let mode = info.st_mode & 0o777
        guard mode & 0o077 == 0 else {
            throw UsageError(
                "\(option) \(path) is a private key readable by its group or others (mode \(String(mode, radix: 8))); "
                    + "make it readable by its owner only: chmod 600 \(path)")
        }
    }
}
