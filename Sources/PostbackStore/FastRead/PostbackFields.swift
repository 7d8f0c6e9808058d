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

    /// AdAttributionKit and SKAdNetwork from 4.0 have three conversion windows; earlier versions one.
    package func hasConversionWindows(in base: UnsafeRawBufferPointer) -> Bool {
        guard postbackProtocol == .skadnetwork else { return true }
        guard let version else { return false }
        return SKAdNetworkVersion.hasConversionWindows(versionText: UnsafeRawBufferPointer(rebasing: base[version.start..<(version.start + version.count)]))
    }
}
