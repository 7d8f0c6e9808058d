package import Postbacks

/// A run of bytes inside a backing buffer (a spool line, or scratch space for decoded records).
/// 32-bit offsets keep `PostbackFields`, which is copied per postback, small (lines are < 4 MiB).
package struct ByteSlice: Equatable {
    private let storedStart: Int32
    private let storedCount: Int32

    package init(start: Int, count: Int) {
        storedStart = Int32(truncatingIfNeeded: start)
        storedCount = Int32(truncatingIfNeeded: count)
    }

    package var start: Int { Int(storedStart) }
    package var count: Int { Int(storedCount) }

    /// Appends `text`'s UTF-8 to `scratch` and returns where it is; nil for nil.
    package static func appending(_ text: String?, to scratch: inout [UInt8]) -> ByteSlice? {
        guard let text else { return nil }
        let start = scratch.count
        scratch.append(contentsOf: text.utf8)
        return ByteSlice(start: start, count: scratch.count - start)
    }
}

/// The fields of one stored postback that place it in an aggregate row, in the cheapest form the
/// line parser can fill: small codes and byte slices into the line, no `String`s on the hot path.
package struct PostbackFields {
    package var postbackProtocol: PostbackProtocol = .skadnetwork
    package var version: ByteSlice? = nil
    package var appID: Int64? = nil
    package var adNetworkID: ByteSlice? = nil
    package var campaignID: Int64? = nil
    package var sourceIdentifier: ByteSlice? = nil
    package var sourceAppID: Int64? = nil
    package var sourceDomain: ByteSlice? = nil
    package var marketplaceID: ByteSlice? = nil
    package var countryCode: ByteSlice? = nil
    package var interaction: AdInteraction? = nil
    package var conversionType: ConversionType = .download
    package var sequenceIndex: Int = 0
    package var didWin: Bool? = nil
    package var fineValue: Int? = nil
    package var coarseValue: CoarseConversionValue? = nil
    package var isTestMode = false

    package init() {}

    /// The fields of a parsed record (the full parser's `Attribution`), their text appended to `scratch`.
    package init(_ attribution: Attribution, storingTextIn scratch: inout [UInt8]) {
        func slice(_ text: String?) -> ByteSlice? { ByteSlice.appending(text, to: &scratch) }
        postbackProtocol = attribution.postbackProtocol
        version = slice(attribution.version)
        appID = attribution.appID
        adNetworkID = slice(attribution.adNetworkID)
        campaignID = attribution.campaignID
        sourceIdentifier = slice(attribution.sourceIdentifier)
        sourceAppID = attribution.sourceAppID
        sourceDomain = slice(attribution.sourceDomain)
        marketplaceID = slice(attribution.marketplaceID)
        countryCode = slice(attribution.countryCode)
        interaction = attribution.interaction
        conversionType = attribution.conversionType
        sequenceIndex = attribution.postbackSequenceIndex
        didWin = attribution.didWin
        fineValue = attribution.fineValue
        coarseValue = attribution.coarseValue
        isTestMode = attribution.isTestMode
    }

    /// AdAttributionKit and SKAdNetwork from 4.0 have three conversion windows; earlier versions one.
    package func hasConversionWindows(in base: UnsafeRawBufferPointer) -> Bool {
        guard postbackProtocol == .skadnetwork else { return true }
        guard let version else { return false }
        return SKAdNetworkVersion.hasConversionWindows(
            versionText: UnsafeRawBufferPointer(rebasing: base[version.start..<(version.start + version.count)]))
    }
}
