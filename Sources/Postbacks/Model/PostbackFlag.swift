package import Basics

/// A field that was not taken exactly as sent. Flags never change the verdict: the signature alone
/// decides authenticity (spec §11); a flag says what was done with a value so a user can see it.
package struct PostbackFlag: Sendable, Equatable {
    /// What was done with the value.
    package enum Action: String, Sendable, CaseIterable, Codable {
        /// Used after normalizing it: an unsigned value case-folded (`HIGH` → `high`, `us` → `US`) or
        /// sent as a digit string (`"63"`), or a signed value sent in another JSON form of the same
        /// signed text (`"1"` for `1`, `"true"` for `true`).
        case normalized
        /// An unsigned value left out of the attribution: out of range, of the wrong type, unknown, or
        /// not allowed in that conversion window. The postback still counts, without that value.
        case dropped
        /// A signed value we do not know yet (a new `conversion-type`, a fifth `source-identifier`
        /// digit): kept verbatim, and kept out of the headline numbers until a release knows it.
        /// Also a JWS claim or header member we do not know (its name in `raw`): ignored, and the
        /// postback is counted all the same (`isUnknownMember`).
        case unrecognized
    }

    /// The fields a flag can name: a closed set, so metric labels never carry input text.
    package enum Field: String, Sendable, CaseIterable, Codable {
        case version
        case appID = "app-id"
        case campaignID = "campaign-id"
        case sourceIdentifier = "source-identifier"
        case sourceAppID = "source-app-id"
        case redownload
        case fidelityType = "fidelity-type"
        case didWin = "did-win"
        case postbackSequenceIndex = "postback-sequence-index"
        case conversionValue = "conversion-value"
        case coarseConversionValue = "coarse-conversion-value"
        case countryCode = "country-code"
        case adInteractionType = "ad-interaction-type"
        case impressionType = "impression-type"
        case conversionType = "conversion-type"
        case advertisedItemIdentifier = "advertised-item-identifier"
        case publisherItemIdentifier = "publisher-item-identifier"
        /// A JWS payload claim we do not know (its name is in `raw`).
        case jwsClaim = "jws-claim"
        /// A JWS header member we ignore (`typ`, `cty`; its name is in `raw`).
        case jwsHeader = "jws-header"
        /// A byte-order mark in front of the body.
        case body
    }

    package let field: Field
    package let action: Action
    /// The value as sent (its JSON text, at most 64 bytes of it), or a member's name.
    package let raw: String
    /// What was done, in words: "case-folded to high", "out of range 0–63".
    package let note: String

    package init(field: Field, action: Action, raw: String, note: String) {
        self.field = field
        self.action = action
        self.raw = Self.shortened(raw)
        self.note = note
    }

    /// Raw values come from the sender: keep the record and the log small whatever they sent.
    static func shortened(_ text: String) -> String {
        guard text.utf8.count > 64 else { return text }
        var prefix = Substring(text)
        while prefix.utf8.count > 61 { prefix = prefix.dropLast() }
        return prefix + "..."
    }

    /// An AdAttributionKit claim or JWS header member this release does not know, by name: Apple may
    /// add one tomorrow, and it changes neither how the postback is checked nor where it is counted.
    package var isUnknownMember: Bool { action == .unrecognized && (field == .jwsClaim || field == .jwsHeader) }

    /// One line for people: `conversion-value 64 dropped (out of range 0–63)`.
    package var summary: String { "\(field.rawValue) \(raw) \(action.rawValue) (\(note))" }

    /// Writes `{"field":…,"action":…,"raw":…,"note":…}`.
    package func write(to json: inout JSONWriter) {
        json.beginObject()
        json.field("field", field.rawValue)
        json.field("action", action.rawValue)
        json.field("raw", raw)
        json.field("note", note)
        json.endObject()
    }

    /// Reads what `write(to:)` wrote.
    package init(json object: JSONObject) throws(StoredFormError) {
        guard case .string(let fieldText)? = object["field"], let field = Field(rawValue: fieldText),
            case .string(let actionText)? = object["action"], let action = Action(rawValue: actionText),
            case .string(let raw)? = object["raw"]
        else { throw StoredFormError(.invalid, member: "flags", "flag needs a known field, a known action and raw") }
        var note = ""
        if case .string(let text)? = object["note"] { note = text }
        self.init(field: field, action: action, raw: raw, note: note)
    }
}

extension Array where Element == PostbackFlag {
    /// A signed value was kept that we do not know and that decides where the postback is counted
    /// (a new `conversion-type`, a `postback-sequence-index` of 3): it stays out of the headline
    /// numbers. An unknown claim or header member (`isUnknownMember`) does not.
    package var hasUnrecognized: Bool { contains { $0.action == .unrecognized && !$0.isUnknownMember } }
}
