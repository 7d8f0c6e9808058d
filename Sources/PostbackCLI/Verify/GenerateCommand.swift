import Postbacks
import PostbackCrypto

/// `postback generate`: mint postbacks signed with a test key, as JSON Lines on stdout.
enum GenerateCommand {
    static let usage = """
        usage: postback generate --key PEM [--create-key] [--count N] [--kinds LIST] [--seed N]

        Writes N postbacks signed with the private key in PEM, one per line. They verify with
        'postback verify --allow-dev --trust-key PEM' and are reported as development: use them to
        test a deployment or to benchmark, never as production data.

          --key PEM        private key (P-256; P-192 for SKAdNetwork 1.0/2.0)
          --create-key     create PEM with a new key if it does not exist (P-192 when --kinds
                           is 1.0 and/or 2.0, else P-256)
          --count N        how many (default 1000)
          --kinds LIST     comma-separated: 1.0, 2.0, 2.1, 2.2, 3.0, 4.0, aak (default 3.0,4.0,aak)
          --seed N         seed for the identifiers and field values (default 1)
          --start N        index of the first postback (default 0), to extend an earlier run

        Exit status: 0 written; 2 usage, key or I/O error.
        """

    static let syntax = CommandSyntax("generate", usage: usage, flags: ["--create-key"], options: ["--key", "--count", "--kinds", "--seed", "--start"])

    static func run(_ words: [String], io: CommandIO) -> ExitStatus {
        let signer: TestPostbackSigner
        let count: Int
        let start: Int
        let seed: UInt64
        let generator: SyntheticPostbacks
        do {
            let arguments = try syntax.parse(words)
            guard let keyPath = arguments.value("--key") else { throw UsageError("--key PEM is required (add --create-key to make a new one)") }
            count = try arguments.integer("--count", default: 1000, in: 0...100_000_000)
            start = try arguments.integer("--start", default: 0, in: 0...Int.max / 2)
            seed = UInt64(try arguments.integer("--seed", default: 1, in: 0...Int.max))
            var kinds: [SyntheticPostbacks.Kind] = []
            for name in (arguments.value("--kinds") ?? "3.0,4.0,aak").split(separator: ",") {
                guard let kind = SyntheticPostbacks.Kind(rawValue: String(name)) else {
                    throw UsageError("unknown kind '\(name)' in --kinds (known: \(SyntheticPostbacks.Kind.allCases.map(\.rawValue).joined(separator: ", ")))")
                }
                kinds.append(kind)
            }
            guard !kinds.isEmpty else { throw UsageError("--kinds is empty") }
            // SKAdNetwork 1.0 and 2.0 are signed with P-192, everything later with P-256: one key cannot do both.
            let needsP192 = kinds.map { $0 == .skan1_0 || $0 == .skan2_0 }
            guard Set(needsP192).count == 1 else {
                throw UsageError("--kinds mixes 1.0/2.0 (signed with P-192) and later kinds (P-256); one key cannot sign both: "
                    + "run generate twice, with two keys (e.g. --key p192.pem --create-key --kinds 1.0,2.0)")
            }
            let curve: Curve = needsP192[0] ? .p192 : .p256
            signer = TestPostbackSigner(key: try loadOrCreateKey(keyPath, curve: curve, create: arguments.has("--create-key")))
            guard signer.key.curve == curve else {
                throw UsageError("--kinds \(kinds.map(\.rawValue).joined(separator: ",")) needs a \(curve.rawValue) key; --key \(keyPath) is \(signer.key.curve.rawValue) "
                    + "(give a new file with --create-key to make a \(curve.rawValue) key)")
            }
            generator = SyntheticPostbacks(kinds: kinds)
        } catch {
            return syntax.finish(error, io: io)
        }

        let failed = AtomicFlag()
        let map = OrderedParallelMap<Range<Int>, [UInt8]>(
            maximumInFlight: 2 * ProcessInfoCores.count,
            transform: { range in
                var out: [UInt8] = []
                for index in range {
                    guard let body = try? signer.sign(generator.postback(index, seed: seed)) else {
                        failed.set()
                        return out
                    }
                    out.append(contentsOf: body)
                    out.append(0x0A)
                }
                return out
            },
            deliver: { io.standardOutput.write($0) })
        var index = start
        while index < start + count {
            let end = min(index + 512, start + count)
            map.submit(index..<end)
            index = end
        }
        map.waitUntilDone()
        if failed.isSet {
            io.printError("postback generate: signing failed")
            return .usageOrIOError
        }
        return .success
    }

    private static func loadOrCreateKey(_ path: String, curve: Curve, create: Bool) throws -> ECDSAPrivateKey {
        do {
            return try ECDSAPrivateKey(pemRepresentation: try FileBytes.readText(path: path, limit: 1 << 20))
        } catch let error as FileBytes.ReadError {
            guard create, UserPaths.kind(of: path) == .missing else {
                throw UsageError("--key \(error)" + (UserPaths.kind(of: path) == .missing ? "; add --create-key to create a new key there" : ""))
            }
            try UserPaths.requireOutputFile(path, option: "--key")
            let key = try ECDSAPrivateKey(generatingOn: curve)
            try DurableFile.write(Array(key.pemRepresentation.utf8), to: path, mode: 0o600)
            return key
        } catch {
            throw UsageError("--key \(path): not a private key PEM (\(error))")
        }
    }
}
