import Foundation
import PostbackCrypto
import Postbacks
import TestSupport
import Testing

@testable import Basics
@testable import PostbackStore

/// Spools written by earlier releases (`Tests/Fixtures/stores/`, one per record format, taken from
/// the receiver of the commit that wrote that format; Tests/Fixtures/README.md) read by today's
/// readers. Nothing regenerates them: a reader change that fails here breaks a store in the field.
@Suite struct StoredRecordFixtureTests {
    /// The test key the fixtures' development postbacks are signed with, trusted as the receivers
    /// that wrote them trusted it.
    static let verifier: PostbackVerifier = {
        let pem = try! String(contentsOfFile: FixtureStore.testKey, encoding: .utf8)
        let key = TrustedTestKey(name: "test:test-key.pem", key: try! ECDSAPrivateKey(pemRepresentation: pem).publicKey)
        return PostbackVerifier(policy: VerificationPolicy(allowsDevelopment: true, testKeys: [key]))
    }()

    /// Every line of every segment is a record of the store's format, in the spool its status belongs to.
    @Test(arguments: FixtureStore.readable)
    func everyLineIsARecordOfItsFormat(store: FixtureStore) throws {
        let segments = try store.segments()
        #expect(Set(segments.map(\.spool)).isSuperset(of: [.postbacks, .rejected]), "\(store.commit)")
        for segment in segments where segment.spool != .conflicts {
            let reader = try SegmentReader(path: segment.path)
            var records = 0
            while let entry = try reader.next() {
                guard case .record(let record, let line) = entry else {
                    Issue.record("\(segment.path): \(entry)")
                    continue
                }
                records += 1
                #expect(record.format == store.recordFormat, "\(segment.path):\(line)")
                switch segment.spool {
                case .postbacks:
                    #expect(record.status == .verified && record.attribution != nil, "\(segment.path):\(line)")
                case .rejected:
                    #expect(record.status != .verified && record.reason != nil, "\(segment.path):\(line)")
                case .unverifiable:
                    #expect(record.quarantine != nil && record.attribution == nil, "\(segment.path):\(line)")
                case .conflicts: break
                }
                // Recovery's fast scan finds the same dedup key as the full reader.
                let key = SpoolRecovery.dedupKey(ofLine: try segment.line(line))
                #expect(key == (record.status == .verified ? record.dedupKey : nil), "\(segment.path):\(line)")
            }
            #expect(records == (try segment.lines().count), "\(segment.path)")
        }
    }

    /// Conflict records (evidence of a copy with other unsigned values) read back, each naming the
    /// fields its line names.
    @Test func conflictRecordsStillRead() throws {
        var records = 0
        for store in FixtureStore.readable {
            for segment in try store.segments() where segment.spool == .conflicts {
                for line in try segment.lines() {
                    let object = try #require(try JSONSerialization.jsonObject(with: Data(line)) as? [String: Any])
                    let record = try ConflictRecord(line: line)
                    let fields = try #require(object["fields"] as? [[String: String]])
                    #expect(record.differences.map(\.field.rawValue) == fields.compactMap { $0["field"] })
                    #expect(record.differences.map(\.copy) == fields.compactMap { $0["copy"] })
                    #expect(record.dedupKey == object["dedup_key"] as? String)
                    records += 1
                }
            }
        }
        #expect(records > 0)
    }

    /// A stored postback's body verifies today as it did for the receiver that stored it: same
    /// environment, key and dedup key, and the same normalized fields as the record kept.
    @Test(arguments: FixtureStore.readable)
    func storedPostbacksVerifyTheSameToday(store: FixtureStore) throws {
        var checked = 0
        for segment in try store.segments() where segment.spool == .postbacks {
            for line in try segment.lines() {
                let record = try SpoolRecord(line: line)
                let today = Self.verifier.verify(body: record.body)
                #expect(today.isVerified, "\(store.commit): \(today.reason ?? "")")
                #expect(today.environment == record.environment && today.keyName == record.keyName)
                // Development keys carry `/development` since the dedup key took the environment; a
                // development record stored before keeps its key without it.
                let storedKey = record.dedupKey.map { key in
                    record.environment == .development && !key.hasSuffix("/development") ? key + "/development" : key
                }
                #expect(today.dedupKey == storedKey)
                #expect(today.postback?.attribution == record.attribution, "\(store.commit) \(record.dedupKey ?? "")")
                checked += 1
            }
        }
        #expect(checked >= 15, "\(store.commit)")
    }

    /// The first record a format 1 receiver wrote (no `format` key, no flags): every value the full
    /// reader returns is the one in the line, read here with Foundation's parser.
    @Test func aFormatOneRecordStillReads() throws {
        let store = try #require(FixtureStore.readable.first { $0.recordFormat == 1 })
        let segment = try #require(try store.segments().first { $0.spool == .postbacks })
        let line = try #require(try segment.lines().first)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line)) as? [String: Any])
        #expect(object["format"] == nil && object["flags"] == nil)
        let record = try SpoolRecord(line: line)
        #expect(record.format == 1)
        #expect(record.flags.isEmpty && record.quarantine == nil)
        #expect(record.receivedAt.description == object["received_at"] as? String)
        #expect(record.writer == object["writer"] as? String)
        #expect(record.route == object["route"] as? String)
        #expect(record.status.rawValue == object["status"] as? String)
        #expect(record.environment?.rawValue == object["environment"] as? String)
        #expect(record.dedupKey == object["dedup_key"] as? String)
        #expect(record.postbackProtocol?.rawValue == object["protocol"] as? String)
        #expect(record.version == object["version"] as? String)
        #expect(record.keyName == object["key"] as? String)
        #expect(record.body == Array(try #require(object["body"] as? String).utf8))
        let stored = try #require(object["attribution"] as? [String: Any])
        let attribution = try #require(record.attribution)
        #expect(Set(stored.keys) == Set(AttributionField.allCases.map(\.spoolKey)))
        for field in AttributionField.allCases {
            let value = stored[field.spoolKey]
            switch field.value(in: attribution) {
            case .string(let text): #expect(text == value as? String, "\(field)")
            case .integer(let number): #expect(number == (value as? NSNumber)?.int64Value, "\(field)")
            case .boolean(let flag): #expect(flag == (value as? NSNumber)?.boolValue, "\(field)")
            }
        }
    }

    /// Format 2 records keep what format 1 had no room for: flags, quarantine, a body kept as Base64.
    @Test func formatTwoRecordsKeepFlagsQuarantineAndBase64Bodies() throws {
        var flagged = 0
        var quarantined = 0
        var base64 = 0
        for store in FixtureStore.readable where store.recordFormat == 2 {
            for segment in try store.segments() where segment.spool != .conflicts {
                for line in try segment.lines() {
                    let object = try #require(try JSONSerialization.jsonObject(with: Data(line)) as? [String: Any])
                    let record = try SpoolRecord(line: line)
                    #expect(record.flags.count == (object["flags"] as? [Any])?.count ?? 0)
                    #expect(record.quarantine?.rawValue == object["quarantine"] as? String)
                    if let encoded = object["body_base64"] as? String {
                        #expect(record.body == Array(try #require(Data(base64Encoded: encoded))))
                        base64 += 1
                    }
                    flagged += record.flags.isEmpty ? 0 : 1
                    quarantined += record.quarantine == nil ? 0 : 1
                }
            }
        }
        #expect(flagged > 0 && quarantined > 0 && base64 > 0)
    }

    /// Record format 3 was reverted (each line ended in its CRC-32): today's readers refuse such a
    /// line as newer than they read and never misread it as a record. A future format takes another
    /// number, or reads these lines.
    @Test func theRevertedFormatThreeIsRefusedNotMisread() throws {
        let store = FixtureStore.reverted
        var lines = 0
        for segment in try store.segments() where segment.spool != .conflicts {
            for line in try segment.lines() {
                let object = try #require(try JSONSerialization.jsonObject(with: Data(line)) as? [String: Any])
                #expect(object["format"] as? Int == 3 && object["crc32"] is String)
                let refused = #expect(throws: StoredFormError.self) { try SpoolRecord(line: line) }
                #expect(refused?.code == .newerFormat)
                lines += 1
            }
            // Corrupt lines, the last one read as a torn tail (an unreadable last line): never a record.
            let reader = try SegmentReader(path: segment.path)
            while let entry = try reader.next() {
                if case .record(_, let line) = entry { Issue.record("\(segment.path):\(line) read as a record") }
            }
        }
        #expect(SpoolRecord.currentFormat < 3 && lines > 20)
    }

    /// Every key of every stored record is one the parser shares (`SpoolRecord.internedKeys`, from the
    /// declarations): a key added without its declaration shows here.
    @Test func everyStoredKeyIsInterned() throws {
        let interned = Set(SpoolRecord.internedKeys.keys)
        for store in FixtureStore.readable {
            for segment in try store.segments() where segment.spool != .conflicts {
                for line in try segment.lines() {
                    let object = try #require(try JSONSerialization.jsonObject(with: Data(line)) as? [String: Any])
                    #expect(Set(object.keys).isSubset(of: interned), "\(segment.path)")
                    if let attribution = object["attribution"] as? [String: Any] {
                        #expect(Set(attribution.keys).isSubset(of: interned), "\(segment.path)")
                    }
                }
            }
        }
    }
}
