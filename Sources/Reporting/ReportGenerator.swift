import AggregateSchema
import Basics
import Postbacks

#if canImport(Glibc)
    import Glibc
#endif

/// `postback report`: reads the published aggregates of a range of days and writes one
/// self-contained HTML page with inline SVG charts (no scripts, stylesheets, fonts or images from
/// anywhere else). The same aggregates always give the same bytes: nothing on the page comes from
/// the clock, the locale or hashing order.
package enum ReportGenerator {
    /// Builds the page and writes it atomically (temporary file, fsync, rename, directory fsync).
    /// - Throws: `ReportError` when no day of the range can be read, or on a malformed aggregate or an
    ///   I/O error reading it; `SystemCallError` when the page cannot be written. Nothing is written then.
    package static func generate(_ request: ReportRequest) throws -> ReportSummary {
        let (bytes, summary) = try build(request)
        try DurableFile.write(bytes, to: request.outputPath)
        return summary
    }

    /// The page's bytes and what it holds, without writing it (`--out -` sends it to stdout).
    package static func build(_ request: ReportRequest) throws -> (page: [UInt8], summary: ReportSummary) {
        let model = try model(request)
        let bytes = Array(try render(model, request: request).utf8)
        let summary = ReportSummary(
            outputPath: request.outputPath, bytes: bytes.count, environment: request.environment, daysIncluded: model.days,
            daysMissing: model.missingDays, daysWithoutSpool: model.emptyDays, daysPartial: model.partialDays,
            daysLeftOut: model.leftOutDays.map(\.day), postbacks: model.totals.postbacks, installs: model.totals.installs,
            otherEnvironmentPostbacks: model.otherEnvironmentPostbacks, rejectedPostbacks: model.rejectedPostbacks)
        return (bytes, summary)
    }

    /// The page for `request` without writing it.
    package static func page(_ request: ReportRequest) throws -> String {
        try render(try model(request), request: request)
    }

    /// The figures of the page's environment. The production table is always read: its days decide
    /// which days are there, and its manifests hold the side counts (rejected, duplicates, corrupt
    /// lines) that both pages show apart from their figures.
    static func model(_ request: ReportRequest) throws(ReportError) -> ReportModel {
        var model = try dayModel(request)
        model.cohorts = try CohortLoader(
            dataDirectory: request.dataDirectory, appID: request.appID, scope: request.scope,
            table: request.environment.cohortTable
        ).load(from: request.from, to: request.to)
        // The nightly check's findings name apps and networks of the whole store.
        if request.scope.isEverything {
            model.checkFindings = FlowCheckFile.lines(
                dataDirectory: request.dataDirectory, days: model.rangeDays, environment: request.environment)
        }
        return model
    }

    /// The figures of the day tables (by received day).
    private static func dayModel(_ request: ReportRequest) throws(ReportError) -> ReportModel {
        let production = try AggregateLoader(
            dataDirectory: request.dataDirectory, appID: request.appID, scope: request.scope
        ).load(
            from: request.from, to: request.to)
        guard request.environment == .development else { return production }
        let loader = AggregateLoader(
            dataDirectory: request.dataDirectory, appID: request.appID, scope: request.scope,
            table: AggregateTables.campaignDailyDevelopment)
        var development: ReportModel
        do {
            development = try loader.load(from: request.from, to: request.to)
        } catch {
            // No day has the table (published before it existed): an empty development page that says why.
            guard error.code == .noAggregates else { throw error }
            development = ReportModel(from: request.from, to: request.to)
        }
        development.adoptSideCounts(of: production)
        return development
    }

    static func render(_ model: ReportModel, request: ReportRequest) throws -> String {
        try ReportPage(model: model, request: request).render()
    }
}
