import Dispatch
import Locking

/// Keeps the log lines any client can cause, one per request (a rejection, a quarantine, a slow
/// connection closed, libmicrohttpd's own complaint), from flooding the log: per kind, at most
/// `linesPerWindow` lines in each window of `windowSeconds`; the rest are counted, and once the
/// window is over one `log lines suppressed` line per kind says how many (checked on every such
/// event and on the watchdog's tick, so it comes within a tick of the window's end). The metrics
/// still count every request. Storage and start-up errors never pass through here.
final class LogSampler: Sendable {
    enum Kind: Int, CaseIterable {
        case rejected, quarantined, slowConnection, library

        var name: String {
            switch self {
            case .rejected: return "postback rejected"
            case .quarantined: return "postback quarantined"
            case .slowConnection: return "slow connection closed"
            case .library: return "libmicrohttpd"
            }
        }
    }

    /// The defaults: 20 lines of each kind per 10 s.
    static let defaultLinesPerWindow = 20
    static let defaultWindowSeconds = 10.0

    private struct Window {
        var start: UInt64
        var logged = [Int](repeating: 0, count: Kind.allCases.count)
        var suppressed = [Int](repeating: 0, count: Kind.allCases.count)
    }

    private let log: ServerLog
    private let linesPerWindow: Int
    private let windowNanoseconds: UInt64
    private let window: Locked<Window>

    init(
        log: ServerLog, linesPerWindow: Int = LogSampler.defaultLinesPerWindow,
        windowSeconds: Double = LogSampler.defaultWindowSeconds
    ) {
        self.log = log
        self.linesPerWindow = linesPerWindow
        self.windowNanoseconds = UInt64(windowSeconds * 1e9)
        self.window = Locked(Window(start: DispatchTime.now().uptimeNanoseconds))
    }

    /// Whether a line of `kind` may be written now (counted either way).
    func allows(_ kind: Kind) -> Bool {
        let (allowed, report) = window.withLock { window -> (Bool, [Int]?) in
            let report = roll(&window)
            if window.logged[kind.rawValue] < linesPerWindow {
                window.logged[kind.rawValue] += 1
                return (true, report)
            }
            window.suppressed[kind.rawValue] += 1
            return (false, report)
        }
        if let report { write(report) }
        return allowed
    }

    /// Writes the suppressed counts of a window that is over (the watchdog calls it on each tick).
    func reportIfDue() {
        if let report = window.withLock({ roll(&$0) }) { write(report) }
    }

    /// Starts a new window if the current one is over; its suppressed counts when any.
    private func roll(_ window: inout Window) -> [Int]? {
        let now = DispatchTime.now().uptimeNanoseconds
        guard now >= window.start + windowNanoseconds else { return nil }
        let suppressed = window.suppressed
        window = Window(start: now)
        return suppressed.contains { $0 > 0 } ? suppressed : nil
    }

    private func write(_ suppressed: [Int]) {
        let seconds = Double(windowNanoseconds) / 1e9
        for kind in Kind.allCases where suppressed[kind.rawValue] > 0 {
            log.warning(
                "log lines suppressed",
                [
                    "kind": .string(kind.name), "suppressed": .int(suppressed[kind.rawValue]),
                    "limit": .int(linesPerWindow), "window_seconds": .double(seconds),
                ])
        }
    }
}
