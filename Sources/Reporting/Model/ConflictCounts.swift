import AggregateSchema
import Basics

/// Copies of stored postbacks that came with other unsigned values than the stored copy (issue 24),
/// from the day manifests' `conflicting_copies` and `conflicts` (docs/aggregate.md). The stored copies
/// are counted as usual; these say how often, and where, relays or replays disagreed with them.
struct ConflictCounts {
    /// Copies that disagreed on at least one field.
    var copies = 0
    /// Disagreements by ad network (lower-cased, as the aggregates group them) and field.
    var byNetworkAndField: [NetworkField: Int] = [:]

    struct NetworkField: Hashable, Comparable {
        let network: String
        let field: String

        static func < (lhs: NetworkField, rhs: NetworkField) -> Bool { (lhs.network, lhs.field) < (rhs.network, rhs.field) }
    }

    init() {}

    /// Reads a manifest's members; a manifest written before them has none (nothing is counted).
    init(manifest root: ManifestObject<DayManifestKey>) {
        if let count = root.int64(.conflictingCopies), count >= 0 { copies = Int(count) }
        for row in root.objects(.conflicts, ManifestConflictKey.self) ?? [] {
            guard let network = row.string(.adNetworkID), let field = row.string(.field), let count = row.int64(.copies),
                count >= 0
            else { continue }
            byNetworkAndField[NetworkField(network: network, field: field), default: 0] += Int(count)
        }
    }

    mutating func add(_ other: ConflictCounts) {
        copies += other.copies
        for (key, count) in other.byNetworkAndField { byNetworkAndField[key, default: 0] += count }
    }

    /// By ad network and field, the largest count first.
    var rows: [(key: NetworkField, count: Int)] {
        byNetworkAndField.map { ($0.key, $0.value) }.sorted { $0.count != $1.count ? $0.count > $1.count : $0.key < $1.key }
    }
}
