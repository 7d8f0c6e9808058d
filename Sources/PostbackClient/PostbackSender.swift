import Locking
import Dispatch
import Foundation
import Synchronization

/// POSTs many bodies to one URL from `concurrency` threads, each with its own kept-alive connection,
/// and reports what came back.
public enum PostbackSender {
    /// The outcome of a run.
    public struct Report: Sendable {
        /// Responses by HTTP status.
        public var statusCounts: [Int: Int] = [:]
        /// Requests that got no response.
        public var errors = 0
        /// The first few transport errors, for the user.
        public var errorSamples: [String] = []
        /// Latencies of the requests that got a response, ascending.
        public var latencies: [Double] = []
        public var seconds = 0.0

        public var sent: Int { statusCounts.values.reduce(0, +) + errors }
        public var allOK: Bool { sent > 0 && errors == 0 && statusCounts.keys.allSatisfy { $0 == 200 } }

        /// The latency at `fraction` (0.5 for the median), nil without responses.
        public func latency(percentile fraction: Double) -> Double? {
            guard !latencies.isEmpty else { return nil }
            let rank = Int((fraction * Double(latencies.count)).rounded(.up)) - 1
            return latencies[min(max(rank, 0), latencies.count - 1)]
        }

        mutating func merge(_ other: Report) {
            for (status, count) in other.statusCounts { statusCounts[status, default: 0] += count }
            errors += other.errors
            errorSamples.append(contentsOf: other.errorSamples.prefix(max(0, 5 - errorSamples.count)))
            latencies.append(contentsOf: other.latencies)
        }
    }

    /// Sends every body `next` returns (it is called from several threads and must be thread-safe;
    /// nil means no more). `onResponse` sees each answer (for a progress display or a failure log).
    public static func send(url: String, concurrency: Int, timeoutSeconds: Double = 30, caCertificatePath: String? = nil,
                            next: @escaping @Sendable () -> [UInt8]?,
                            onResponse: @escaping @Sendable (Result<HTTPResponse, HTTPClientError>) -> Void = { _ in })
        throws(HTTPClientError) -> Report {
        // Fail early (bad URL syntax is only found per request).
        _ = try HTTPClient(timeoutSeconds: timeoutSeconds, caCertificatePath: caCertificatePath)
        let merged = Locked(Report())
        let group = DispatchGroup()
        let start = DispatchTime.now().uptimeNanoseconds
        for index in 0..<max(1, concurrency) {
            group.enter()
            let thread = Thread {
                defer { group.leave() }
                var report = Report()
                guard let client = try? HTTPClient(timeoutSeconds: timeoutSeconds, caCertificatePath: caCertificatePath) else {
                    report.errors += 1
                    report.errorSamples.append("libcurl could not be initialized")
                    merged.withLock { $0.merge(report) }
                    return
                }
                while let body = next() {
                    do throws(HTTPClientError) {
                        let response = try client.post(url, body: body)
                        report.statusCounts[response.status, default: 0] += 1
                        report.latencies.append(response.seconds)
                        onResponse(.success(response))
                    } catch {
                        report.errors += 1
                        if report.errorSamples.count < 5 { report.errorSamples.append(error.description) }
                        onResponse(.failure(error))
                    }
                }
                merged.withLock { $0.merge(report) }
            }
            thread.name = "send-\(index)"
            thread.start()
        }
        group.wait()
        var report = merged.withLock { $0 }
        report.seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        report.latencies.sort()
        return report
    }
}
