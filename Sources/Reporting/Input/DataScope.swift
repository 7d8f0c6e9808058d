/// Which rows of the published aggregates a reader may see: those of some apps and some ad networks.
/// Each side is an explicit set or `.all`; there is no implicit "everything" (an empty set admits
/// nothing). A row is admitted only when its `app_id` is admitted AND its `ad_network_id` is: a row
/// without one of them (rejected records keyed by what they claim, …) is admitted only by `.all` on
/// that side.
///
/// Applied where rows are loaded (`AggregateLoader`, `CohortLoader`, `PublishedRows`), so nothing
/// computed afterwards (totals, rankings, "other" rows) can see a row outside it. The store-wide
/// counts of the manifests (rejected records by reason, duplicates, conflicts, corrupt lines) belong
/// to no app or network, so only `everything` reads them.
package struct DataScope: Sendable, Hashable {
    /// One side of a scope.
    package enum Members: Sendable, Hashable {
        case all
        case only(Set<String>)

        package func admits(_ value: String?) -> Bool {
            switch self {
            case .all: true
            case .only(let members): value.map(members.contains) ?? false
            }
        }

        /// `all`, or the members sorted and joined by commas (how the tokens file and `token list` write it).
        package var text: String {
            switch self {
            case .all: "all"
            case .only(let members): members.sorted().joined(separator: ",")
            }
        }

        /// `all`, or a comma-separated list of non-empty values; nil for an empty list or an empty value.
        package init?(text: String) {
            if text == "all" {
                self = .all
                return
            }
            let values = text.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            guard !values.isEmpty, values.allSatisfy({ !$0.isEmpty && $0 != "all" }) else { return nil }
            self = .only(Set(values))
        }
    }

    package var apps: Members
    package var networks: Members

    package init(apps: Members, networks: Members) {
        self.apps = apps
        self.networks = networks
    }

    /// Every row and the store-wide counts: the operator's own view.
    package static let everything = DataScope(apps: .all, networks: .all)

    package var isEverything: Bool { apps == .all && networks == .all }

    /// Whether a row of `app` and `network` may be seen.
    package func admits(app: String?, network: String?) -> Bool { apps.admits(app) && networks.admits(network) }

    /// This scope narrowed to one app (`report --app`, a query's `app=`): nil for no narrowing.
    package func narrowed(toApp app: String?) -> DataScope {
        guard let app else { return self }
        return DataScope(apps: apps.admits(app) ? .only([app]) : .only([]), networks: networks)
    }
}
