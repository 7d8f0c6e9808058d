package import Basics
package import Postbacks

/// One line of the store: a received postback, its verdict, and the body exactly as received.
///
///     {"received_at":"2026-12-02T13:14:15.123456Z","writer":"rx1","route":"skadnetwork-developer-copy",
///      "status":"verified","environment":"production","dedup_key":"6aafb7a5-…:0","protocol":"skadnetwork",
///      "version":"4.0","key":"apple-skadnetwork-p256","attribution":{…},"body":"{\"version\":\"4.0\",…}"}
///
/// Verified postbacks go to `raw/postbacks/`; what cannot be judged or counted yet (an unknown
/// version or `kid`, a signed value we do not know) to `raw/unverifiable/` with `quarantine` and
/// `reason`; everything else (with `reason`) to `raw/rejected/`.
/// `attribution` (the normalized fields, see `Attribution`) is present for parsed postbacks that may
/// be counted, so the nightly job need not re-parse Apple's JSON; `body` keeps the original for audits
/// and re-verification. A body that is not UTF-8 is kept as `body_base64` instead.
///
/// Format 2 (this release) writes `"format":2` first and `flags` (values not taken as sent, see
/// `PostbackFlag`) when there are any; format 1 records (no `format` key) are read as before.
package struct SpoolRecord: Sendable, Equatable {
    /// The record layout this release writes; it reads this one and every earlier one.
    package static let currentFormat = 2

    /// The record's keys and its attribution object's, as declared (`RecordKey`, `AttributionField`):
    /// `StrictJSONParser` returns them as shared strings.
    package static let internedKeys = InternedKeys(
        RecordKey.allCases.map(\.spoolKey) + AttributionField.allCases.map(\.spoolKey))

    package var format: Int = SpoolRecord.currentFormat
    package var receivedAt: UTCTimestamp
    /// The receiver process that wrote the record (several may share a store).
    package var writer: String
    /// Which endpoint received it, e.g. `skadnetwork-developer-copy`, `ad-network`, `file-import`.
    package var route: String
    package var status: VerificationStatus
    package var environment: PostbackEnvironment?
    package var dedupKey: String?
    package var postbackProtocol: PostbackProtocol?
    package var version: String?
    package var keyName: String?
    /// Why it was rejected; nil for verified postbacks.
    package var reason: String?
    package var attribution: Attribution?
    /// Values not taken exactly as sent (format 2; none in older records).
    package var flags: [PostbackFlag] = []
    /// Why it is in `raw/unverifiable/` (format 2).
    package var quarantine: QuarantineReason?
    /// The HTTP body exactly as received (for a rejected record with `bodyReduction`, what was kept of it).
    package var body: [UInt8]
    /// Rejected records only: the client's address (the socket's peer, or the one a trusted proxy named).
    /// Never written for verified postbacks.
    package var client: String? = nil
    /// Rejected records only: set when the body was not kept whole (see `BodyReduction`).
    package var bodyReduction: BodyReduction? = nil

    /// How a rejected record's body was cut down so that junk cannot fill the disk: `prefix` keeps its
    /// first bytes (the body was over the size limit), `none` keeps nothing (the day's budget for
    /// rejected bodies is spent). Either way the whole body's SHA-256 and size are kept.
    package struct BodyReduction: Sendable, Equatable {
        package enum Kept: String, Sendable { case prefix, none }
        package var kept: Kept
        /// Lower-case hex SHA-256 of the whole body.
        package var sha256: String
        package var byteCount: Int

        package init(kept: Kept, sha256: String, byteCount: Int) {
            self.kept = kept
            self.sha256 = sha256
            self.byteCount = byteCount
        }
    }

    package init(
        receivedAt: UTCTimestamp, writer: String, route: String, status: VerificationStatus,
        environment: PostbackEnvironment?, dedupKey: String?, postbackProtocol: PostbackProtocol?,
        version: String?, keyName: String?, reason: String?, attribution: Attribution?, body: [UInt8]
    ) {
        self.receivedAt = receivedAt
        self.writer = writer
        self.route = route
        self.status = status
        self.environment = environment
        self.dedupKey = dedupKey
        self.postbackProtocol = postbackProtocol
        self.version = version
        self.keyName = keyName
        self.reason = reason
        self.attribution = attribution
        self.body = body
    }

    /// A record for a verifier's verdict on `body`. A `reason` given here overrides the verifier's
    /// (for rejections the receiver makes itself: a foreign ad network, development not allowed).
    /// A quarantined postback gets no `attribution`: it is never counted as it stands, and an
    /// unknown signed value has no place among the normalized fields.
    package init(
        receivedAt: UTCTimestamp, writer: String, route: String, result: VerificationResult, body: [UInt8],
        status: VerificationStatus? = nil, reason: String? = nil
    ) {
        let quarantine = result.quarantineReason
        self.init(
            receivedAt: receivedAt, writer: writer, route: route, status: status ?? result.status,
            environment: result.environment, dedupKey: result.dedupKey, postbackProtocol: result.postbackProtocol,
            version: result.version, keyName: result.keyName, reason: reason ?? result.reason,
            attribution: quarantine == nil ? result.postback?.attribution : nil, body: body)
        self.flags = result.flags
        self.quarantine = quarantine
    }

    /// The record as one JSON line, newline included.
    package func encoded() -> [UInt8] {
        // The body is written escaped (each `"` in it gains a backslash) after some 700 bytes of fields
        // and the attribution: room for all of it at once, so the line is not copied to grow.
        var json = JSONWriter(reservingCapacity: body.count + body.count / 4 + 1024)
        json.beginObject()
        // Every key in its declared order (`RecordKey`); the optional ones only when they apply.
        keys: for key in RecordKey.allCases {
            let name = key.spoolKey
            switch key {
            case .format: json.field(name, format)
            case .receivedAt: json.field(name, receivedAt.description)
            case .writer: json.field(name, writer)
            case .route: json.field(name, route)
            case .status: json.field(name, status.rawValue)
            case .environment: json.field(name, environment?.rawValue)
            case .dedupKey: json.field(name, dedupKey)
            case .postbackProtocol: json.field(name, postbackProtocol?.rawValue)
            case .version: json.field(name, version)
            case .key: json.field(name, keyName)
            case .reason: if let reason { json.field(name, reason) }
            case .client: if let client { json.field(name, client) }
            case .quarantine: if let quarantine { json.field(name, quarantine.rawValue) }
            case .attribution:
                if let attribution {
                    json.key(name)
                    attribution.writeSpoolJSON(to: &json)
                }
            case .bodyKept: if let bodyReduction { json.field(name, bodyReduction.kept.rawValue) }
            case .bodySHA256: if let bodyReduction { json.field(name, bodyReduction.sha256) }
            case .bodyBytes: if let bodyReduction { json.field(name, bodyReduction.byteCount) }
            case .flags:
                if !flags.isEmpty {
                    json.key(name)
                    json.beginArray()
                    for flag in flags { flag.write(to: &json) }
                    json.endArray()
                }
            case .body:
                // Not UTF-8: the next key, `body_base64`, keeps it instead.
                if json.field(name, utf8: body) { break keys }
            case .bodyBase64: json.field(name, Base64.encode(body, alphabet: .standard))
            }
        }
        json.endObject()
        var line = json.bytes
        line.append(0x0A)
        return line
    }

    /// Parses a line written by `encoded()` (without its newline).
    package init(line: [UInt8]) throws(StoredFormError) {
        let value: JSONValue
        do {
            value = try StrictJSONParser.parse(line, keys: SpoolRecord.internedKeys)
        } catch {
            throw StoredFormError(.notJSON, member: nil, "not a JSON record: \(error)")
        }
        guard case .object(let object) = value else {
            throw StoredFormError(.notJSON, member: nil, "record is not a JSON object")
        }
        func string(_ key: RecordKey) -> String? {
            if case .string(let text)? = object[key.spoolKey] { return text }
            return nil
        }
        var format = 1
        if let value = object[RecordKey.format.spoolKey] {
            guard case .number(let number) = value, let parsed = number.int64Value, parsed >= 1 else {
                throw StoredFormError(.invalid, member: "format", "format must be a positive integer")
            }
            guard parsed <= SpoolRecord.currentFormat else {
                throw StoredFormError(
                    .newerFormat, member: "format",
                    "record format \(parsed) is newer than this release reads (up to \(SpoolRecord.currentFormat)); upgrade postback"
                )
            }
            format = Int(parsed)
        }
        guard let receivedText = string(.receivedAt), let receivedAt = UTCTimestamp(iso8601: receivedText) else {
            throw StoredFormError(.missing, member: "received_at", "received_at missing or not an ISO 8601 UTC timestamp")
        }
        guard let statusText = string(.status), let status = VerificationStatus(rawValue: statusText) else {
            throw StoredFormError(.invalid, member: "status", "status missing or unknown")
        }
        let body: [UInt8]
        if let text = string(.body) {
            body = Array(text.utf8)
        } else if let encoded = string(.bodyBase64) {
            switch Base64.decode(encoded, alphabet: .standard) {
            case .bytes(let bytes): body = bytes
            case .invalid(let reason): throw StoredFormError(.invalid, member: "body_base64", "body_base64: \(reason)")
            }
        } else {
            throw StoredFormError(.missing, member: "body", "record has neither body nor body_base64")
        }
        var attribution: Attribution? = nil
        if case .object(let fields)? = object[RecordKey.attribution.spoolKey] {
            attribution = try Attribution(spoolJSON: fields)
        }
        self.init(
            receivedAt: receivedAt, writer: string(.writer) ?? "", route: string(.route) ?? "", status: status,
            environment: string(.environment).flatMap(PostbackEnvironment.init(rawValue:)), dedupKey: string(.dedupKey),
            postbackProtocol: string(.postbackProtocol).flatMap(PostbackProtocol.init(rawValue:)), version: string(.version),
            keyName: string(.key), reason: string(.reason), attribution: attribution, body: body)
        client = string(.client)
        if let kept = string(.bodyKept).flatMap(BodyReduction.Kept.init(rawValue:)), let sha256 = string(.bodySHA256),
            case .number(let size)? = object[RecordKey.bodyBytes.spoolKey], let byteCount = size.int64Value
        {
            bodyReduction = BodyReduction(kept: kept, sha256: sha256, byteCount: Int(byteCount))
        }
        self.format = format
        if let text = string(.quarantine) {
            guard let reason = QuarantineReason(rawValue: text) else {
                throw StoredFormError(.unknownValue, member: "quarantine", "quarantine has unknown value \"\(text)\"")
            }
            quarantine = reason
        }
        switch object[RecordKey.flags.spoolKey] {
        case nil: break
        case .array(let items)?:
            for item in items {
                guard case .object(let fields) = item else {
                    throw StoredFormError(.invalid, member: "flags", "flags must hold objects")
                }
                flags.append(try PostbackFlag(json: fields))
            }
        default: throw StoredFormError(.invalid, member: "flags", "flags must be an array")
        }
    }
}
