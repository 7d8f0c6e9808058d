package import Basics
import Postbacks

/// What a written report holds, for the command's summary line.
package struct ReportSummary: Sendable, Equatable {
    package var outputPath: String
    package var bytes: Int
    /// Days whose aggregates are in the page.
    package var daysIncluded: [UTCDay]
    /// Days of the range without published aggregates.
    package var daysMissing: [UTCDay]
    /// Days published with no spool at all (nothing received): gaps on the page, not zeros.
    package var daysWithoutSpool: [UTCDay]
    /// Days aggregated before they were over (`--allow-open-day`).
    package var daysPartial: [UTCDay]
    /// Days with a partition that could not be trusted (the page says why).
    package var daysLeftOut: [UTCDay]
    /// Production postbacks in the headline.
    package var postbacks: Int
    package var installs: Int
    package var developmentPostbacks: Int
    package var rejectedPostbacks: Int

    /// True when every day of the range is in the page.
    package var isComplete: Bool { daysMissing.isEmpty && daysLeftOut.isEmpty }
}
