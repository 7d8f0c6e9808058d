internal import COpenSSL

/// Keeps a private key out of core files: a process that loads one marks itself non-dumpable
/// (`prctl(PR_SET_DUMPABLE, 0)`) before reading the key, and stays so until it exits. Then the kernel
/// writes no core file for it, whatever `ulimit -c` says, and other processes of the same user can
/// neither ptrace it nor read its `/proc/PID/mem`, `environ` or `fd` (root still can).
package enum CoreDumpProtection {
    /// Marks the process non-dumpable; throws if the kernel refuses (it never does on Linux).
    package static func holdPrivateKey() throws {
        guard postback_set_not_dumpable() == 0 else {
            throw CryptoError(.system, "prctl(PR_SET_DUMPABLE, 0)", drainingErrorQueue: false)
        }
    }

    /// Whether the kernel would write a core file of this process (`PR_GET_DUMPABLE`).
    package static var isDumpable: Bool { postback_is_dumpable() != 0 }
}
