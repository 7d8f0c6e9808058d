import Basics
import Postbacks

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
/// A development postback (Developer Mode: an AdAttributionKit development key, a SKAdNetwork
/// test-mode postback) comes on Apple's development timing instead: "windows shrink to 0–3 / 3–6 /
/// 6–9 minutes, and the delay to 5–10 minutes" (testing-adattributionkit-with-developer-mode), so
/// the same rule subtracts the window's end plus the mean delay of 7.5 minutes:
///
/// | development postback | window ends | mean delay | subtracted |
/// |---|---|---|---|
/// | index 0 (and SKAdNetwork ≤ 3.0) | 3 min | 7.5 min | 10.5 min |
/// | index 1 | 6 min | 7.5 min | 13.5 min |
/// | index 2 | 9 min | 7.5 min | 16.5 min |
///
/// It is an estimate (a lock shortens the window), but a deterministic one: the same received_at
/// always gives the same date, in every engine. Its UTC day picks the schema that decodes the
/// postback and is the `est_install_date` column.
enum InstallDateEstimate {
    static let hour: Int64 = 3_600_000_000
    static let second: Int64 = 1_000_000

    static func subtractedHours(windows: Bool, sequenceIndex: Int) -> Int64 {
        guard windows else { return 48 }
        switch sequenceIndex {
        case 1: return 252
        case 2: return 924
        default: return 84
        }
    }

    /// Development timing, in seconds: 630, 810 or 990 by window.
    static func developmentSubtractedSeconds(sequenceIndex: Int) -> Int64 {
        switch sequenceIndex {
        case 1: return 810
        case 2: return 990
        default: return 630
        }
    }

    static func day(receivedAtMicros: Int64, windows: Bool, sequenceIndex: Int, development: Bool = false) -> UTCDay {
        let subtracted =
            development
            ? developmentSubtractedSeconds(sequenceIndex: windows ? sequenceIndex : 0) * second
            : subtractedHours(windows: windows, sequenceIndex: sequenceIndex) * hour
        return UTCTimestamp(microsecondsSinceEpoch: receivedAtMicros - subtracted).day
    }
}
