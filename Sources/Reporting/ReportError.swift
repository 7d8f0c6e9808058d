package import Basics

/// Why no report could be written, or the nightly check could not run. A day that is missing or cannot
/// be trusted is not an error for the report (the page says so); these are the conditions under which
/// there is nothing honest to show. One type for the module: callers decide by `code` and read the
/// context (`path`, `line`, `day`), never the text.
package struct ReportError: Error, CustomStringConvertible, Sendable, Equatable {
    package enum Code: Sendable, Equatable {
        /// No day of the range has published aggregates that can be read (`leftOut` says why for the
        /// days that have a partition).
        case noAggregates
        /// An aggregate file or manifest does not read as the format `postback aggregate` writes.
        case malformed
        /// A file could not be read.
        case io
        /// A sum does not fit in 64 bits.
        case overflow
        /// The check's day is not published.
        case notPublished
        /// The check's day is published but cannot be read (`reason` says why).
        case leftOut
        /// The check's day was aggregated before it was over.
        case partial
    }

    package let code: Code
    /// The file (or, for `noAggregates`, the data directory) the error is about.
    package var path: String?
    /// The 1-based line of `path`, when the problem is on one.
    package var line: Int?
    /// The day the check was asked about.
    package var day: UTCDay?
    /// What is wrong, without the path: the part of the message a caller may show on its own.
    package var reason: String
    /// For `noAggregates`: why each day with a partition was left out.
    package var leftOut: [String] = []
    package let description: String

    private init(
        _ code: Code, path: String? = nil, line: Int? = nil, day: UTCDay? = nil, reason: String, leftOut: [String] = [],
        description: String
    ) {
        self.code = code
        self.path = path
        self.line = line
        self.day = day
        self.reason = reason
        self.leftOut = leftOut
        self.description = description
    }

    package static func noAggregates(directory: String, from: String, to: String, leftOut: [String]) -> ReportError {
        let range = from == to ? from : "\(from) to \(to)"
        var text = "no published aggregates for \(range) under \(directory)/agg (run 'postback aggregate' for those days first)"
        for reason in leftOut { text += "\n  " + reason }
        return ReportError(
            .noAggregates, path: directory, reason: "no published aggregates for \(range)", leftOut: leftOut, description: text)
    }

    package static func malformed(path: String, line: Int?, reason: String) -> ReportError {
        ReportError(
            .malformed, path: path, line: line, reason: reason, description: "\(path)\(line.map { ":\($0)" } ?? ""): \(reason)")
    }

    package static func io(path: String, message: String) -> ReportError {
        ReportError(.io, path: path, reason: message, description: "\(path): \(message)")
    }

    package static func overflow(_ message: String) -> ReportError {
        ReportError(.overflow, reason: message, description: message)
    }

    package static func notPublished(path: String, day: UTCDay) -> ReportError {
        let reason = "no \(path)"
        return ReportError(
            .notPublished, path: path, day: day, reason: reason,
            description: "\(day) is not published: \(reason) (run 'postback aggregate --date \(day)' first)")
    }

    package static func leftOut(day: UTCDay, reason: String) -> ReportError {
        ReportError(.leftOut, day: day, reason: reason, description: "\(day) cannot be read: \(reason)")
    }

    package static func partial(day: UTCDay) -> ReportError {
        ReportError(
            .partial, day: day, reason: "aggregated before the day was over",
            description:
                "\(day) was aggregated before the day was over (partial): run 'postback aggregate --date \(day)' again once it is over"
        )
    }
}
