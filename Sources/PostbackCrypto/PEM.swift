internal import COpenSSL

/// PEM reading and writing through OpenSSL memory BIOs.
enum PEM {
    /// Runs an OpenSSL `PEM_read_bio_*` function over `text` and returns the object it made.
    static func read(_ text: String, what: String, _ reader: (OpaquePointer) -> OpaquePointer?) throws -> OpaquePointer {
        var bytes = Array(text.utf8)
        let object: OpaquePointer? = bytes.withUnsafeMutableBytes { buffer in
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else { return nil }
            defer { BIO_free(bio) }
            return reader(bio)
        }
        guard let object else {
            throw CryptoError(.invalidKey, "reading PEM: no valid '-----BEGIN \(what)-----' block")
        }
        return object
    }

    /// Whether `text` holds a passphrase-protected private key: a PKCS #8 `ENCRYPTED PRIVATE KEY`
    /// block or a traditional (SEC1) block with `Proc-Type: 4,ENCRYPTED`.
    static func isEncryptedPrivateKey(_ text: String) -> Bool {
        text.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----") || text.contains("Proc-Type: 4,ENCRYPTED")
    }

    /// Runs an OpenSSL `PEM_write_bio_*` function into memory and returns the text.
    static func write(_ writer: (OpaquePointer) -> Int32) -> String {
        guard let bio = BIO_new(BIO_s_mem()) else { return "" }
        defer { BIO_free(bio) }
        guard writer(bio) == 1 else {
            ERR_clear_error()
            return ""
        }
        let pending = Int(BIO_ctrl_pending(bio))
        var bytes = [UInt8](repeating: 0, count: pending)
        let read = bytes.withUnsafeMutableBytes { BIO_read(bio, $0.baseAddress, Int32(pending)) }
        return String(decoding: bytes.prefix(max(0, Int(read))), as: UTF8.self)
    }
}
