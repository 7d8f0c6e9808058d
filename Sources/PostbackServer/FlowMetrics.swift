import Basics
import Locking
import Postbacks

#if canImport(Glibc)
    import Glibc
#endif

/// Which copy of a postback a request carries: the ad network's, or the advertiser's developer copy
/// (a request whose `Host` is one of `developer_copy_hosts`). Both arrive on Apple's well-known
/// paths, so only the host the device posted to tells them apart.
package enum PostbackCopy: String, Sendable, CaseIterable {
    case network
    case developer
}

/// The series the shipped alert rules read (deploy/prometheus/postback-rules.yml, docs/alerts.md):
/// stored postbacks per ad network, the time of each network's last one, and its conversion values
/// by kind; and the data directory's free space.
///
/// The `ad_network` label is bounded: with `ad_network_ids` it is the configured spelling of each
/// (all present from start-up, at 0, so a network that never sends after a restart still has a
/// series to be found quiet); without, the first `labelLimit` networks stored get a label each
/// and later ones share `other`. Only stored postbacks count (a forgery never names a label).
final class FlowMetrics: MetricGroup {
    static let labelLimit = 32

    /// The kinds of value a winning production postback carries: a fine value (0 apart, since values
    /// stuck at 0 are a failure of their own), only a coarse one, or none (Apple's privacy threshold).
    enum ValueKind: String, CaseIterable {
        case fine
        case fineZero = "fine-zero"
        case coarse
        case null

        init(_ attribution: Attribution) {
            if let fine = attribution.fineValue {
                self = fine == 0 ? .fineZero : .fine
            } else if attribution.coarseValue != nil {
                self = .coarse
            } else {
                self = .null
            }
        }
    }

    struct PostbackKey: MetricLabelValues {
        let network: String
        let environment: PostbackEnvironment
        let copy: PostbackCopy
        var labelValues: [String] { [network, environment.rawValue, copy.rawValue] }
    }
    struct ValueKey: MetricLabelValues {
        let network: String
        let kind: ValueKind
        var labelValues: [String] { [network, kind.rawValue] }
    }

    let postbacks = KeyedCounter<PostbackKey>(
        "postback_network_postbacks_total", labels: ["ad_network", "environment", "copy"],
        help:
            "Verified postbacks accepted (every copy: retries and both copies of a postback too), by ad network (ad_network_ids, or the first \(FlowMetrics.labelLimit) seen, then other), environment and copy (network, or developer: the request's Host is in developer_copy_hosts)."
    )
    let lastProduction = KeyedGauge<String>(
        "postback_network_last_postback_timestamp_seconds", labels: ["ad_network"],
        help: "When the last production postback of the ad network was received (Unix time).")
    let values = KeyedCounter<ValueKey>(
        "postback_network_conversion_values_total", labels: ["ad_network", "value"],
        help:
            "Winning production postbacks stored, by ad network and the value they carry: fine (1-63), fine-zero, coarse (only a coarse value), null (none: below Apple's privacy threshold)."
    )

    /// The ad networks with a label of their own.
    private let labelled: Locked<Set<String>>
    private let configured: Bool
    private let dataDirectory: String

    init(configuration: ServerConfiguration) {
        dataDirectory = configuration.dataDirectory
        var labelled: Set<String> = []
        if let ids = configuration.acceptedAdNetworkIDs {
            configured = true
            let policy = configuration.acceptancePolicy
            for id in ids {
                let spelling = policy.acceptedSpelling(ofAdNetworkID: id) ?? id
                labelled.insert(spelling)
                for copy in PostbackCopy.allCases {
                    postbacks.increment(PostbackKey(network: spelling, environment: .production, copy: copy), by: 0)
                }
                for kind in ValueKind.allCases { values.increment(ValueKey(network: spelling, kind: kind), by: 0) }
            }
        } else {
            configured = false
        }
        self.labelled = Locked(labelled)
    }

    /// A verified postback accepted and durable in `raw/postbacks`: `stored` when this copy was
    /// written, false when an earlier copy was (a retry, or the other copy of the same postback: an
    /// ad network's and an advertiser's copy are one postback, stored once). Every copy counts in
    /// `postback_network_postbacks_total` (that copies still arrive is what the alerts watch);
    /// values only once per postback. `network` is the configured spelling with `ad_network_ids`.
    func accepted(
        _ attribution: Attribution, network: String, environment: PostbackEnvironment, copy: PostbackCopy,
        stored: Bool, at time: UTCTimestamp
    ) {
        let label = label(network)
        postbacks.increment(PostbackKey(network: label, environment: environment, copy: copy))
        guard environment == .production else { return }
        let seconds = Double(time.microsecondsSinceEpoch) / 1_000_000
        lastProduction.update(label) { max($0 ?? 0, seconds) }
        // Non-winning postbacks never carry a value: counting them would dilute every share.
        if stored, attribution.isWinning { values.increment(ValueKey(network: label, kind: ValueKind(attribution))) }
    }

    private func label(_ network: String) -> String {
        labelled.withLock { labelled in
            if labelled.contains(network) { return network }
            if configured || labelled.count >= Self.labelLimit { return MetricLabels.other }
            labelled.insert(network)
            return network
        }
    }

    /// The handles, then the data directory's file system (read at scrape time).
    func render(into page: inout MetricsPage) {
        page.families(of: self)
        var info = statvfs()
        if statvfs(dataDirectory, &info) == 0 {
            page.family(
                "postback_data_available_bytes", .gauge,
                help: "Bytes available to the receiver on the data directory's file system."
            ) { $0.sample(UInt64(info.f_bavail) * UInt64(info.f_frsize)) }
            page.family("postback_data_size_bytes", .gauge, help: "Size of the data directory's file system in bytes.") {
                $0.sample(UInt64(info.f_blocks) * UInt64(info.f_frsize))
            }
        }
    }
}
