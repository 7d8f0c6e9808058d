import Basics
import Dispatch
import Foundation
import Locking
import Synchronization

/// POSTs many bodies to one URL from `concurrency` threads, each with its own kept-alive connection,
/// and reports what came back.
package enum PostbackSender {
    /// The outcome of a run.
    package struct Report: Sendable {
        /// Responses by HTTP status.
        package var statusCounts: [Int: Int] = [:]
        /// Requests that got no response.
        package var errors = 0
        /// Requests that got no response, by what went wrong (connection refused, timed out…).
        package var errorCounts: [String: Int] = [:]
        /// Answers other than 200, by status and the reason the server gave (its problem `title`, or
        /// the start of the body), so a user sees why without a packet capture.
        package var rejectionCounts: [Rejection: Int] = [:]
        /// What the receiver said it did, by the JSON `status` of a 200 (`stored`, `duplicate`,
        /// `quarantined`) or the `verdict` of a 400 (`invalid-signature`, `malformed`, …).
        package var outcomeCounts: [Outcome: Int] = [:]
        /// Latencies of the requests that got a response, ascending.
        package var latencies: [Double] = []
        package var seconds = 0.0

        /// Requests attempted; `answered` of them got an HTTP response.
        package var attempted: Int { answered + errors }
        package var answered: Int { statusCounts.values.reduce(0, +) }
        package var allOK: Bool { attempted > 0 && errors == 0 && statusCounts.keys.allSatisfy { $0 == 200 } }

        package struct Outcome: Hashable, Sendable {
            package let status: Int
            package let word: String
        }

        package struct Rejection: Hashable, Sendable {
            package let status: Int
            package let reason: String
        }

        mutating func record(_ response: HTTPResponse) {
            statusCounts[response.status, default: 0] += 1
            latencies.append(response.seconds)
            if response.status != 200 {
                rejectionCounts[Rejection(status: response.status, reason: Self.reason(of: response)), default: 0] += 1
            }
            if let word = Self.outcome(of: response) {
                outcomeCounts[Outcome(status: response.status, word: word), default: 0] += 1
            }
        }

        /// The receiver's own word for what it did: `status` of a 200 reply, `verdict` of a problem.
        static func outcome(of response: HTTPResponse) -> String? {
            guard response.body.first == UInt8(ascii: "{"),
                case .object(let object)? = try? StrictJSONParser.parse(response.body),
                case .string(let word)? = object[response.status == 200 ? "status" : "verdict"]
            else { return nil }
            return word
        }

        /// An RFC 9457 problem's `title` (fixed per kind of problem, so answers group well), else the
        /// first line of the body, shortened.
        static func reason(of response: HTTPResponse) -> String {
            let text = response.text
            if let titleKey = text.range(of: "\"title\":\""),
                let end = text[titleKey.upperBound...].firstIndex(of: "\"")
            {
                return String(text[titleKey.upperBound..<end])
            }
            let firstLine = text.split(separator: "\n", maxSplits: 1).first.map(String.init) ?? ""
            let trimmed = firstLine.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty { return "(no body)" }
            return trimmed.count > 120 ? String(trimmed.prefix(120)) + "…" : trimmed
        }

        /// The latency at `fraction` (0.5 for the median), nil without responses.
        package func latency(percentile fraction: Double) -> Double? {
            guard !latencies.isEmpty else { return nil }
            let rank = Int((fraction * Double(latencies.count)).rounded(.up)) - 1
            return latencies[min(max(rank, 0), latencies.count - 1)]
        }

        /// libcurl's message without its timing ("… after 3 ms: …"), so equal failures group together.
        static func grouping(_ error: ClientError) -> String {
            var text = error.description
            if let after = text.range(of: " after "), let ms = text[after.upperBound...].range(of: " ms"),
                text[after.upperBound..<ms.lowerBound].allSatisfy(\.isNumber)
            {
                text.removeSubrange(after.lowerBound..<ms.upperBound)
            }
            return text
        }

        mutating func merge(_ other: Report) {
            for (status, count) in other.statusCounts { statusCounts[status, default: 0] += count }
            errors += other.errors
            for (error, count) in other.errorCounts { errorCounts[error, default: 0] += count }
            for (rejection, count) in other.rejectionCounts { rejectionCounts[rejection, default: 0] += count }
            for (outcome, count) in other.outcomeCounts { outcomeCounts[outcome, default: 0] += count }
            latencies.append(contentsOf: other.latencies)
        }
    }

    /// Sends every body `next` returns (it is called from several threads and must be thread-safe;
    /// nil means no more). `onResponse` sees each answer (for a progress display or a failure log).
    package static func send(
        url: String, concurrency: Int, timeoutSeconds: Double = 30, caCertificatePath: String? = nil,
        next: @escaping @Sendable () -> [UInt8]?,
        onResponse: @escaping @Sendable (Result<HTTPResponse, ClientError>) -> Void = { _ in }
    )
        throws -> Report
    {
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
                    report.errorCounts["libcurl could not be initialized", default: 0] += 1
                    merged.withLock { $0.merge(report) }
                    return
                }
                while let body = next() {
                    switch client.outcome(method: "POST", url: url, body: body) {
                    case .success(let response):
                        report.record(response)
                        onResponse(.success(response))
                    case .failure(let error):
                        report.errors += 1
                        report.errorCounts[Report.grouping(error), default: 0] += 1
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
