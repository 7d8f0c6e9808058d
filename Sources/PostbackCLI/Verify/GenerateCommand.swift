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
          --create-key     create PEM with a new P-256 key if it does not exist
          --count N        how many (default 1000)
          --kinds LIST     comma-separated: 1.0, 2.0, 2.1, 2.2, 3.0, 4.0, aak (default 3.0,4.0,aak)
          --seed N         seed for the identifiers and field values (default 1)
          --start N        index of the first postback (default 0), to extend an earlier run
        """

    static func run(_ words: [String], io: CommandIO) -> ExitStatus {
        let signer: TestPostbackSigner
        let count: Int
        let start: Int
        let seed: UInt64
        let generator: SyntheticPostbacks
        do {
            let arguments = try Arguments(words, flags: ["--create-key", "--help"], options: ["--key", "--count", "--kinds", "--seed", "--start"])
            if arguments.has("--help") {
                io.print(usage)
                return .success
            }
            guard let keyPath = arguments.value("--key") else { throw UsageError("--key is required") }
            signer = TestPostbackSigner(key: try loadOrCreateKey(keyPath, create: arguments.has("--create-key")))
            count = try arguments.integer("--count", default: 1000, in: 0...100_000_000)
            start = try arguments.integer("--start", default: 0, in: 0...Int.max / 2)
            seed = UInt64(try arguments.integer("--seed", default: 1, in: 0...Int.max))
            var kinds: [SyntheticPostbacks.Kind] = []
            for name in (arguments.value("--kinds") ?? "3.0,4.0,aak").split(separator: ",") {
                guard let kind = SyntheticPostbacks.Kind(rawValue: String(name)) else {
                    throw UsageError("unknown kind '\(name)' in --kinds (known: \(SyntheticPostbacks.Kind.allCases.map(\.rawValue).joined(separator: ", ")))")
                }
                let p192 = kind == .skan1_0 || kind == .skan2_0
                guard (signer.key.curve == .p192) == p192 else {
                    throw UsageError("kind \(kind.rawValue) needs a \(p192 ? "P-192" : "P-256") key; --key is \(signer.key.curve.rawValue)")
                }
                kinds.append(kind)
            }
            guard !kinds.isEmpty else { throw UsageError("--kinds is empty") }
            generator = SyntheticPostbacks(kinds: kinds)
        } catch {
            io.printError("postback generate: \(error)\n\n\(usage)")
            return .usageOrIOError
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

    private static func loadOrCreateKey(_ path: String, create: Bool) throws -> ECDSAPrivateKey {
        do {
            return try ECDSAPrivateKey(pemRepresentation: try FileBytes.readText(path: path, limit: 1 << 20))
        } catch let error as FileBytes.ReadError {
            guard create else { throw UsageError("--key \(error)") }
            let key = try ECDSAPrivateKey(generatingOn: .p256)
            try DurableFile.write(Array(key.pemRepresentation.utf8), to: path, mode: 0o600)
            return key
        } catch {
            throw UsageError("--key \(path): not a private key PEM (\(error))")
        }
    }
}
