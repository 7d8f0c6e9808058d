package import Locking
package import PostbackServer

/// Captures a receiver's JSON log lines (every level), for the tests of every target.
package final class LogCapture: Sendable {
    /// The lines so far, in order.
    package let lines = Locked<[String]>([])

    package init() {}

    /// The log to give the receiver (and what runs beside it).
    package var log: ServerLog {
        ServerLog(minimumLevel: .debug) { [lines] bytes in
            lines.withLock { $0.append(String(decoding: bytes, as: UTF8.self)) }
        }
    }

    package var all: [String] { lines.withLock { $0 } }

    package func contains(_ text: String) -> Bool { all.contains { $0.contains(text) } }
}
