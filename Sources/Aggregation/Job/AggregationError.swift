package import Basics
package import PostbackStore
import Postbacks

#if canImport(Glibc)
    import Glibc
#endif

/// Why an aggregation run could not finish. Bad input *lines* are not errors (they are counted and
/// reported); these are the conditions that stop the job before it publishes anything.
package enum AggregationError: Error, CustomStringConvertible, Sendable {
    /// A failed system call on the store or a work file.
    case system(SystemCallError)
    /// An `--input` file that cannot be opened or read (its path and the system's reason).
    case input(RecordReader.IOError)
    case schema(SchemaError)
    case usage(String)
    /// Another `postback aggregate` holds the store's lock.
    case locked(path: String)
    case overflow(String)
    /// Publishing would replace a day with one built from less input or fewer decoded postbacks.
    case worseThanPublished(day: UTCDay, manifest: String, losses: String)
    /// The UTC day is not over: its spool is still being written.
    case openDay(UTCDay)
    /// A day after today (UTC): it has no postbacks yet, and is never published, not even partial.
    case futureDay(UTCDay, today: UTCDay)
    /// A rendered table that could not be written as Parquet (a value its declared type does not hold).
    case parquet(String)
    /// A segment whose bytes are not what its writer sealed (`SegmentSeals`): damaged at rest.
    case damagedSegment(path: String, size: Int, sha256: String, sealed: SegmentSeals.Seal)

    package var description: String {
        switch self {
        case .system(let error): return error.description
        case .input(let error): return "--input \(error)"
        case .schema(let error): return error.description
        case .usage(let message): return message
        case .locked(let path): return "\(path) is locked: another 'postback aggregate' is running on this store"
        case .overflow(let message): return message
        case .parquet(let message): return message
        case .damagedSegment(let path, let size, let sha256, let sealed):
            return "\(path) is damaged: its \(size) bytes (SHA-256 \(sha256.prefix(16))…) are not the \(sealed.size) its "
                + "receiver wrote and sealed (SHA-256 \(sealed.sha256.prefix(16))…), so its postbacks would be counted wrong; "
                + "its day was not published. Restore the file from the object store's copy (ship_to, same path) or a backup, "
                + "then rerun; without a good copy, 'postback spool set-aside --data DATA \(path)' moves it out of the spool "
                + "and the day is published without it (docs/aggregate.md, \"Damaged segments\")"
        case .worseThanPublished(let day, let manifest, let losses):
            return "\(day): not replaced: compared with the day published in \(manifest), this run has \(losses). "
                + "Check --data and --schemas; rerun with --force to publish it anyway"
        case .futureDay(let day, let today):
            return "\(day) has not begun (today is \(today) UTC): a future day is never published, not even with "
                + "--allow-open-day. Give a day up to today (a past day, or today with --allow-open-day)"
        case .openDay(let day):
            return "\(day) is not over yet (UTC): postbacks of it may still arrive and its numbers would be partial. "
                + "Aggregate it after midnight UTC, or add --allow-open-day to publish it marked partial"
        }
    }
}

extension AggregationError {
    /// Runs file operations of Basics, whose failures are `SystemCallError`s, as the job's own.
    static func onFailure<R>(_ body: () throws(SystemCallError) -> R) throws(AggregationError) -> R {
        do { return try body() } catch { throw .system(error) }
    }
}
