package import Basics
import Postbacks

/// What a written report holds, for the command's summary line.
package struct ReportSummary: Sendable, Equatable {
    package var outputPath: String
    package var bytes: Int
    /// Whose figures the page draws.
    package var environment: ReportEnvironment
    /// Days whose aggregates are in the page.
    package var daysIncluded: [UTCDay]
    /// Days of the range without published aggregates.
    package var daysMissing: [UTCDay]
    /// Days published with nothing in them at all (no postback, rejected record or duplicate):
    /// gaps on the page, not zeros.
    package var daysWithoutSpool: [UTCDay]
    /// Days aggregated before they were over (`--allow-open-day`).
    package var daysPartial: [UTCDay]
    /// Days with a partition that could not be trusted (the page says why).
    package var daysLeftOut: [UTCDay]
    /// The page's postbacks and installs (of its environment).
    package var postbacks: Int
    package var installs: Int
    /// Postbacks of the other environment, kept off the page's figures.
    package var otherEnvironmentPostbacks: Int
    package var rejectedPostbacks: Int

    /// True when every day of the range is in the page.
    package var isComplete: Bool { daysMissing.isEmpty && daysLeftOut.isEmpty }
}
