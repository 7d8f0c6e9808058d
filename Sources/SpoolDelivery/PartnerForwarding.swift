import Basics
import Foundation
package import PostbackStore

/// The receiver's partner forwarding: one `SpoolDeliveryWorker` per destination over the verified
/// spool, each with a `PartnerForwardDestination`, and their `/metrics` (families `postback_forward_*`,
/// label `destination`). Started after the server, stopped after it; never on the ingestion path.
package final class PartnerForwarding: Sendable {
    package let forwarders: [(destination: PartnerForwardDestination, worker: SpoolDeliveryWorker)]

    /// `isOpen` is the server's `isSegmentOpen`. Throws on a local problem (the ledger cannot be opened).
    package init(
        settings: [ForwardSettings], layout: StoreLayout, writerID: String, isOpen: @escaping @Sendable (String) -> Bool,
        scanIntervalSeconds: Double = 2, backoff: Backoff = Backoff(),
        events: @escaping @Sendable (String, SpoolDeliveryWorker.Event) -> Void = { _, _ in }
    ) throws {
        var forwarders: [(PartnerForwardDestination, SpoolDeliveryWorker)] = []
        do {
            for destinationSettings in settings {
                let destination = try PartnerForwardDestination(
                    settings: destinationSettings, root: layout.root, writerID: writerID)
                let configuration = SpoolDeliveryWorker.Configuration(
                    layout: layout, writerID: writerID, spools: [.postbacks], isOpen: isOpen,
                    scanIntervalSeconds: scanIntervalSeconds, backoff: backoff)
                let name = destinationSettings.name
                let worker = try SpoolDeliveryWorker(configuration: configuration, destination: destination) { events(name, $0) }
                forwarders.append((destination, worker))
            }
        } catch {
            for (_, worker) in forwarders { worker.stop() }
            throw error
        }
        self.forwarders = forwarders
    }

    package func stop() {
        for (_, worker) in forwarders { worker.stop() }
    }

    package func wake() {
        for (_, worker) in forwarders { worker.wake() }
    }

    /// The Prometheus text for `/metrics`. Header values are never part of it (only names and counts).
    package func renderMetrics(now: Double? = nil) -> String {
        var page = MetricsPage()
        Self.renderMetrics(
            forwarders.map { (name: $0.destination.name, counters: $0.destination.counters, status: $0.worker.status) },
            now: now ?? Date().timeIntervalSince1970, into: &page)
        return page.text
    }

    static func renderMetrics(
        _ snapshots: [(name: String, counters: PartnerForwardDestination.Counters, status: SpoolDeliveryWorker.Status)],
        now: Double, into page: inout MetricsPage
    ) {
        func family(
            _ metric: String, _ kind: MetricsPage.Kind, _ help: String,
            _ value: (PartnerForwardDestination.Counters, SpoolDeliveryWorker.Status) -> Double?
        ) {
            page.family(metric, kind, help: help) {
                for snapshot in snapshots {
                    guard let sample = value(snapshot.counters, snapshot.status) else { continue }
                    $0.sample(["destination": snapshot.name], sample)
                }
            }
        }
        family("postback_forward_delivered_total", .counter, "Postbacks the partner accepted (2xx) since start.") {
            counters, _ in Double(counters.delivered)
        }
        family(
            "postback_forward_retried_total", .counter,
            "Attempts that failed and are retried with backoff (5xx, 408, 429, timeouts, connection errors)."
        ) { counters, _ in
            Double(counters.retried)
        }
        family(
            "postback_forward_dead_lettered_total", .counter,
            "Postbacks written to the dead-letter spool (refused with a 4xx, or too old) since start."
        ) { counters, _ in
            Double(counters.deadLettered)
        }
        family(
            "postback_forward_filtered_total", .counter, "Verified postbacks the destination's filters leave out, since start."
        ) { counters, _ in
            Double(counters.filteredOut)
        }
        // Before the first listing the backlog is unknown: no sample rather than a false 0.
        family("postback_forward_queue_segments", .gauge, "Sealed segments of verified postbacks not yet (fully) forwarded.") {
            _, status in
            status.scanned ? Double(status.pendingSegments[.postbacks] ?? 0) : nil
        }
        family("postback_forward_queue_bytes", .gauge, "Bytes of sealed segments not yet (fully) forwarded.") { _, status in
            status.scanned ? Double(status.pendingBytes[.postbacks] ?? 0) : nil
        }
        family(
            "postback_forward_lag_seconds", .gauge,
            "Age of the oldest postback not yet forwarded (0: caught up with the sealed segments)."
        ) { counters, status in
            let blocked = counters.blockedSinceReceivedAt.map { max(0, now - $0) } ?? 0
            return max(blocked, status.scanned ? status.oldestPendingSeconds : 0).rounded()
        }
        family(
            "postback_forward_last_success_timestamp_seconds", .gauge,
            "When the partner last accepted a postback (absent before the first)."
        ) { counters, _ in
            counters.lastSuccessAt.map { $0.rounded() }
        }
        family("postback_forward_destination_up", .gauge, "1 unless the last attempt failed.") { _, status in
            status.destinationUp ? 1 : 0
        }
    }
}
