package import Basics
package import PostbackStore
import Postbacks

#if canImport(Glibc)
    import Glibc
#endif

/// Why aggregation, a schema, a spend file or a rate table could not be used. Bad input *lines* are
/// not errors (they are counted and reported); these are the conditions that stop the job before it
/// publishes anything, or a file a command refuses. One type for the module: callers decide by `code`
/// and read the context (`path`, `line`, `day`, `problems`), never the text.
package struct AggregationError: Error, CustomStringConvertible, Sendable {
    package enum Code: Sendable, Equatable {
        /// A failed system call on the store or a work file.
        case system
        /// An `--input` file that cannot be opened or read.
        case input
        /// A conversion schema file (or the schema directory) that cannot be used: every problem in `problems`.
        case schema
        case usage
        /// Another `postback aggregate` holds the store's lock.
        case locked
        case overflow
        /// Publishing would replace a day with one built from less input or fewer decoded postbacks.
        case worseThanPublished
        /// The UTC day is not over: its spool is still being written.
        case openDay
        /// A day after today (UTC): it has no postbacks yet, and is never published, not even partial.
        case futureDay
        /// A rendered table that could not be written as Parquet (a value its declared type does not hold).
        case parquet
        /// A segment whose bytes are not what its writer sealed (`SegmentSeals`): damaged at rest.
        case damagedSegment
        /// A spend file, a stored spend day or a rate table that cannot be used, or the spend store.
        case spend
        /// A person's CSV file (`UserCSV`) that is not CSV: `line` and `reason` say where and why.
        case malformedCSV
    }

    package let code: Code
    /// The file or directory the error is about, when there is one.
    package var path: String?
    /// The 1-based line of `path`, when the problem is on one.
    package var line: Int?
    /// The day the run was asked for.
    package var day: UTCDay?
    /// A schema's problems, each prefixed by where it is (`windows.0.fine.entries[3].values: ...`).
    package var problems: [String] = []
    /// What is wrong, without the path and line the context gives.
    package var reason: String
    package let description: String

    private init(
        _ code: Code, path: String? = nil, line: Int? = nil, day: UTCDay? = nil, problems: [String] = [], reason: String,
        description: String? = nil
    ) {
        self.code = code
        self.path = path
        self.line = line
        self.day = day
        self.problems = problems
        self.reason = reason
        self.description = description ?? reason
    }

    package static func system(_ error: SystemCallError) -> AggregationError {
        AggregationError(.system, path: error.path, reason: error.description)
    }

    package static func input(_ error: RecordReader.IOError) -> AggregationError {
        AggregationError(.input, reason: "\(error)", description: "--input \(error)")
    }

    /// A schema file (or the schema directory) with every problem found.
    package static func schema(file: String, problems: [String]) -> AggregationError {
        AggregationError(
            .schema, path: file, problems: problems, reason: problems.joined(separator: "\n"),
            description: problems.count == 1
                ? "\(file): \(problems[0])"
                : "\(file): \(problems.count) problems:\n" + problems.map { "  - \($0)" }.joined(separator: "\n"))
    }

    package static func usage(_ message: String) -> AggregationError { AggregationError(.usage, reason: message) }

    package static func locked(path: String) -> AggregationError {
        AggregationError(
            .locked, path: path, reason: "another 'postback aggregate' is running on this store",
            description: "\(path) is locked: another 'postback aggregate' is running on this store")
    }

    package static func overflow(_ message: String) -> AggregationError { AggregationError(.overflow, reason: message) }

    package static func parquet(_ message: String) -> AggregationError { AggregationError(.parquet, reason: message) }

    package static func worseThanPublished(day: UTCDay, manifest: String, losses: String) -> AggregationError {
        AggregationError(
            .worseThanPublished, path: manifest, day: day, reason: losses,
            description: "\(day): not replaced: compared with the day published in \(manifest), this run has \(losses). "
                + "Check --data and --schemas; rerun with --force to publish it anyway")
    }

    package static func openDay(_ day: UTCDay) -> AggregationError {
        AggregationError(
            .openDay, day: day, reason: "not over yet",
            description: "\(day) is not over yet (UTC): postbacks of it may still arrive and its numbers would be partial. "
                + "Aggregate it after midnight UTC, or add --allow-open-day to publish it marked partial")
    }

    package static func futureDay(_ day: UTCDay, today: UTCDay) -> AggregationError {
        AggregationError(
            .futureDay, day: day, reason: "has not begun",
            description: "\(day) has not begun (today is \(today) UTC): a future day is never published, not even with "
                + "--allow-open-day. Give a day up to today (a past day, or today with --allow-open-day)")
    }

    package static func damagedSegment(path: String, size: Int, sha256: String, sealed: SegmentSeals.Seal) -> AggregationError {
        AggregationError(
            .damagedSegment, path: path, reason: "not the bytes its receiver sealed",
            description: "\(path) is damaged: its \(size) bytes (SHA-256 \(sha256.prefix(16))…) are not the \(sealed.size) its "
                + "receiver wrote and sealed (SHA-256 \(sealed.sha256.prefix(16))…), so its postbacks would be counted wrong; "
                + "its day was not published. Restore the file from the object store's copy (ship_to, same path) or a backup, "
                + "then rerun; without a good copy, 'postback spool set-aside --data DATA \(path)' moves it out of the spool "
                + "and the day is published without it (docs/aggregate.md, \"Damaged segments\")")
    }

    /// A spend or rate file that cannot be used: the whole message (it names the file, line and column).
    package static func spend(_ message: String) -> AggregationError { AggregationError(.spend, reason: message) }

    /// A spend or rate file's `malformedCSV`, named by the file: `FILE:LINE: problem`.
    package static func spend(file: String, csv error: AggregationError) -> AggregationError {
        AggregationError(
            .spend, path: file, line: error.line, reason: error.reason,
            description: "\(file):\(error.line.map(String.init) ?? ""): \(error.reason)")
    }

    /// A line of a person's CSV file that is not CSV.
    package static func malformedCSV(line: Int, problem: String) -> AggregationError {
        AggregationError(.malformedCSV, line: line, reason: problem, description: "line \(line): \(problem)")
    }

    /// Runs file operations of Basics, whose failures are `SystemCallError`s, as the job's own.
    static func onFailure<R>(_ body: () throws(SystemCallError) -> R) throws(AggregationError) -> R {
        do { return try body() } catch { throw .system(error) }
    }
}
