import Aggregation
import Basics
import PostbackCrypto
import PostbackTesting
import Postbacks

/// `postback generate`: mint postbacks signed with a test key, as JSON Lines on stdout.
enum GenerateCommand {
    static let usage = """
        usage: postback generate --key PEM [--create-key] [--count N] [--kinds LIST] [--seed N] [--start N]
                                 [--app ID]... [--schema FILE] [--ad-network ID]... [--source-identifier NNNN]...
                                 [--null-share P] [--reengagement-share P] [--windows LIST]

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

        Shaping the traffic like your own (each default is a mix of three apps, four networks and
        twenty campaigns with every value):
          --app ID                 advertised app id (repeatable)
          --schema FILE            a conversion schema (docs/aggregate.md): its app, the fine values it
                                   maps (common values first) and the ad networks of its source maps
          --ad-network ID          ad network id, as in the postback (repeatable)
          --source-identifier NNNN four-digit source identifier (repeatable; SKAdNetwork 4.0 keeps two
                                   to four trailing digits, as Apple does at lower crowd-anonymity tiers)
          --null-share P           share of winning postbacks without a conversion value, 0 to 1 (0.2)
          --reengagement-share P   share of AdAttributionKit postbacks that are re-engagements (0.25)
          --windows LIST           postback windows to draw from, e.g. 0 or 0,1,2 (0,1,2)
        Earlier values of a list are drawn more often (Zipf-like), as campaigns and values are.

        Exit status: 0 written; 2 usage, key or I/O error.
        """

    static let syntax = CommandSyntax(
        "generate", usage: usage, flags: ["--create-key"],
        options: [
            "--key", "--count", "--kinds", "--seed", "--start", "--app", "--schema", "--ad-network", "--source-identifier",
            "--null-share", "--reengagement-share", "--windows",
        ])

    static func run(_ words: [String], io: CommandIO) -> ExitStatus {
        let signer: TestPostbackSigner
        let count: Int
        let start: Int
        let seed: UInt64
        let generator: SyntheticPostbacks
        do {
            let arguments = try syntax.parse(words)
            guard let keyPath = arguments.value("--key") else {
                throw CommandError.usage("--key PEM is required (add --create-key to make a new one)")
            }
            count = try arguments.integer("--count", default: 1000, in: 0...100_000_000)
            start = try arguments.integer("--start", default: 0, in: 0...Int.max / 2)
            seed = UInt64(try arguments.integer("--seed", default: 1, in: 0...Int.max))
            var kinds: [SyntheticPostbacks.Kind] = []
            for name in (arguments.value("--kinds") ?? "3.0,4.0,aak").split(separator: ",") {
                guard let kind = SyntheticPostbacks.Kind(rawValue: String(name)) else {
                    throw CommandError.usage(
                        "unknown kind '\(name)' in --kinds (known: \(SyntheticPostbacks.Kind.allCases.map(\.rawValue).joined(separator: ", ")))"
                    )
                }
                kinds.append(kind)
            }
            guard !kinds.isEmpty else { throw CommandError.usage("--kinds is empty") }
            // SKAdNetwork 1.0 and 2.0 are signed with P-192, everything later with P-256: one key cannot do both.
            let needsP192 = kinds.map { $0 == .skan1_0 || $0 == .skan2_0 }
            guard Set(needsP192).count == 1 else {
                throw CommandError.usage(
                    "--kinds mixes 1.0/2.0 (signed with P-192) and later kinds (P-256); one key cannot sign both: "
                        + "run generate twice, with two keys (e.g. --key p192.pem --create-key --kinds 1.0,2.0)")
            }
            let curve: Curve = needsP192[0] ? .p192 : .p256
            signer = TestPostbackSigner(key: try loadOrCreateKey(keyPath, curve: curve, create: arguments.has("--create-key")))
            guard signer.key.curve == curve else {
                throw CommandError.usage(
                    "--kinds \(kinds.map(\.rawValue).joined(separator: ",")) needs a \(curve.rawValue) key; --key \(keyPath) is \(signer.key.curve.rawValue) "
                        + "(give a new file with --create-key to make a \(curve.rawValue) key)")
            }
            generator = try shapedTraffic(SyntheticPostbacks(kinds: kinds), arguments)
        } catch {
            return syntax.finish(error, io: io)
        }

        let failed = AtomicFlag()
        let map = OrderedParallelMap<Range<Int>, [UInt8]>(
            workers: ProcessInfoCores.count,
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

    /// Applies the traffic-shaping options to the default mix.
    static func shapedTraffic(_ base: SyntheticPostbacks, _ arguments: Arguments) throws -> SyntheticPostbacks {
        var traffic = base
        var apps: [Int64] = []
        for text in arguments.values("--app") {
            guard let app = Int64(text), app > 0 else {
                throw CommandError.usage("--app must be a numeric app id, got '\(text)'")
            }
            apps.append(app)
        }
        var networks = arguments.values("--ad-network")
        if let path = arguments.value("--schema") {
            let schema: ConversionSchema
            do {
                schema = try ConversionSchema(contentsOf: path)
            } catch {
                throw CommandError.usage(
                    "--schema \(path) is not a valid conversion schema (check it with 'postback schema check \(path)'):\n\(error)"
                )
            }
            if apps.isEmpty { apps = [schema.appID] }
            let mapped = (schema.windows.first?.fine ?? []).enumerated().compactMap { $0.element == nil ? nil : $0.offset }
            if !mapped.isEmpty { traffic.fineValues = mapped }
            if networks.isEmpty { networks = schema.sourceIdentifierMaps.map(\.adNetworkID) }
        }
        if !apps.isEmpty { traffic.apps = apps }
        for network in networks where network.isEmpty || network.utf8.count > 255 {
            throw CommandError.usage("--ad-network must be 1 to 255 characters, got '\(network)'")
        }
        if !networks.isEmpty { traffic.adNetworkIDs = networks }
        let sources = arguments.values("--source-identifier")
        for source in sources where source.utf8.count != 4 || !source.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
            throw CommandError.usage("--source-identifier must be four digits (0000 to 9999), got '\(source)'")
        }
        if !sources.isEmpty { traffic.sourceIdentifiers = sources }
        func share(_ option: String) throws -> Double? {
            guard let text = arguments.value(option) else { return nil }
            guard let value = Double(text), (0...1).contains(value) else {
                throw CommandError.usage("\(option) must be a number from 0 to 1, got '\(text)'")
            }
            return value
        }
        traffic.nullShare = try share("--null-share")
        traffic.reengagementShare = try share("--reengagement-share")
        if let list = arguments.value("--windows") {
            let windows = list.split(separator: ",").compactMap { Int($0) }
            guard !windows.isEmpty, windows.count == list.split(separator: ",").count, windows.allSatisfy((0...2).contains) else {
                throw CommandError.usage("--windows must list postback windows 0, 1 or 2, e.g. 0,1,2; got '\(list)'")
            }
            traffic.windows = windows
        }
        return traffic
    }

    private static func loadOrCreateKey(_ path: String, curve: Curve, create: Bool) throws -> ECDSAPrivateKey {
        try CoreDumpProtection.holdPrivateKey()  // a test key, but a private key all the same
        do {
            return try ECDSAPrivateKey(pemRepresentation: try FileBytes.readText(path: path, limit: 1 << 20))
        } catch let error as FileBytes.ReadError {
            guard create, UserPaths.kind(of: path) == .missing else {
                throw CommandError.usage(
                    "--key \(error)"
                        + (UserPaths.kind(of: path) == .missing ? "; add --create-key to create a new key there" : ""))
            }
            try UserPaths.requireOutputFile(path, option: "--key")
            let key = try ECDSAPrivateKey(generatingOn: curve)
            try DurableFile.write(Array(key.pemRepresentation.utf8), to: path, mode: 0o600)
            return key
        } catch {
            throw CommandError.usage("--key \(path): not a private key PEM (\(error))")
        }
    }
}
