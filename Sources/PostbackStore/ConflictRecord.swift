package import Basics
package import Postbacks

/// Evidence that a copy of a stored postback carried other unsigned values than the stored (first)
/// copy (issue 24): one JSON line in `raw/conflicts/`, within a daily byte budget like the rejected
/// store. The stored copy is never changed; this says which fields disagreed, what each copy said,
/// and where the copy came from.
///
///     {"received_at":"…","writer":"rx1","route":"skadnetwork-developer-copy","client":"203.0.113.7",
///      "dedup_key":"…:0","fields":[{"field":"conversion-value","stored":"12","copy":"40"}],
///      "body_sha256":"…","stored_attribution":{…}}
///
/// `stored_attribution` is the stored copy's attribution (the signed fields are the copy's, which
/// are the same by the key; the unsigned values the stored ones): the manifest counts conflicts by
/// its app and ad network. (The rows' `conflicting_copies` find the stored copy by `dedup_key`.) An
/// absent value is `""`.
package struct ConflictRecord: Sendable, Equatable {
    package struct Difference: Sendable, Equatable {
        package let field: UnsignedValues.Field
        package let stored: String
        package let copy: String

        package init(field: UnsignedValues.Field, stored: String, copy: String) {
            self.field = field
            self.stored = stored
            self.copy = copy
        }
    }

    package var receivedAt: UTCTimestamp
    package var writer: String
    package var route: String
    package var client: String
    package var dedupKey: String
    package var differences: [Difference]
    /// SHA-256 of the copy's body (the body itself is not kept: the stored copy is the postback).
    package var bodySHA256: String
    package var storedAttribution: Attribution

    package init(
        receivedAt: UTCTimestamp, writer: String, route: String, client: String, dedupKey: String,
        differences: [Difference], bodySHA256: String, storedAttribution: Attribution
    ) {
        self.receivedAt = receivedAt
        self.writer = writer
        self.route = route
        self.client = client
        self.dedupKey = dedupKey
        self.differences = differences
        self.bodySHA256 = bodySHA256
        self.storedAttribution = storedAttribution
    }

    /// The copy's attribution with the stored copy's unsigned values.
    package static func storedAttribution(of copy: Attribution, stored: UnsignedValues) -> Attribution {
        var attribution = copy
        attribution.fineValue = stored.fine
        attribution.coarseValue = stored.coarse
        attribution.countryCode = stored.country
        // The interaction is signed in SKAdNetwork (fidelity-type): only AdAttributionKit's can differ.
        if copy.postbackProtocol == .adattributionkit { attribution.interaction = stored.interaction }
        return attribution
    }

    /// The record as one JSON line, newline included.
    package func encoded() -> [UInt8] {
        var json = JSONWriter(reservingCapacity: 512)
        json.beginObject()
        json.field("received_at", receivedAt.description)
        json.field("writer", writer)
        json.field("route", route)
        json.field("client", client)
        json.field("dedup_key", dedupKey)
        json.key("fields")
        json.beginArray()
        for difference in differences {
            json.beginObject()
            json.field("field", difference.field.rawValue)
            json.field("stored", difference.stored)
            json.field("copy", difference.copy)
            json.endObject()
        }
        json.endArray()
        json.field("body_sha256", bodySHA256)
        json.key("stored_attribution")
        storedAttribution.writeSpoolJSON(to: &json)
        json.endObject()
        return json.bytes + [0x0A]
    }

    /// Reads what `encoded()` wrote (without its newline).
    package init(line: [UInt8]) throws(StoredFormError) {
        guard case .object(let object)? = try? StrictJSONParser.parse(line, keys: SpoolRecord.internedKeys) else {
            throw StoredFormError(.notJSON, member: nil, "not a JSON object")
        }
        func string(_ name: String) -> String? {
            if case .string(let text)? = object[name] { return text }
            return nil
        }
        guard let time = string("received_at"), let receivedAt = UTCTimestamp(iso8601: time) else {
            throw StoredFormError(.missing, member: "received_at", "received_at missing or not an ISO 8601 UTC timestamp")
        }
        guard let dedupKey = string("dedup_key") else {
            throw StoredFormError(.missing, member: "dedup_key", "dedup_key missing")
        }
        guard case .array(let fields)? = object["fields"] else {
            throw StoredFormError(.missing, member: "fields", "fields missing")
        }
        var differences: [Difference] = []
        for case .object(let member) in fields {
            guard case .string(let name)? = member["field"], let field = UnsignedValues.Field(rawValue: name),
                case .string(let stored)? = member["stored"], case .string(let copy)? = member["copy"]
            else { throw StoredFormError(.invalid, member: "fields", "a field needs a known field, stored and copy") }
            differences.append(Difference(field: field, stored: stored, copy: copy))
        }
        guard case .object(let attributionObject)? = object["stored_attribution"] else {
            throw StoredFormError(.missing, member: "stored_attribution", "stored_attribution missing")
        }
        let attribution: Attribution
        do { attribution = try Attribution(spoolJSON: attributionObject) } catch {
            throw error.inside("stored_attribution")
        }
        self.init(
            receivedAt: receivedAt, writer: string("writer") ?? "", route: string("route") ?? "",
            client: string("client") ?? "", dedupKey: dedupKey, differences: differences,
            bodySHA256: string("body_sha256") ?? "", storedAttribution: attribution)
    }
}
