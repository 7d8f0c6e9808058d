/// Why no report could be written. A day that is missing or cannot be trusted is not an error (the
/// page says so); these are the conditions under which there is nothing honest to show.
package enum ReportError: Error, CustomStringConvertible, Sendable, Equatable {
    /// No day of the range has published aggregates that can be read; `leftOut` says why for the
    /// days that have a partition.
    case noAggregates(directory: String, from: String, to: String, leftOut: [String])
    /// An aggregate file does not read as the format `postback aggregate` writes.
    case malformed(path: String, line: Int?, reason: String)
    case io(path: String, message: String)
    /// A sum does not fit in 64 bits.
    case overflow(String)

    package var description: String {
        switch self {
        case .noAggregates(let directory, let from, let to, let leftOut):
            let range = from == to ? from : "\(from) to \(to)"
            var text =
                "no published aggregates for \(range) under \(directory)/agg (run 'postback aggregate' for those days first)"
            for reason in leftOut { text += "\n  " + reason }
            return text
        case .malformed(let path, let line, let reason):
            return "\(path)\(line.map { ":\($0)" } ?? ""): \(reason)"
        case .io(let path, let message):
            return "\(path): \(message)"
        case .overflow(let message):
            return message
        }
    }
}
