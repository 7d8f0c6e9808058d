import AggregateSchema

/// The page's one definition of revenue wherever one figure stands for a set of postbacks (the
/// headline, the top campaigns, the campaigns by app, the daily trend): **revenue to date**, window 1
/// plus the later windows' revenue, each later window's values read as revenue new in that window.
/// That is how the cohort table's `revenue_est_cum_w3` and ROAS to date read the windows
/// (docs/aggregate.md), so revenue and ROAS on one page agree. Window 1 alone is kept beside it, for
/// a schema whose later windows restate earlier revenue; the revenue section keeps every window apart.
///
/// "Per install" divides the revenue of downloads by the installs (winning first postbacks of
/// downloads) decoded with a schema of that currency: redownloads and re-engagements are in neither,
/// nor are the installs of apps whose revenue is in another currency or unknown for want of a schema.
struct HeadlineRevenue: Equatable {
    /// Every conversion type, windows 1–3 added.
    var toDate = RevenueSum()
    /// The first postback window alone.
    var windowOne = RevenueSum()
    /// Downloads only, windows 1–3 added: what "per install" divides by installs.
    var downloads = RevenueSum()
    /// Installs of the rows added: the denominator of "per install".
    var installs = 0

    /// Postbacks whose value decoded, and those whose value is unknown (null, undecoded, no schema).
    var valuedPostbacks: Int { toDate.valuedPostbacks }
    var unknownPostbacks: Int { toDate.unknownPostbacks }

    /// What the page calls this figure, and how it says what it is.
    static let name = "Revenue to date"
    static let definition =
        "revenue to date: the decoded values' estimates of postback windows 1–3 added, each later window's value read "
        + "as revenue new in that window, as ROAS reads it (if your schema's later windows restate earlier revenue, "
        + "read window 1 alone)"
    /// The definition in a few words, for a table's caption.
    static let shortDefinition = "revenue to date adds windows 1–3, each later window read as new revenue, as ROAS reads them"
    static let perInstallDefinition =
        "per install: revenue of downloads ÷ their installs; redownloads and re-engagements are in neither"

    /// Adds a row of a winning postback's value (non-winning rows carry none and are not passed here).
    mutating func add(_ record: CampaignDailyRecord) throws(ReportError) {
        try toDate.add(record)
        installs += record.installs
        if record.sequenceIndex == 0 { try windowOne.add(record) }
        if record.conversionType == nil || record.conversionType == "download" { try downloads.add(record) }
    }

    mutating func add(_ other: HeadlineRevenue) throws(ReportError) {
        try toDate.add(other.toDate)
        installs += other.installs
        try windowOne.add(other.windowOne)
        try downloads.add(other.downloads)
    }

    /// Revenue of downloads ÷ installs, to the cent (half up once); a lower bound (`≥ 1.25`) when
    /// some value has no upper bound and the estimate is its minimum; `–` without installs or values.
    var perInstall: String {
        guard installs > 0, downloads.valuedPostbacks > 0 else { return "–" }
        let text = NumberFormat.money(downloads.estimate, per: installs)
        return downloads.isLowerBound ? "≥ \(text)" : text
    }
}

extension RevenueSum {
    /// True when some value has no upper bound and the estimate is nothing but the minimum: the sum is
    /// then a lower bound, never an estimate.
    var isLowerBound: Bool { maximum == nil && estimate == minimum }

    /// The sum as one figure: `1,234.56`, or `≥ 18,750.00` when it is a lower bound.
    var shownEstimate: String {
        isLowerBound ? "≥ \(NumberFormat.money(minimum))" : NumberFormat.money(estimate)
    }

    /// Its range: `1,000.00–1,500.00`, or `at least 1,000.00` without an upper bound.
    var shownRange: String {
        guard let maximum else { return "at least \(NumberFormat.money(minimum)), no upper bound" }
        return "\(NumberFormat.money(minimum))–\(NumberFormat.money(maximum))"
    }
}
