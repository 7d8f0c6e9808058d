import Basics
import Foundation
import Locking
import PostbackStore
import Postbacks

#if canImport(Glibc)
    import Glibc
#endif

/// Forwards the verified postbacks of sealed segments to one partner, record by record, resuming at
/// the segment's durable cursor (`SegmentCursor`, an `at` line in the delivery ledger).
///
/// At-least-once: the cursor only moves past a postback once the partner answered 2xx (or it is in
/// the dead-letter spool), and it is written (fdatasync) at least every `cursorIntervalSeconds` and
/// before any failure returns; a crash re-sends at most what was sent since, with the same
/// `Idempotency-Key`. Records go out in spool order, in batches of `concurrency`; a batch with a
/// retryable failure moves the cursor to its first failed record and the worker backs off.
package final class PartnerForwardDestination: ResumableDeliveryDestination, @unchecked Sendable {
    package let name: String
    package let sender: ForwardSender
    package let deadLetters: DeadLetterSpool
    private let cursorIntervalSeconds: Double
    private let counterState = Locked(Counters())

    /// Since start, for `/metrics`.
    package struct Counters: Sendable, Equatable {
        package var delivered = 0
        /// Attempts that failed and will be retried (5xx, 408, 429, timeouts, connection errors).
        package var retried = 0
        package var deadLettered = 0
        /// Verified postbacks this destination's filters left out.
        package var filteredOut = 0
        /// Lines of a sealed segment that are not records (reported, skipped).
        package var unreadable = 0
        /// Seconds since the epoch of the last 2xx; nil before.
        package var lastSuccessAt: Double?
        /// Receive time (seconds since the epoch) of the postback delivery is stuck at; nil when not stuck.
        package var blockedSinceReceivedAt: Double?
    }

    package init(settings: ForwardSettings, root: String, writerID: String, cursorIntervalSeconds: Double = 1)
        throws
    {
        name = settings.destinationName
        sender = try ForwardSender(settings: settings)
        deadLetters = DeadLetterSpool(root: root, destination: name, writerID: writerID)
        self.cursorIntervalSeconds = cursorIntervalSeconds
    }

    package var counters: Counters { counterState.withLock { $0 } }

    /// Not used: the worker calls `deliver(_:from:)` for a resumable destination.
    package func deliver(_ segment: SealedSegment, sha256: [UInt8]) throws {
        throw DeliveryFailure(.retry, "\(name): forwarding needs a segment cursor")
    }

    package func deliver(_ segment: SealedSegment, from cursor: SegmentCursor) throws {
        guard segment.spool == .postbacks else { return }  // verified only, always
        let fd = open(segment.path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw DeliveryFailure(.retry, SystemCallError(operation: "open", path: segment.path, errorNumber: errno).description)
        }
        defer { close(fd) }
        let start = cursor.offset
        guard lseek(fd, off_t(start), SEEK_SET) == off_t(start) else {
            throw DeliveryFailure(.retry, "\(segment.path): cannot seek to \(start)")
        }
        let lines = LineReader(fd: fd, path: segment.path, maximumLineBytes: SegmentReader.maximumLineBytes)
        var lastCursorWrite = Date().timeIntervalSince1970
        // Records read but not yet sent: (record, its line, the offset after its line).
        var batch: [(record: SpoolRecord, line: [UInt8], end: Int)] = []
        var doneUpTo = start

        func flush() throws {
            defer { batch.removeAll(keepingCapacity: true) }
            guard !batch.isEmpty else { return }
            let outcomes = sender.send(batch.map(\.record))
            for (item, outcome) in zip(batch, outcomes) {
                switch outcome {
                case .delivered:
                    counterState.withLock {
                        $0.delivered += 1
                        $0.lastSuccessAt = Date().timeIntervalSince1970
                        $0.blockedSinceReceivedAt = nil
                    }
                case .refused(let status, let answer):
                    try deadLetter(
                        item.record, line: item.line, reason: .refused, status: status, answer: answer, segment: segment,
                        offset: item.end - item.line.count - 1)
                case .retry(let detail, let retryAfter):
                    counterState.withLock {
                        $0.retried += 1
                        $0.blockedSinceReceivedAt = Double(item.record.receivedAt.microsecondsSinceEpoch) / 1e6
                    }
                    try cursor.advance(to: doneUpTo)
                    throw DeliveryFailure(.retry, detail, retryAfterSeconds: retryAfter)
                }
                doneUpTo = item.end
            }
        }

        while true {
            if cursor.isStopping() {
                try flush()
                try cursor.advance(to: doneUpTo)
                throw DeliveryFailure(.retry, "\(name): stopping; resumes at \(segment.relativePath) byte \(doneUpTo)")
            }
            let line: LineReader.Line?
            do {
                line = try lines.next()
            } catch {
                try cursor.advance(to: doneUpTo)
                throw DeliveryFailure(.retry, "\(segment.path): \(error)")
            }
            guard let line else { break }
            let end = start + lines.bytesRead
            guard line.endsWithNewline, !line.isTooLong, let record = try? SpoolRecord(line: line.bytes) else {
                // A torn tail (a crash before the segment was sealed) or a corrupt line: not a postback
                // anyone acknowledged as stored whole; counted, passed.
                counterState.withLock { $0.unreadable += 1 }
                if batch.isEmpty { doneUpTo = end }
                continue
            }
            if !sender.accepts(record) {
                counterState.withLock { $0.filteredOut += 1 }
                if batch.isEmpty { doneUpTo = end }
                continue
            }
            if let maxAge = sender.settings.maxAgeSeconds,
                Date().timeIntervalSince1970 - Double(record.receivedAt.microsecondsSinceEpoch) / 1e6 > maxAge
            {
                try flush()
                try deadLetter(
                    record, line: line.bytes, reason: .tooOld, status: nil, answer: nil, segment: segment,
                    offset: end - line.bytes.count - 1)
                doneUpTo = end
                continue
            }
            batch.append((record, line.bytes, end))
            if batch.count == sender.settings.concurrency {
                try flush()
                if Date().timeIntervalSince1970 - lastCursorWrite >= cursorIntervalSeconds {
                    try cursor.advance(to: doneUpTo)
                    lastCursorWrite = Date().timeIntervalSince1970
                }
            }
        }
        try flush()
        // The worker records the whole segment as delivered next; the cursor line is not needed.
    }

    private func deadLetter(
        _ record: SpoolRecord, line: [UInt8], reason: DeadLetterSpool.Reason, status: Int?, answer: String?,
        segment: SealedSegment, offset: Int
    ) throws {
        do {
            try deadLetters.append(
                record: record, recordLine: line, reason: reason, status: status, answer: answer,
                segment: segment.relativePath, offset: offset)
        } catch {
            throw DeliveryFailure(.retry, "writing a dead letter: \(error)")
        }
        counterState.withLock { $0.deadLettered += 1 }
    }
}
