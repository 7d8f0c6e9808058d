import Postbacks

/// A run of bytes inside a backing buffer (a spool line, or scratch space for decoded records).
/// 32-bit offsets keep `PostbackFields`, which is copied per postback, small (lines are < 4 MiB).
struct ByteSlice: Equatable {
    private let storedStart: Int32
    private let storedCount: Int32

    init(start: Int, count: Int) {
        storedStart = Int32(truncatingIfNeeded: start)
        storedCount = Int32(truncatingIfNeeded: count)
    }

    var start: Int { Int(storedStart) }
    var count: Int { Int(storedCount) }
}

/// The fields of one stored postback that place it in an aggregate row, in the cheapest form the
/// line parser can fill: small codes and byte slices into the line, no `String`s on the hot path.
struct PostbackFields {
    var postbackProtocol: PostbackProtocol = .skadnetwork
    var version: ByteSlice? = nil
    var appID: Int64? = nil
    var adNetworkID: ByteSlice? = nil
    var campaignID: Int64? = nil
    var sourceIdentifier: ByteSlice? = nil
    var sourceAppID: Int64? = nil
    var sourceDomain: ByteSlice? = nil
    var marketplaceID: ByteSlice? = nil
    var countryCode: ByteSlice? = nil
    var interaction: AdInteraction? = nil
    var conversionType: ConversionType = .download
    var sequenceIndex: Int = 0
    var didWin: Bool? = nil
    var fineValue: Int? = nil
    var coarseValue: CoarseConversionValue? = nil
    var isTestMode = false

    /// SKAdNetwork 4.0 and AdAttributionKit have three conversion windows; earlier versions one.
    func hasConversionWindows(in base: UnsafeRawBufferPointer) -> Bool {
        guard postbackProtocol == .skadnetwork else { return true }
        guard let version else { return false }
        return version.count == 3 && base[version.start] == UInt8(ascii: "4") && base[version.start + 1] == UInt8(ascii: ".")
            && base[version.start + 2] == UInt8(ascii: "0")
    }
}
