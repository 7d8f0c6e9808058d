import Foundation
import PostbackCrypto
import TestSupport
import Testing

@testable import PostbackCLI

/// `postback impression sign | verify`, in-process.
@Suite struct ImpressionCommandTests {
    static let skan =
        #"{"version":"3.0","ad-network-id":"example123.skadnetwork","campaign-id":42,"itunes-item-id":525463029,"nonce":"68483EF6-0934-4E29-A4A8-C1CBB0F8C2C7","source-app-id":0,"fidelity-type":0,"timestamp":1594406341000}"#
    static let aak =
        #"{"impression-identifier":"7aa9f8cc-5689-4c02-b963-22ca22136015","publisher-item-identifier":0,"impression-type":"app-impression","ad-network-identifier":"example.adattributionkit","source-identifier":5239,"timestamp":1679790422446,"advertised-item-identifier":1108187390}"#

    /// A directory with `key.pem` (mode 600), `public.pem` and `in.jsonl`.
    static func setUp(lines: [String]) throws -> (TemporaryDirectory, ECDSAPrivateKey) {
        let directory = TemporaryDirectory("impressions")
        let key = try ECDSAPrivateKey(generatingOn: .p256)
        try directory.write(key.pemRepresentation, to: "key.pem")
        chmod(directory.path + "/key.pem", 0o600)
        try directory.write(key.publicKey.pemRepresentation, to: "public.pem")
        try directory.write(lines.joined(separator: "\n") + "\n", to: "in.jsonl")
        return (directory, key)
    }

    @Test func signThenVerify() throws {
        let (directory, _) = try Self.setUp(lines: [Self.skan, Self.aak])
        let signed = run(["impression", "sign", "--key", directory.path + "/key.pem", directory.path + "/in.jsonl"])
        #expect(signed.status == .success, "\(signed.stderr)")
        let lines = signed.stdout.split(separator: "\n")
        #expect(lines.count == 2)
        #expect(lines[0].contains("\"nonce\":\"68483ef6-0934-4e29-a4a8-c1cbb0f8c2c7\""))
        #expect(lines[0].contains("\"signature\":\"ME"))
        #expect(lines[1].contains("\"jws\":\"eyJ"))
        try directory.write(signed.stdout, to: "signed.jsonl")
        let verified = run([
            "impression", "verify", "--key", directory.path + "/public.pem", "--explain", directory.path + "/signed.jsonl",
        ])
        #expect(verified.status == .success, "\(verified.stdout)")
        #expect(verified.stdout.contains("verified            \(directory.path)/signed.jsonl:1  skadnetwork 3.0 view-through"))
        #expect(verified.stdout.contains(#""3.0\u2063example123.skadnetwork\u206342\u2063525463029\u206368483ef6"#))
        #expect(verified.stdout.contains("2 impressions: 2 verified"))

        // An edited line: exit 1, its verdict names the problem.
        try directory.write(
            signed.stdout.replacingOccurrences(of: "\"campaign-id\":42", with: "\"campaign-id\":43"), to: "edited.jsonl")
        let edited = run([
            "impression", "verify", "--json", "--key", directory.path + "/public.pem", directory.path + "/edited.jsonl",
        ])
        #expect(edited.status == .failure)
        #expect(edited.stdout.contains("\"status\":\"invalid-signature\""))
    }

    @Test func badLinesAreNamedByLineNumber() throws {
        let (directory, _) = try Self.setUp(lines: [
            Self.skan, Self.skan.replacingOccurrences(of: "\"timestamp\":1594406341000", with: "\"timestamp\":1594406341"),
            "not json",
        ])
        let signed = run(["impression", "sign", "--key", directory.path + "/key.pem", directory.path + "/in.jsonl"])
        #expect(signed.status == .failure)
        #expect(signed.stdout.split(separator: "\n").count == 1)
        #expect(signed.stderr.contains("in.jsonl:2: timestamp 1594406341 is not UNIX time in milliseconds"))
        #expect(signed.stderr.contains("in.jsonl:3: not valid JSON"))
        #expect(signed.stderr.contains("1 signed, 2 refused"))
    }

    /// A passphrase-protected key (PKCS #8 `ENCRYPTED PRIVATE KEY`, or SEC1 with `Proc-Type:
    /// 4,ENCRYPTED`), made by openssl as an operator would, is refused as encrypted, with the command
    /// that writes an unencrypted copy; nothing is asked on a terminal and nothing of the key is quoted.
    @Test func anEncryptedKeyIsRefusedAsEncrypted() throws {
        let (directory, _) = try Self.setUp(lines: [Self.skan])
        let plain = directory.path + "/key.pem"
        for (name, arguments) in [
            ("pkcs8.pem", ["pkcs8", "-topk8", "-v2", "aes-256-cbc", "-in", plain, "-passout", "pass:secret"]),
            ("sec1.pem", ["ec", "-aes256", "-in", plain, "-passout", "pass:secret"]),
        ] {
            let output = directory.path + "/" + name
            let openssl = Process()
            openssl.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
            openssl.arguments = arguments + ["-out", output]
            openssl.standardError = FileHandle.nullDevice
            try openssl.run()
            openssl.waitUntilExit()
            #expect(openssl.terminationStatus == 0)
            chmod(output, 0o600)
            let text = try directory.read(name)
            #expect(text.contains("ENCRYPTED"), "\(text)")
            let refused = run(["impression", "sign", "--key", output, directory.path + "/in.jsonl"])
            #expect(refused.status == .usageOrIOError)
            #expect(refused.stderr.contains("\(output): the key is encrypted"), "\(refused.stderr)")
            #expect(refused.stderr.contains("openssl pkey -in \(output) -out KEY.pem"), "\(refused.stderr)")
            let body = text.split(separator: "\n").last { !$0.hasPrefix("-----") }.map(String.init) ?? "?"
            #expect(!refused.stderr.contains(body))
        }
    }

    @Test func aReadableKeyIsRefusedWithoutQuotingIt() throws {
        let (directory, key) = try Self.setUp(lines: [Self.skan])
        chmod(directory.path + "/key.pem", 0o640)
        let refused = run(["impression", "sign", "--key", directory.path + "/key.pem", directory.path + "/in.jsonl"])
        #expect(refused.status == .usageOrIOError)
        #expect(refused.stderr.contains("chmod 600 \(directory.path)/key.pem"))
        #expect(refused.stdout.isEmpty)
        // A file that is not a key: the message does not quote what was read.
        try directory.write("-----BEGIN PRIVATE KEY-----\nc2VjcmV0LXRleHQ=\n-----END PRIVATE KEY-----\n", to: "bad.pem")
        chmod(directory.path + "/bad.pem", 0o600)
        let bad = run(["impression", "sign", "--key", directory.path + "/bad.pem", directory.path + "/in.jsonl"])
        #expect(bad.status == .usageOrIOError)
        #expect(!bad.stderr.contains("c2VjcmV0"))
        let body = key.pemRepresentation.split(separator: "\n").dropFirst().first.map(String.init) ?? "?"
        #expect(!refused.stderr.contains(body))
    }

    /// A process that loaded a private key writes no core file (the key's bytes were found in one):
    /// `PR_GET_DUMPABLE` reads 0 once `impression sign` has read its key (serve's `signing_keys` are
    /// read by the same `PrivateKeyFile.load`).
    @Test func aProcessHoldingAPrivateKeyIsNotDumpable() throws {
        let (directory, _) = try Self.setUp(lines: [Self.skan])
        let signed = run(["impression", "sign", "--key", directory.path + "/key.pem", directory.path + "/in.jsonl"])
        #expect(signed.status == .success, "\(signed.stderr)")
        #expect(!CoreDumpProtection.isDumpable, "prctl(PR_GET_DUMPABLE) after loading a private key")
    }

    @Test func rotationByKid() throws {
        let (directory, _) = try Self.setUp(lines: [Self.aak])
        let old = try ECDSAPrivateKey(generatingOn: .p256)
        try directory.write(old.publicKey.pemRepresentation, to: "old.pem")
        let signed = run([
            "impression", "sign", "--key", directory.path + "/key.pem", "--kid", "k2", directory.path + "/in.jsonl",
        ])
        try directory.write(signed.stdout, to: "signed.jsonl")
        let verified = run([
            "impression", "verify", "--key", "k1=" + directory.path + "/old.pem", "--key", "k2=" + directory.path + "/public.pem",
            directory.path + "/signed.jsonl",
        ])
        #expect(verified.status == .success, "\(verified.stdout)")
        #expect(verified.stdout.contains("key public.pem (kid k2)"))
    }
}
