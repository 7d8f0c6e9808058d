import PostbackStore
import Postbacks

/// A rejected record, as far as aggregation counts it: what it claims to be, and why it failed.
struct RejectedRecordFacts {
    var status: VerificationStatus
    var reason: String?
    var appID: Int64?
    var postbackProtocol: PostbackProtocol?
    var version: String?
    var adNetworkID: String?
}

/// Turns one spool line into what aggregation needs, by the fast path when it can and by
/// `SpoolRecord(line:)` (the definition of a valid line) otherwise.
///
/// Rules on top of the record format: a record in `raw/rejected/` is always counted as rejected; one
/// in `raw/postbacks/` counts as a postback only if its status is `verified`, it is not quarantined, and it has a dedup key
/// and attribution (both are recovered from the stored body when missing); a postback sequence index
/// outside 0–2 or a fine value outside 0–63 makes the line corrupt, since no verified postback has one.
final class SpoolLineDecoder {
    enum Outcome {
        /// The summary passed in is filled; `inScratch`: its byte slices point into `scratch`, not into the line.
        case verified(inScratch: Bool)
        case rejected(RejectedRecordFacts)
        case corrupt(reason: String)
    }

    /// Backing bytes for summaries built by the slow path.
    private(set) var scratch: [UInt8] = []
    private let literals = SpoolLiterals.shared
    private(set) var fastPathLines = 0
    private(set) var slowPathLines = 0

    func decode(_ line: UnsafeRawBufferPointer, spool: StoreLayout.Spool, into summary: inout SpoolLineSummary) -> Outcome {
        if spool == .postbacks, FastSpoolLineParser.parse(line, into: &summary, literals: literals) {
            if let problem = Self.check(summary) { return .corrupt(reason: problem) }
            if summary.dedupKey != nil, summary.hasFields {
                fastPathLines += 1
                return .verified(inScratch: false)
            }
        }
        slowPathLines += 1
        let record: SpoolRecord
        do {
            record = try SpoolRecord(line: Array(line))
        } catch {
            return .corrupt(reason: error.description)
        }
        // A quarantined record is never counted, wherever it is found.
        if spool == .rejected || record.status != .verified || record.quarantine != nil {
            let attribution = record.attribution
            return .rejected(
                RejectedRecordFacts(
                    status: record.status, reason: record.reason,
                    appID: attribution?.appID, postbackProtocol: attribution?.postbackProtocol ?? record.postbackProtocol,
                    version: attribution?.version ?? record.version, adNetworkID: attribution?.adNetworkID))
        }
        var attribution = record.attribution
        var dedupKey = record.dedupKey
        if attribution == nil || dedupKey == nil {
            // An older or minimal record: the body was verified when stored, so its fields can be read again.
            guard let postback = try? Postback(body: record.body) else {
                return .corrupt(
                    reason:
                        "verified record without \(attribution == nil ? "attribution" : "dedup_key"), and its body does not parse"
                )
            }
            attribution = attribution ?? postback.attribution
            dedupKey = dedupKey ?? postback.dedupKey
        }
        guard let attribution, let dedupKey else { return .corrupt(reason: "verified record without attribution") }
        summary = summarize(record, attribution: attribution, dedupKey: dedupKey)
        if let problem = Self.check(summary) { return .corrupt(reason: problem) }
        return .verified(inScratch: true)
    }

    private static func check(_ summary: SpoolLineSummary) -> String? {
        guard summary.hasFields else { return nil }
        return FieldSlots.reading(summary.fields) { fields in
            let sequenceIndex = fields.integer(.sequenceIndex) ?? 0
            if !(0...2).contains(sequenceIndex) {
                return "attribution.postback_sequence_index \(sequenceIndex) is not 0, 1 or 2"
            }
            if let fine = fields.integer(.fineValue), !(0...63).contains(fine) {
                return "attribution.fine_value \(fine) is not 0–63"
            }
            return nil
        }
    }

    private func summarize(_ record: SpoolRecord, attribution: Attribution, dedupKey: String) -> SpoolLineSummary {
        scratch.removeAll(keepingCapacity: true)
        let fields = PostbackFields(attribution, storingTextIn: &scratch)
        return SpoolLineSummary(
            receivedAtMicros: record.receivedAt.microsecondsSinceEpoch,
            isProduction: record.environment == .production, isFlagged: !record.flags.isEmpty,
            dedupKey: ByteSlice.appending(dedupKey, to: &scratch), hasFields: true, fields: fields)
    }
}
