package import Basics

/// How far a cohort's postbacks can still grow (docs/aggregate.md, "When a cohort is final").
package enum CohortStatus: String, Sendable, Comparable, CaseIterable {
    case open
    case window1Final = "window-1-final"
    case window2Final = "window-2-final"
    case final

    /// The last received day that can add a postback of window 1, 2, 3 to install day I is I + 4,
    /// I + 11, I + 39: the estimated install date subtracts 84 h, 252 h, 924 h from the arrival.
    package static let lastDayOffsets = (window1: 4, window2: 11, window3: 39)

    package init(installDay: UTCDay, completeThrough: UTCDay?) {
        guard let complete = completeThrough else {
            self = .open
            return
        }
        let days = complete.daysSinceEpoch - installDay.daysSinceEpoch
        if days >= Self.lastDayOffsets.window3 {
            self = .final
        } else if days >= Self.lastDayOffsets.window2 {
            self = .window2Final
        } else if days >= Self.lastDayOffsets.window1 {
            self = .window1Final
        } else {
            self = .open
        }
    }

    /// The last window (1–3) whose revenue is complete; 0 when none is.
    package var finalWindows: Int {
        switch self {
        case .open: return 0
        case .window1Final: return 1
        case .window2Final: return 2
        case .final: return 3
        }
    }

    package static func < (lhs: Self, rhs: Self) -> Bool { lhs.finalWindows < rhs.finalWindows }
}

/// Why a cohort row's ROAS columns are empty (`roas_note`), in the order the first that applies is given.
package enum ROASNote: String, Sendable, CaseIterable {
    case noSpend = "no-spend"
    case mixedSpendCurrencies = "mixed-spend-currencies"
    case mixedRevenueCurrencies = "mixed-revenue-currencies"
    case noRevenue = "no-revenue"
    case currencyMismatch = "currency-mismatch"
    case zeroSpend = "zero-spend"
}
