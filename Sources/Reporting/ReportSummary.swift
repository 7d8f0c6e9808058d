public import Basics
import Postbacks

/// What a written report holds, for the command's summary line.
public struct ReportSummary: Sendable, Equatable {
    public var outputPath: String
    public var bytes: Int
    /// Days whose aggregates are in the page.
    public var daysIncluded: [UTCDay]
    /// Days of the range without published aggregates.
    public var daysMissing: [UTCDay]
    /// Days published with no spool at all (nothing received): gaps on the page, not zeros.
    public var daysWithoutSpool: [UTCDay]
    /// Days aggregated before they were over (`--allow-open-day`).
    public var daysPartial: [UTCDay]
    /// Days with a partition that could not be trusted (the page says why).
    public var daysLeftOut: [UTCDay]
    /// Production postbacks in the headline.
    public var postbacks: Int
    public var installs: Int
    public var developmentPostbacks: Int
    public var rejectedPostbacks: Int

    /// True when every day of the range is in the page.
    public var isComplete: Bool { daysMissing.isEmpty && daysLeftOut.isEmpty }
}
