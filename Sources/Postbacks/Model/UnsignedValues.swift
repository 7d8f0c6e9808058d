/// A stored postback's unsigned values, packed into 32 bits so the dedup index can keep them per key
/// (issue 24): when a copy of a stored postback comes with other values, the receiver can say which
/// fields disagree and what each copy said, without reading the stored record back.
///
/// Bit 31: the values are known (a key recovered from another receiver's shipped keys has none).
/// Bits 0–6: `conversion-value` + 1 (0: absent). Bits 7–8: coarse value (0 absent, then low, medium,
/// high). Bits 9–10: interaction (0 absent, click, view). Bits 11–20: `country-code`, two letters A–Z
/// as 1 + 26·first + second (0: absent). Lossless for every value a verified attribution can hold.
package struct UnsignedValues: Sendable, Equatable, Hashable {
    package let raw: UInt32

    /// The unsigned fields compared.
    package enum Field: String, Sendable, CaseIterable {
        case conversionValue = "conversion-value"
        case coarseConversionValue = "coarse-conversion-value"
        case countryCode = "country-code"
        case adInteractionType = "ad-interaction-type"
    }

    /// No values known.
    package static let unknown = UnsignedValues(raw: 0)

    package init(raw: UInt32) { self.raw = raw }

    package init(fine: Int?, coarse: CoarseConversionValue?, interaction: AdInteraction?, country: String?) {
        var raw: UInt32 = 1 << 31
        if let fine, (0...63).contains(fine) { raw |= UInt32(fine + 1) }
        if let coarse { raw |= UInt32(CoarseConversionValue.allCases.firstIndex(of: coarse)! + 1) << 7 }
        if let interaction { raw |= (interaction == .click ? 1 : 2) << 9 }
        if let country, let code = Self.countryCode(country) { raw |= code << 11 }
        self.raw = raw
    }

    package init(_ attribution: Attribution) {
        self.init(
            fine: attribution.fineValue, coarse: attribution.coarseValue, interaction: attribution.interaction,
            country: attribution.countryCode)
    }

    package var isKnown: Bool { raw & 1 << 31 != 0 }

    package var fine: Int? { raw & 0x7F == 0 ? nil : Int(raw & 0x7F) - 1 }

    package var coarse: CoarseConversionValue? {
        let code = Int(raw >> 7 & 3)
        return code == 0 ? nil : CoarseConversionValue.allCases[code - 1]
    }

    package var interaction: AdInteraction? {
        switch raw >> 9 & 3 {
        case 1: return .click
        case 2: return .view
        default: return nil
        }
    }

    package var country: String? {
        let code = raw >> 11 & 0x3FF
        guard code > 0 else { return nil }
        let letters = [UInt8(ascii: "A") + UInt8((code - 1) / 26), UInt8(ascii: "A") + UInt8((code - 1) % 26)]
        return String(decoding: letters, as: UTF8.self)
    }

    /// The field's value as text ("" when absent).
    package func text(_ field: Field) -> String {
        switch field {
        case .conversionValue: return fine.map(String.init) ?? ""
        case .coarseConversionValue: return coarse?.rawValue ?? ""
        case .countryCode: return country ?? ""
        case .adInteractionType: return interaction?.rawValue ?? ""
        }
    }

    /// Where this copy's values differ from `stored`'s, field by field (both known), in `Field` order.
    package func differences(from stored: UnsignedValues) -> [(field: Field, stored: String, copy: String)] {
        guard isKnown, stored.isKnown, raw != stored.raw else { return [] }
        return Field.allCases.compactMap { field in
            let (old, new) = (stored.text(field), text(field))
            return old == new ? nil : (field, old, new)
        }
    }

    private static func countryCode(_ text: String) -> UInt32? {
        let utf8 = Array(text.utf8)
        guard utf8.count == 2, utf8.allSatisfy({ $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") }) else { return nil }
        return 1 + UInt32(utf8[0] - UInt8(ascii: "A")) * 26 + UInt32(utf8[1] - UInt8(ascii: "A"))
    }
}
