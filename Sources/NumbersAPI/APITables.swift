package import AggregateSchema
import Aggregation
package import Reporting

/// The tables the API serves, with their typed columns (the published schema, `AggregateTables`),
/// and which of them a scope may read: a table whose rows name both an app and an ad network
/// (`app_id`, `ad_network_id`) can be filtered to any scope; any other is served only to a token
/// whose scope is all apps and all networks, and is not listed for others (it answers as a table
/// that does not exist).
package enum APITables {
    package struct Table: Sendable {
        package let name: String
        package let columns: [AggregateColumn]

        package init(name: String, columns: [AggregateColumn]) {
            self.name = name
            self.columns = columns
        }

        /// Whether every row names its app and ad network.
        package var isAttributable: Bool {
            let names = Set(columns.map(\.name))
            return names.contains(AggregateColumn.field(.appID).name) && names.contains(AggregateColumn.field(.adNetworkID).name)
        }

        /// The column that says whether a row's figures may still grow (`cohort_status` of the cohort
        /// tables): always answered, even when `columns=` leaves it out, so an open cohort is never
        /// shown as final.
        package var maturityColumn: String? {
            let name = AggregateColumn.cohort(.cohortStatus).name
            return columns.contains { $0.name == name } ? name : nil
        }

        func column(named name: String) -> AggregateColumn? { columns.first { $0.name == name } }
    }

    /// The partition column every answer's rows start with (as Hive-partitioned readers add it).
    package static let dayColumn = "dt"

    /// Every day table the nightly job publishes, in its order, then the install-date cohort tables
    /// (partitioned by install date: their `dt` is the cohort's install date).
    package static let all: [Table] =
        AggregateTables.columnsByTable.map { Table(name: $0.table, columns: $0.columns) }
        + AggregateTables.cohortTables.map { Table(name: $0.table, columns: AggregateTables.cohortColumns) }

    /// The tables of `tables` (by default every served table) that `scope` may read.
    package static func served(to scope: DataScope, from tables: [Table] = all) -> [Table] {
        tables.filter { scope.isEverything || $0.isAttributable }
    }

    /// The JSON type of a column's values in a JSON answer (`sqlType` mapped).
    static func jsonKind(_ sqlType: String) -> JSONKind {
        switch sqlType {
        case "BIGINT", "INTEGER": .integer
        case "BOOLEAN": .boolean
        case "DOUBLE": .number
        case _ where sqlType.hasPrefix("DECIMAL"): .number
        default: .string
        }
    }

    enum JSONKind { case integer, number, boolean, string }
}
