import Foundation
import PostbackCrypto
import PostbackTesting
import Postbacks
import Testing

@testable import Basics
@testable import PostbackStore

/// Recovery's fast line scan against the definition of a valid line, `SpoolRecord(line:)`, and the
/// recovery segment scan against `SegmentReader`: generated records of every shape, seeded
/// mutations of them, and damaged segments.
@Suite struct RecoveryScanTests {
    static let key = try! ECDSAPrivateKey(generatingOn: .p256)
    static let signer = TestPostbackSigner(key: key)
    static let verifier = PostbackVerifier(
        policy: VerificationPolicy(
            allowsDevelopment: true, testKeys: [TrustedTestKey(name: "test:recovery.pem", key: key.publicKey)]))

    /// Records as the receiver writes them: verified postbacks of every synthetic kind, Apple's own
    /// production example, rejected bodies (malformed, non-UTF-8, escapes, non-ASCII) and bare records.
    static let lines: [[UInt8]] = {
        var records: [SpoolRecord] = []
        let synthetic = SyntheticPostbacks(kinds: [.skan4_0, .aak, .skan3_0, .skan2_2, .skan2_1])
        for index in 0..<60 {
            let body = try! signer.sign(synthetic.postback(index, seed: 77))
            records.append(
                SpoolRecord(
                    receivedAt: UTCTimestamp(microsecondsSinceEpoch: 1_764_681_255_000_000 + Int64(index) * 1_234_567),
                    writer: "rx-\(index % 3)", route: "skadnetwork-developer-copy",
                    result: verifier.verify(body: body), body: body))
        }
        let apple = SpoolFormatTests.skanBody
        records.append(
            SpoolRecord(receivedAt: .now(), writer: "rx", route: "ad-network", result: verifier.verify(body: apple), body: apple))
        let odd: [[UInt8]] = [
            Array(#"{"version":"4.0","ad-network-id":"x"#.utf8),
            [0xFF, 0xFE, 0x00, 0x7B],
            Array("{\"a\":\"tab\there\",\"b\":\"line\nbreak\",\"c\":\"\u{7}\",\"d\":\"é \u{2063} 😀\"}".utf8),
            Array(#"{"jws-string":"a.b.c","conversion-value":5}"#.utf8),
            [],
        ]
        for body in odd {
            records.append(
                SpoolRecord(
                    receivedAt: .now(), writer: "rx", route: "appattribution-developer-copy",
                    result: verifier.verify(body: body), body: body))
        }
        records.append(
            SpoolRecord(
                receivedAt: .now(), writer: "", route: "", status: .verified, environment: nil, dedupKey: nil,
                postbackProtocol: nil, version: nil, keyName: nil, reason: nil, attribution: nil, body: Array("{}".utf8)))
        return records.map { Array($0.encoded().dropLast()) }
    }()

    /// The invariant: when the scanner answers, the full parser accepts the line with the same status and key.
    static func agree(_ line: [UInt8]) -> (agrees: Bool, fast: Bool) {
        guard let verdict = SegmentScan.fastVerdict(line) else { return (true, false) }
        guard let record = try? SpoolRecord(line: line) else { return (false, true) }
        return (record.status == verdict.status && record.dedupKey == verdict.dedupKey, true)
    }

    @Test func everyRecordTheReceiverWritesTakesTheFastPathWithTheFullParsersAnswer() throws {
        var fast = 0
        for line in Self.lines {
            let record = try SpoolRecord(line: line)
            let verdict = SegmentScan.fastVerdict(line)
            if let verdict {
                fast += 1
                #expect(
                    verdict.status == record.status && verdict.dedupKey == record.dedupKey,
                    "\(String(decoding: line, as: UTF8.self))")
            }
            // The point of the fast path: every verified record with a UTF-8 body takes it.
            if record.status == .verified, record.attribution != nil {
                #expect(verdict != nil, "verified record left to the full parser: \(String(decoding: line, as: UTF8.self))")
            }
        }
        #expect(fast >= 61, "the 61 verified records")
    }

    @Test func mutatedLinesNeverGetAnAnswerTheFullParserWouldNotGive() {
        var random = SplitMix64(seed: 2026)
        let interesting: [UInt8] = Array("\"\\,:{}[]0189-.eE tnfu ".utf8) + [0x00, 0x1F, 0x7F, 0x80, 0xC3, 0xE2, 0xFF]
        var tried = 0
        var answered = 0
        var disagreements: [String] = []
        for line in Self.lines {
            for _ in 0..<400 {
                var mutated = line
                for _ in 0..<(1 + Int(random.next() % 3)) {
                    guard !mutated.isEmpty else { break }
                    let position = Int(random.next() % UInt64(mutated.count))
                    switch random.next() % 5 {
                    case 0: mutated[position] ^= UInt8(1) << UInt8(random.next() % 8)
                    case 1: mutated[position] = interesting[Int(random.next() % UInt64(interesting.count))]
                    case 2: mutated.remove(at: position)
                    case 3: mutated.insert(interesting[Int(random.next() % UInt64(interesting.count))], at: position)
                    default: mutated = Array(mutated.prefix(position))
                    }
                }
                tried += 1
                let result = Self.agree(mutated)
                if result.fast { answered += 1 }
                if !result.agrees { disagreements.append(String(decoding: mutated, as: UTF8.self)) }
            }
        }
        #expect(disagreements.isEmpty, "\(disagreements.count) of \(tried), first: \(disagreements.first ?? "")")
        // Mutations inside values (a digit, a letter of the body) keep many lines valid: the fast path
        // must have answered for a good share, or this test would prove nothing.
        #expect(answered > tried / 10, "fast path answered \(answered) of \(tried)")
    }

    @Test func edgeCasesGoToTheFullParserOrAgreeWithIt() throws {
        let base = String(decoding: Self.lines[0], as: UTF8.self)
        let record = try SpoolRecord(line: Self.lines[0])
        let fine = record.attribution?.fineValue.map(String.init) ?? "null"
        func variant(_ from: String, _ to: String) -> String {
            precondition(base.contains(from), "\(from) not in \(base)")
            return base.replacingOccurrences(of: from, with: to)
        }
        let cases: [String] = [
            variant(#""fine_value":\#(fine)"#, #""fine_value":1.0"#),
            variant(#""fine_value":\#(fine)"#, #""fine_value":01"#),
            variant(#""fine_value":\#(fine)"#, #""fine_value":-1"#),
            variant(#""fine_value":\#(fine)"#, #""fine_value":1e2"#),
            variant(#""fine_value":\#(fine)"#, #""fine_value":12345678901234567890"#),
            variant(#""fine_value":\#(fine)"#, #""fine_value":"7""#),
            base.replacing(/"app_id":[0-9]+/, with: #""app_id":null"#),
            base.replacing(/"app_id":[0-9]+/, with: #""app_id":"1""#),
            base.replacing(/"ad_network_id":"[^"]*"/, with: #""ad_network_id":null"#),
            base.replacing(/"conversion_type":"[a-z-]*"/, with: #""conversion_type":null"#),
            base.replacing(/"conversion_type":"[a-z-]*"/, with: #""conversion_type":"install""#),
            base.replacing(/"did_win":(true|false)/, with: #""did_win":1"#),
            base.replacing(/"test_mode":(true|false)/, with: #""test_mode":"false""#),
            base.replacing(/"attribution":\{"protocol":"[a-z]*"/, with: #""attribution":{"protocol":null"#),
            base.replacing(/"attribution":\{"protocol":"[a-z]*"/, with: #""attribution":{"protocol":"SKAdNetwork""#),
            variant(#""attribution":{"#, #""attribution":{"app_id":1,"#),
            variant(#""status":"verified""#, #""status":"verified","status":"verified""#),
            variant(#""status":"verified""#, #""status":"Verified""#),
            variant(#""received_at":"2025"#, #""received_at":"2025 "#),
            variant(#""writer":"rx-0""#, #""writer":7"#),
            variant(#""writer":"rx-0""#, #""writer":"r\u0078-0""#),
            variant(#""dedup_key":""#, #""dedup_key":"\u0041"#),
            variant(#""attribution":{"#, #""attribution":{"extra":1,"#),
            variant(#""attribution":{"#, #"   "attribution":{"#),
            variant(#","body":""#, #","body":"\ud800\udc00"#),
            variant(#","body":""#, #","body":"\ud800"#),
            variant(#","body":""#, #","body":"\u0000\/\b\f\n\r\t"#),
            variant(#","body":""#, #","body":"\x"#),
            variant(#","body":""#, #","body_base64":"AA==","body":""#),
            base + " ",
            base + "\r",
            "{" + base.dropFirst().replacingOccurrences(of: #""received_at""#, with: #""received_at" "#),
        ]
        for text in cases {
            #expect(text != base, "this case changes nothing")
            let result = Self.agree(Array(text.utf8))
            #expect(result.agrees, "\(text)")
        }
        // A \u escape in the body: left to the full parser (bodies the receiver writes are ASCII or
        // raw UTF-8), which must then agree.
        #expect(Self.agree(Array(variant(#","body":""#, #","body":"\u00e9\"\\"#).utf8)).agrees)
        // And values the fast path does take, still agreeing.
        for text in [
            variant(#""fine_value":\#(fine)"#, #""fine_value":0"#),
            variant(#""fine_value":\#(fine)"#, #""fine_value":999999999999999999"#),
        ] {
            let result = Self.agree(Array(text.utf8))
            #expect(result.agrees && result.fast, "\(text)")
        }
    }

    // MARK: Segments

    struct Scan: Equatable {
        var records = 0
        var keys: [String] = []
        var damage: [String] = []
    }

    /// What recovery learned from a segment before the fast path: `SegmentReader`, record by record.
    static func referenceScan(_ path: String) throws -> Scan {
        var scan = Scan()
        let reader = try SegmentReader(path: path)
        while let entry = try reader.next() {
            switch entry {
            case .record(let record, _):
                scan.records += 1
                if let key = record.dedupKey, record.status == .verified { scan.keys.append(key) }
            case .tornTail(let line, let bytes):
                scan.damage.append("\(line): torn tail (\(bytes) bytes), skipped")
            case .corrupt(let line, let reason):
                scan.damage.append("\(line): \(reason)")
            }
        }
        return scan
    }

    static func recoveryScan(_ path: String) -> Scan {
        let segment = SegmentScan(path: path)
        return Scan(records: segment.records, keys: segment.keys, damage: segment.damage.map { "\($0.line): \($0.problem)" })
    }

    @Test func recoveryScanAgreesWithSegmentReaderOnDamagedSegments() throws {
        let directory = NSTemporaryDirectory() + "recovery-scan-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let newline: [UInt8] = [0x0A]
        let good = Self.lines.flatMap { $0 + newline }
        let one = Self.lines[0]
        var random = SplitMix64(seed: 5)
        var segments: [(String, [UInt8])] = [
            ("clean", good),
            ("empty", []),
            ("torn without newline", good + one.prefix(100)),
            ("torn with newline", good + one.prefix(100) + newline),
            ("corrupt middle line", one + newline + Array("{\"not\":\"a record\"}\n".utf8) + one + newline),
            ("blank lines", newline + one + newline + newline),
            ("CRLF", one + [0x0D, 0x0A] + one + [0x0D, 0x0A]),
            (
                "too long",
                one + newline + [UInt8](repeating: 0x41, count: SegmentReader.maximumLineBytes + 10) + newline + one + newline
            ),
            ("only a torn line", Array(one.prefix(10))),
            // A power cut: a page of an unsynced write read back as zeros, a later page of it kept.
            ("zeros a power cut left", good + [UInt8](repeating: 0, count: 300) + one.suffix(200) + newline + one + newline),
        ]
        for trial in 0..<20 {
            var bytes = good
            for _ in 0..<5 { bytes[Int(random.next() % UInt64(bytes.count))] ^= UInt8(1) << UInt8(random.next() % 8) }
            bytes = Array(bytes.prefix(bytes.count - Int(random.next() % 2000)))
            segments.append(("bit flips and a cut \(trial)", bytes))
        }
        for (name, bytes) in segments {
            let path = "\(directory)/\(segments.firstIndex { $0.0 == name }!).jsonl"
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            let reference = try Self.referenceScan(path)
            #expect(Self.recoveryScan(path) == reference, "\(name)")
        }
        #expect(SegmentScan(path: directory + "/missing.jsonl").unreadable != nil)
    }

    @Test func recoveryOfAStoreFindsEveryKeyOnce() throws {
        let root = NSTemporaryDirectory() + "recovery-store-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let layout = StoreLayout(root: root)
        var expected: Set<String> = []
        for (writer, sequence) in [("rx1", 1), ("rx1", 2), ("rx2", 7)] {
            let directory = layout.partition(.postbacks, day: UTCDay("2026-12-01")!)
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let lines = Self.lines
            for line in lines {
                if let record = try? SpoolRecord(line: line), record.status == .verified, let key = record.dedupKey {
                    expected.insert(key)
                }
            }
            let bytes = lines.flatMap { $0 + [0x0A] } + Array(#"{"received_at":"#.utf8)
            try Data(bytes).write(
                to: URL(fileURLWithPath: directory + "/" + StoreLayout.segmentName(writer: writer, sequence: sequence)))
        }
        let recovery = try SpoolRecovery.scan(layout: layout, writerID: "rx1")
        #expect(recovery.nextSequence[.postbacks] == 3)
        #expect(recovery.dedupIndex.count == expected.count, "the same keys in three segments count once")
        for key in expected { #expect(recovery.dedupIndex.contains(key)) }
        #expect(recovery.damage.count == 3, "one torn tail per segment")
        #expect(recovery.damage.allSatisfy { $0.problem.hasPrefix("torn tail") })
    }
}
