import Dispatch
import Foundation

/// Phase timings on stderr when `POSTBACK_AGGREGATE_TRACE` is set: for profiling the job on real
/// data (`trace 2026-03-10 scan 0.412 s`). Off by default; never part of the outputs.
struct PhaseTrace {
    static let enabled = ProcessInfo.processInfo.environment["POSTBACK_AGGREGATE_TRACE"] != nil

    private let label: String
    private var last = DispatchTime.now().uptimeNanoseconds

    init(_ label: String) { self.label = label }

    mutating func mark(_ phase: String) {
        guard Self.enabled else { return }
        let now = DispatchTime.now().uptimeNanoseconds
        FileHandle.standardError.write(
            Data("trace \(label) \(phase) \(String(format: "%.3f", Double(now - last) / 1e9)) s\n".utf8))
        last = now
    }
}
