import Postbacks

/// A run of bytes inside a backing buffer (a spool line, or scratch space for decoded records).
struct ByteSlice: Equatable {
    var start: Int
    var count: Int
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

/// The estimated install time: when the postback arrived, minus the end of its conversion window
/// and the mean of Apple's random send delay (AppsFlyer's published formula, ecosystem §2.1):
///
/// | postback | window ends | mean delay | subtracted |
/// |---|---|---|---|
/// | SKAdNetwork ≤ 3.0 | 24 h timer | 24 h (0–24 h delay after the timer, plus 12 h mean activity) | 48 h |
/// | SKAN 4 / AAK index 0 | day 2 (48 h) | 36 h (24–48 h) | 84 h |
/// | index 1 | day 7 (168 h) | 84 h (24–144 h) | 252 h |
/// | index 2 | day 35 (840 h) | 84 h | 924 h |
///
/// It is an estimate (a lock shortens the window), but a deterministic one: the same received_at
/// always gives the same date, in every engine. Its UTC day picks the schema that decodes the
/// postback and is the `est_install_date` column.
enum InstallDateEstimate {
    static let hour: Int64 = 3_600_000_000

    static func subtractedHours(windows: Bool, sequenceIndex: Int) -> Int64 {
        guard windows else { return 48 }
        switch sequenceIndex {
        case 1: return 252
        case 2: return 924
        default: return 84
        }
    }

    static func day(receivedAtMicros: Int64, windows: Bool, sequenceIndex: Int) -> UTCDay {
        UTCTimestamp(microsecondsSinceEpoch: receivedAtMicros - subtractedHours(windows: windows, sequenceIndex: sequenceIndex) * hour).day
    }
}
