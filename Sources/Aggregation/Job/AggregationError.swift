#if canImport(Glibc)
import Glibc
#endif
public import Postbacks

/// Why an aggregation run could not finish. Bad input *lines* are not errors (they are counted and
/// reported); these are the conditions that stop the job before it publishes anything.
public enum AggregationError: Error, CustomStringConvertible, Sendable {
    case io(path: String, operation: String, errorNumber: Int32)
    /// An `--input` file that cannot be opened or read (its path and the system's reason).
    case input(RecordReader.IOError)
    case schema(SchemaError)
    case usage(String)
    /// Another `postback aggregate` holds the store's lock.
    case locked(path: String)
    case overflow(String)

    public var description: String {
        switch self {
        case .io(let path, let operation, let number): return "\(path): \(operation) failed: \(String(cString: strerror(number)))"
        case .input(let error): return "--input \(error)"
        case .schema(let error): return error.description
        case .usage(let message): return message
        case .locked(let path): return "\(path) is locked: another 'postback aggregate' is running on this store"
        case .overflow(let message): return message
        }
    }
}
