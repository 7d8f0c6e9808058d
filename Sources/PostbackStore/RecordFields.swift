package import Basics
package import Postbacks

// The fields of a stored postback, declared once. The spool writer and reader (`SpoolRecord`), the
// fast line parser (`FastRead/`), the aggregate tables' column names and the Spark job's record
// schema (spark/record-schema.json, exported from these tables and checked by a test) all iterate
// these lists. Declaration order is the order the writer emits keys in: append, never reorder
// (the fast parser expects this order, and readers of old records rely on the names).

/// The top-level keys of a spool record (`SpoolRecord.encoded()`), in the order they are written.
/// Which ones a record has depends on its kind (see `SpoolRecord`); `sinceFormat` is the record
/// format that introduced the key.
package enum RecordKey: Int, CaseIterable, Sendable {
    case format, receivedAt, writer, route, status, environment, dedupKey, postbackProtocol, version, key, reason, client
    case quarantine, attribution, bodyKept, bodySHA256, bodyBytes, flags, body, bodyBase64

    package var spoolKey: String {
        switch self {
        case .format: return "format"
        case .receivedAt: return "received_at"
        case .writer: return "writer"
        case .route: return "route"
        case .status: return "status"
        case .environment: return "environment"
        case .dedupKey: return "dedup_key"
        case .postbackProtocol: return "protocol"
        case .version: return "version"
        case .key: return "key"
        case .reason: return "reason"
        case .client: return "client"
        case .quarantine: return "quarantine"
        case .attribution: return "attribution"
        case .bodyKept: return "body_kept"
        case .bodySHA256: return "body_sha256"
        case .bodyBytes: return "body_bytes"
        case .flags: return "flags"
        case .body: return "body"
        case .bodyBase64: return "body_base64"
        }
    }

    /// The JSON type of the value (`object`/`array` for the nested ones).
    package var valueType: RecordValueType {
        switch self {
        case .format, .bodyBytes: return .integer
        case .attribution: return .object
        case .flags: return .array
        case .receivedAt, .writer, .route, .status, .environment, .dedupKey, .postbackProtocol, .version, .key, .reason,
            .client, .quarantine, .bodyKept, .bodySHA256, .body, .bodyBase64:
            return .string
        }
    }

    /// The record format that introduced the key (format 1 records have no `format` key).
    package var sinceFormat: Int {
        switch self {
        // `client` and the `body_*` keys of rejected records came after format 2 and only with it.
        case .format, .quarantine, .flags, .client, .bodyKept, .bodySHA256, .bodyBytes: return 2
        case .receivedAt, .writer, .route, .status, .environment, .dedupKey, .postbackProtocol, .version, .key, .reason,
            .attribution, .body, .bodyBase64:
            return 1
        }
    }
}

/// JSON value types of the record's fields.
package enum RecordValueType: String, Sendable {
    case string, integer, boolean, object, array
}

/// One attribution field's stored value, typed as the field declares it (`valueType`; a choice is
/// its text); nil is `null`.
package enum AttributionValue: Equatable, Sendable {
    case string(String?)
    case integer(Int64?)
    case boolean(Bool?)
}

/// The members of a record's `attribution` object: the normalized fields of a verified postback
/// that aggregation groups by (`Attribution`), in the order they are written. `null` stands for
/// absent; every member is written on every record.
package enum AttributionField: Int, CaseIterable, Sendable {
    case postbackProtocol, version, appID, adNetworkID, campaignID, sourceIdentifier, sourceAppID, sourceDomain, marketplaceID
    case countryCode, interaction, conversionType, sequenceIndex, didWin, fineValue, coarseValue, testMode

    /// The member name in the spool record's `attribution` object.
    package var spoolKey: String {
        switch self {
        case .postbackProtocol: return "protocol"
        case .version: return "version"
        case .appID: return "app_id"
        case .adNetworkID: return "ad_network_id"
        case .campaignID: return "campaign_id"
        case .sourceIdentifier: return "source_identifier"
        case .sourceAppID: return "source_app_id"
        case .sourceDomain: return "source_domain"
        case .marketplaceID: return "marketplace_id"
        case .countryCode: return "country_code"
        case .interaction: return "interaction"
        case .conversionType: return "conversion_type"
        case .sequenceIndex: return "postback_sequence_index"
        case .didWin: return "did_win"
        case .fineValue: return "fine_value"
        case .coarseValue: return "coarse_value"
        case .testMode: return "test_mode"
        }
    }

    /// The column of `campaign_daily` (and, for dimensions, `campaign_events_daily`) that shows the
    /// field; nil when no column does (test mode only decides which count a postback goes to).
    package var column: String? {
        switch self {
        case .fineValue: return "fine_cv"
        case .coarseValue: return "coarse_cv"
        case .testMode: return nil
        case .postbackProtocol, .version, .appID, .adNetworkID, .campaignID, .sourceIdentifier, .sourceAppID, .sourceDomain,
            .marketplaceID, .countryCode, .interaction, .conversionType, .sequenceIndex, .didWin:
            return spoolKey
        }
    }

    package var valueType: RecordValueType {
        switch self {
        case .appID, .campaignID, .sourceAppID, .sequenceIndex, .fineValue: return .integer
        case .didWin, .testMode: return .boolean
        case .postbackProtocol, .version, .adNetworkID, .sourceIdentifier, .sourceDomain, .marketplaceID, .countryCode,
            .interaction, .conversionType, .coarseValue:
            return .string
        }
    }

    /// The values a string field may take (a record with another is not valid); nil for any string.
    package var choices: [String]? {
        switch self {
        case .postbackProtocol: return PostbackProtocol.allCases.map(\.rawValue)
        case .interaction: return AdInteraction.allCases.map(\.rawValue)
        case .conversionType: return ConversionType.allCases.map(\.rawValue)
        case .coarseValue: return CoarseConversionValue.allCases.map(\.rawValue)
        case .version, .appID, .adNetworkID, .campaignID, .sourceIdentifier, .sourceAppID, .sourceDomain, .marketplaceID,
            .countryCode, .sequenceIndex, .didWin, .fineValue, .testMode:
            return nil
        }
    }

    /// A record's attribution without it is not valid.
    package var isRequired: Bool {
        self == .postbackProtocol || self == .appID || self == .adNetworkID || self == .conversionType
    }

    /// Apple signed the value it comes from (it decides nothing about authenticity once stored,
    /// but an unsigned value may have been normalized or dropped and flagged).
    package var isSigned: Bool {
        switch self {
        case .countryCode, .fineValue, .coarseValue: return false
        // `interaction` is the signed `fidelity-type` (SKAdNetwork 2.2+) or the JWS `ad-interaction-type`.
        case .postbackProtocol, .version, .appID, .adNetworkID, .campaignID, .sourceIdentifier, .sourceAppID, .sourceDomain,
            .marketplaceID, .interaction, .conversionType, .sequenceIndex, .didWin, .testMode:
            return true
        }
    }

    /// Which postbacks carry the field (for docs and the export; the models decide).
    package var carriedBy: String {
        switch self {
        case .postbackProtocol, .appID, .adNetworkID, .conversionType, .countryCode: return "all"
        case .version: return "SKAdNetwork"
        case .campaignID: return "SKAdNetwork 1.0-3.0"
        case .sourceIdentifier: return "SKAdNetwork 4.0, AdAttributionKit"
        case .sourceAppID: return "SKAdNetwork 2.0+, AdAttributionKit"
        case .sourceDomain: return "SKAdNetwork 4.0"
        case .marketplaceID: return "AdAttributionKit"
        case .interaction: return "SKAdNetwork 2.2+, AdAttributionKit"
        case .sequenceIndex: return "SKAdNetwork 4.0, AdAttributionKit"
        case .didWin: return "SKAdNetwork 3.0+, AdAttributionKit"
        case .fineValue: return "SKAdNetwork 2.0+, AdAttributionKit"
        case .coarseValue: return "SKAdNetwork 4.0, AdAttributionKit"
        case .testMode: return "SKAdNetwork"
        }
    }

    /// The value the record stores for this field of `attribution` (a choice as its text).
    package func value(in attribution: Attribution) -> AttributionValue {
        switch self {
        case .postbackProtocol: return .string(attribution.postbackProtocol.rawValue)
        case .version: return .string(attribution.version)
        case .appID: return .integer(attribution.appID)
        case .adNetworkID: return .string(attribution.adNetworkID)
        case .campaignID: return .integer(attribution.campaignID)
        case .sourceIdentifier: return .string(attribution.sourceIdentifier)
        case .sourceAppID: return .integer(attribution.sourceAppID)
        case .sourceDomain: return .string(attribution.sourceDomain)
        case .marketplaceID: return .string(attribution.marketplaceID)
        case .countryCode: return .string(attribution.countryCode)
        case .interaction: return .string(attribution.interaction?.rawValue)
        case .conversionType: return .string(attribution.conversionType.rawValue)
        case .sequenceIndex: return .integer(Int64(attribution.postbackSequenceIndex))
        case .didWin: return .boolean(attribution.didWin)
        case .fineValue: return .integer(attribution.fineValue.map { Int64($0) })
        case .coarseValue: return .string(attribution.coarseValue?.rawValue)
        case .testMode: return .boolean(attribution.isTestMode)
        }
    }

    /// What a record without the member (or with `null`) reads as, for the fields whose model value
    /// is not optional (`read(from:into:)` leaves the model's default); nil: absent.
    package var valueWhenAbsent: AttributionValue? {
        switch self {
        case .sequenceIndex: return .integer(0)
        case .testMode: return .boolean(false)
        case .postbackProtocol, .version, .appID, .adNetworkID, .campaignID, .sourceIdentifier, .sourceAppID, .sourceDomain,
            .marketplaceID, .countryCode, .interaction, .conversionType, .didWin, .fineValue, .coarseValue:
            return nil
        }
    }

    /// `choices`, computed once per field (the readers look them up per record).
    package static let declaredChoices: [[String]?] = allCases.map(\.choices)

    /// Writes this member of `attribution`'s object.
    func write(_ attribution: Attribution, to json: inout JSONWriter) {
        switch value(in: attribution) {
        case .string(let text): json.field(spoolKey, text)
        case .integer(let number): json.field(spoolKey, number)
        case .boolean(let flag): json.field(spoolKey, flag)
        }
    }

    /// Reads this member from `object` into `attribution` (absent or `null` leaves the default).
    func read(from object: JSONObject, into attribution: inout Attribution) throws(StoredFormError) {
        let member = AttributionMember(object: object, key: spoolKey)
        switch self {
        case .postbackProtocol, .appID, .adNetworkID, .conversionType:
            break  // required: read by `Attribution(spoolJSON:)` before the others
        case .version: attribution.version = try member.string()
        case .campaignID: attribution.campaignID = try member.integer()
        case .sourceIdentifier: attribution.sourceIdentifier = try member.string()
        case .sourceAppID: attribution.sourceAppID = try member.integer()
        case .sourceDomain: attribution.sourceDomain = try member.string()
        case .marketplaceID: attribution.marketplaceID = try member.string()
        case .countryCode: attribution.countryCode = try member.string()
        case .interaction: attribution.interaction = try member.choice(AdInteraction.self)
        case .sequenceIndex: attribution.postbackSequenceIndex = Int(try member.integer() ?? 0)
        case .didWin: attribution.didWin = try member.bool()
        case .fineValue: attribution.fineValue = (try member.integer()).map { Int($0) }
        case .coarseValue: attribution.coarseValue = try member.choice(CoarseConversionValue.self)
        case .testMode: attribution.isTestMode = try member.bool() ?? false
        }
    }
}

extension Attribution {
    /// Writes the `attribution` object of a spool record: every `AttributionField`, in order; absent values are `null`.
    package func writeSpoolJSON(to json: inout JSONWriter) {
        json.beginObject()
        for field in AttributionField.allCases { field.write(self, to: &json) }
        json.endObject()
    }

    /// Reads the object `writeSpoolJSON(to:)` produced.
    package init(spoolJSON object: JSONObject) throws(StoredFormError) {
        func member(_ field: AttributionField) -> AttributionMember { AttributionMember(object: object, key: field.spoolKey) }
        guard let postbackProtocol = try member(.postbackProtocol).choice(PostbackProtocol.self),
            let appID = try member(.appID).integer(), let adNetworkID = try member(.adNetworkID).string(),
            let conversionType = try member(.conversionType).choice(ConversionType.self)
        else {
            let required = AttributionField.allCases.filter(\.isRequired).map(\.spoolKey)
            throw StoredFormError(
                .missing, member: "attribution",
                "attribution lacks " + required.dropLast().joined(separator: ", ") + " or " + required.last!)
        }
        self.init(
            postbackProtocol: postbackProtocol, version: nil, appID: appID, adNetworkID: adNetworkID,
            conversionType: conversionType)
        for field in AttributionField.allCases { try field.read(from: object, into: &self) }
    }
}

/// One member of a record's `attribution` object, read as the type its field declares.
private struct AttributionMember {
    let object: JSONObject
    let key: String

    func string() throws(StoredFormError) -> String? {
        switch object[key] {
        case nil, .null?: return nil
        case .string(let value)?: return value
        default: throw StoredFormError(.invalid, member: "attribution.\(key)", "attribution.\(key) must be a string")
        }
    }

    func integer() throws(StoredFormError) -> Int64? {
        switch object[key] {
        case nil, .null?: return nil
        case .number(let number)?:
            guard let value = number.int64Value else {
                throw StoredFormError(.invalid, member: "attribution.\(key)", "attribution.\(key) must be an integer")
            }
            return value
        default: throw StoredFormError(.invalid, member: "attribution.\(key)", "attribution.\(key) must be an integer")
        }
    }

    func bool() throws(StoredFormError) -> Bool? {
        switch object[key] {
        case nil, .null?: return nil
        case .bool(let value)?: return value
        default: throw StoredFormError(.invalid, member: "attribution.\(key)", "attribution.\(key) must be a boolean")
        }
    }

    func choice<T: RawRepresentable<String>>(_ type: T.Type) throws(StoredFormError) -> T? {
        guard let text = try string() else { return nil }
        guard let value = T(rawValue: text) else {
            throw StoredFormError(.unknownValue, member: "attribution.\(key)", "attribution.\(key) has unknown value \"\(text)\"")
        }
        return value
    }
}
