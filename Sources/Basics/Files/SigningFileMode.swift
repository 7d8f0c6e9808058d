#if canImport(Glibc)
    import Glibc
#endif

/// The one mode check for files that decide what the ad network signs: its private keys (no access
/// for group or others: anyone who reads one signs as the network) and the `web_ads` file (no
/// write for group or others: anyone who appends a line has that ad signed with the network's key).
/// The mode is read with `stat` before the file is opened; the message names the file, its mode and
/// the `chmod` that fixes it.
package enum SigningFileMode {
    package enum Rule: Sendable {
        /// A private key: readable (and writable) by its owner only.
        case ownerOnly
        /// A file the signing service trusts: writable by its owner only.
        case ownerWritable
        /// A file of credentials' hashes (the numbers API's tokens file): readable by its owner only.
        case ownerOnlyCredentials

        var forbidden: mode_t {
            switch self {
            case .ownerOnly, .ownerOnlyCredentials: 0o077
            case .ownerWritable: 0o022
            }
        }
    }

    /// Why `path` is refused under `rule` (`what` names it in the message, e.g. `--key PATH`), or nil
    /// when its mode is fine. A file that cannot be looked at is refused with the system's reason.
    package static func refusal(_ path: String, rule: Rule, what: String) -> String? {
        var info = stat()
        guard stat(path, &info) == 0 else {
            return "\(what): " + SystemCallError(operation: "stat", path: path, errorNumber: errno).reason
        }
        let mode = info.st_mode & 0o777
        guard mode & rule.forbidden != 0 else { return nil }
        let octal = String(mode, radix: 8)
        switch rule {
        case .ownerOnly:
            return "\(what) is a private key readable by its group or others (mode \(octal)); "
                + "make it readable by its owner only: chmod 600 \(path)"
        case .ownerOnlyCredentials:
            return "\(what) is readable by its group or others (mode \(octal)); it decides who may read the numbers: "
                + "make it readable by its owner only: chmod 600 \(path)"
        case .ownerWritable:
            return "\(what) is writable by its group or others (mode \(octal)): anyone who can write it could have "
                + "ads signed with the network's key; make it writable by its owner only: chmod go-w \(path)"
        }
    }
}
