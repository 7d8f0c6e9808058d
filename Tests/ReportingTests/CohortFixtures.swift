import AggregateSchema
import Aggregation
import Foundation
import Parquet
import PostbackCrypto

@testable import Reporting

/// Writes the cohort tables exactly as docs/aggregate.md documents them ("campaign_cohort_daily"),
/// without the job that will make them: `agg/<table>/dt=INSTALL_DAY/part-00000.csv` (or `.parquet`)
/// with the documented columns in file order, rows sorted by their bytes, and last
/// `agg/_cohort_manifests/dt=INSTALL_DAY.json` listing each file's `path`, `rows`, `bytes` and
/// `sha256`. Also writes the day tables a page needs, by hand (`postback_detail_daily` and its manifest).
enum CohortFixture {
    /// The `CREATE TABLE campaign_cohort_daily` block of docs/aggregate.md, in file order, without `dt`
    /// (in the directory name), with each column's declared type.
    static let columns: [(name: String, type: String)] = [
        ("app_id", "BIGINT"), ("ad_network_id", "VARCHAR"), ("campaign_id", "BIGINT"), ("source_identifier", "VARCHAR"),
        ("campaign", "VARCHAR"), ("cohort_status", "VARCHAR"), ("complete_through", "DATE"), ("spend", "DECIMAL(38, 6)"),
        ("spend_currency", "VARCHAR"), ("spend_fx_rate", "DECIMAL(38, 10)"), ("impressions", "BIGINT"), ("clicks", "BIGINT"),
        ("reported_installs", "BIGINT"), ("installs", "BIGINT"), ("redownloads", "BIGINT"), ("reengagements", "BIGINT"),
        ("postbacks_w1", "BIGINT"), ("postbacks_w2", "BIGINT"), ("postbacks_w3", "BIGINT"), ("winning_postbacks", "BIGINT"),
        ("null_cv_postbacks", "BIGINT"), ("null_cv_share", "DECIMAL(38, 6)"), ("revenue_currency", "VARCHAR"),
        ("revenue_est_w1", "DECIMAL(38, 6)"), ("revenue_min_w1", "DECIMAL(38, 6)"), ("revenue_max_w1", "DECIMAL(38, 6)"),
        ("revenue_est_w2", "DECIMAL(38, 6)"), ("revenue_min_w2", "DECIMAL(38, 6)"), ("revenue_max_w2", "DECIMAL(38, 6)"),
        ("revenue_est_w3", "DECIMAL(38, 6)"), ("revenue_min_w3", "DECIMAL(38, 6)"), ("revenue_max_w3", "DECIMAL(38, 6)"),
        ("revenue_est_cum_w2", "DECIMAL(38, 6)"), ("revenue_min_cum_w2", "DECIMAL(38, 6)"),
        ("revenue_max_cum_w2", "DECIMAL(38, 6)"), ("revenue_est_cum_w3", "DECIMAL(38, 6)"),
        ("revenue_min_cum_w3", "DECIMAL(38, 6)"), ("revenue_max_cum_w3", "DECIMAL(38, 6)"), ("cpi", "DECIMAL(38, 6)"),
        ("roas_w1", "DECIMAL(38, 6)"), ("roas_w2", "DECIMAL(38, 6)"), ("roas_w3", "DECIMAL(38, 6)"), ("roas_note", "VARCHAR"),
        ("reported_installs_excess", "BIGINT"),
    ]

    /// The counts, never empty (`installs` … `null_cv_postbacks`).
    static let counts: Set<String> = [
        "installs", "redownloads", "reengagements", "postbacks_w1", "postbacks_w2", "postbacks_w3", "winning_postbacks",
        "null_cv_postbacks",
    ]

    typealias Row = [String: String]

    /// A cohort row as the job would write it from these figures: revenue per window (estimates only),
    /// the cumulative sums, `cpi`, the ROAS columns (or `roas_note`) and the claim's excess, all with the
    /// documented rounding (half up to six decimals), computed here.
    static func row(
        app: String = "111", network: String, campaign: String? = nil, sourceIdentifier: String? = nil,
        status: String, spend: String?, spendCurrency: String?, reported: Int? = nil, installs: Int,
        revenueCurrency: String? = "USD", revenue: [String?] = [nil, nil, nil], note: String? = nil
    ) -> Row {
        var row: Row = ["app_id": app, "ad_network_id": network, "cohort_status": status, "installs": String(installs)]
        row["campaign"] = campaign
        row["source_identifier"] = sourceIdentifier
        row["spend"] = spend
        row["spend_currency"] = spendCurrency
        if let reported {
            row["reported_installs"] = String(reported)
            row["reported_installs_excess"] = String(reported - installs)
        }
        for count in counts where row[count] == nil { row[count] = "0" }
        row["postbacks_w1"] = String(installs)
        row["winning_postbacks"] = String(installs)
        row["revenue_currency"] = revenueCurrency
        for (window, value) in revenue.enumerated() { row["revenue_est_w\(window + 1)"] = value }
        let micros = revenue.map { $0.map(Micros.parse) }
        if micros.contains(where: { $0 != nil }) {
            row["revenue_est_cum_w2"] = decimal((micros[0] ?? 0) + (micros[1] ?? 0))
            row["revenue_est_cum_w3"] = decimal((micros[0] ?? 0) + (micros[1] ?? 0) + (micros[2] ?? 0))
        }
        if let spend, installs > 0 { row["cpi"] = quotient(Micros.parse(spend), Int64(installs) * 1_000_000) }
        if let note {
            row["roas_note"] = note
        } else if let spend {
            let cumulative = [row["revenue_est_w1"], row["revenue_est_cum_w2"], row["revenue_est_cum_w3"]]
            for (window, revenue) in cumulative.enumerated() {
                row["roas_w\(window + 1)"] = quotient(Micros.parse(revenue!), Micros.parse(spend))
            }
        }
        return row
    }

    /// `a ÷ b` rounded half up to six decimals: `(2·a·10⁶ + b) div (2·b)` millionths.
    static func quotient(_ a: Int64, _ b: Int64) -> String {
        decimal(Int64((2 * Int128(a) * 1_000_000 + Int128(b)) / (2 * Int128(b))))
    }

    /// Micro-units as the tables write amounts: the shortest exact decimal, no exponent.
    static func decimal(_ micros: Int64) -> String {
        let whole = micros / 1_000_000
        var fraction = String(micros % 1_000_000)
        while fraction.count < 6 { fraction = "0" + fraction }
        while fraction.hasSuffix("0") { fraction.removeLast() }
        return fraction.isEmpty ? String(whole) : "\(whole).\(fraction)"
    }

    /// The table's CSV text: header, then the rows sorted by their bytes, `\n` line ends, RFC 4180
    /// quoting only where a field needs it, an empty field for null.
    static func csv(_ rows: [Row]) -> String {
        func field(_ value: String?) -> String {
            guard let value else { return "" }
            if value.isEmpty { return "\"\"" }
            if value.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) {
                return "\"" + value.replacingOccurrences(of: "\"", with: "\"\"") + "\""
            }
            return value
        }
        let lines = rows.map { row in columns.map { field(row[$0.name]) }.joined(separator: ",") }
            .sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
        return ([columns.map(\.name).joined(separator: ",")] + lines).map { $0 + "\n" }.joined()
    }

    /// The same rows as a Parquet file, each column typed as the `CREATE TABLE` block declares.
    static func parquet(_ rows: [Row]) throws -> [UInt8] {
        var parquetColumns = columns.map { column in
            ParquetColumn(name: column.name, type: parquetType(column.type), nullable: !counts.contains(column.name))
        }
        let sorted = rows.sorted { lhs, rhs in
            let line = { (row: Row) in columns.map { row[$0.name] ?? "" }.joined(separator: ",") }
            return Array(line(lhs).utf8).lexicographicallyPrecedes(Array(line(rhs).utf8))
        }
        for row in sorted {
            for index in parquetColumns.indices {
                let failure: ParquetError?
                if let value = row[columns[index].name] {
                    let bytes = Array(value.utf8)
                    failure = bytes.withUnsafeBufferPointer { parquetColumns[index].append(text: $0) }
                } else {
                    failure = parquetColumns[index].append(text: nil)
                }
                if let failure { throw failure }
            }
        }
        return try ParquetWriter.write(parquetColumns)
    }

    private static func parquetType(_ sql: String) -> ParquetType {
        switch sql {
        case "VARCHAR": return .string
        case "BIGINT": return .int64
        case "DATE": return .date
        case "DECIMAL(38, 10)": return .decimal(precision: 38, scale: 10)
        default: return .decimal(precision: 38, scale: 6)
        }
    }

    enum Format { case csv, parquet }

    /// Writes one install date's cohorts: each table's file, then the cohort manifest listing them.
    static func write(
        _ store: ScratchStore, day: String, tables: [String: [Row]], format: Format = .csv, completeThrough: String? = nil
    ) throws {
        var outputs: [[String: Any]] = []
        for table in tables.keys.sorted() {
            let rows = tables[table]!
            let relative = "agg/\(table)/dt=\(day)/part-00000.\(format == .csv ? "csv" : "parquet")"
            let bytes = format == .csv ? Array(csv(rows).utf8) : try parquet(rows)
            try FileManager.default.createDirectory(
                atPath: store.path("agg/\(table)/dt=\(day)"), withIntermediateDirectories: true)
            try Data(bytes).write(to: URL(fileURLWithPath: store.path(relative)))
            outputs.append([
                "table": table, "path": relative, "rows": rows.count, "bytes": bytes.count,
                "sha256": SHA256.hash(bytes).description,
            ])
        }
        let manifest: [String: Any] = [
            "format": 1, "dt": day, "tool": "postback test", "complete_through": completeThrough ?? NSNull(), "inputs": [],
            "outputs": outputs,
            "totals": ["postbacks": 0, "installs": 0, "spend_by_currency": [:], "revenue_est_by_currency": [:]] as [String: Any],
        ]
        try FileManager.default.createDirectory(atPath: store.path("agg/_cohort_manifests"), withIntermediateDirectories: true)
        try JSONSerialization.data(withJSONObject: manifest, options: [.sortedKeys]).write(
            to: URL(fileURLWithPath: store.path("agg/_cohort_manifests/dt=\(day).json")))
    }

    /// A received day's `postback_detail_daily` written by hand, with a format-3 manifest that lists
    /// its true size and checksum: one row per (app, network, campaign, installs, revenue) given.
    static func writeDay(
        _ store: ScratchStore, day: String,
        rows: [(app: String, network: String, campaign: String, installs: Int, revenue: String?)]
    ) throws {
        let columns = AggregateTables.detailColumns
        func name(_ column: AggregateColumn) -> String { column.name }
        let lines = rows.map { row -> String in
            var values: [String: String] = [
                name(.field(.appID)): row.app, name(.field(.adNetworkID)): row.network, name(.campaign): row.campaign,
                name(.field(.sequenceIndex)): "0", name(.cvKind): "fine", name(.field(.fineValue)): "1",
                name(.postbacks): String(row.installs), name(.installs): String(row.installs), name(.currency): "USD",
            ]
            if let revenue = row.revenue {
                values[name(.revenueEstSum)] = revenue
                values[name(.revenueMinSum)] = revenue
                values[name(.revenueMaxSum)] = revenue
            }
            return columns.map { values[$0] ?? "" }.joined(separator: ",")
        }.sorted()
        let csv = ([columns.joined(separator: ",")] + lines).map { $0 + "\n" }.joined()
        let table = AggregateTables.postbackDetailDaily
        try FileManager.default.createDirectory(atPath: store.path("agg/\(table)/dt=\(day)"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: store.path("agg/_manifests"), withIntermediateDirectories: true)
        try csv.write(toFile: store.path("agg/\(table)/dt=\(day)/part-00000.csv"), atomically: false, encoding: .utf8)
        let postbacks = rows.reduce(0) { $0 + $1.installs }
        let manifest = """
            {"format": 3, "dt": "\(day)", "tool": "postback test", "lookback_days": 0, "inputs": [], "lookback_inputs": [], "schemas": [],
             "outputs": [{"table": "\(table)", "path": "agg/\(table)/dt=\(day)/part-00000.csv", "rows": \(rows.count), "bytes": \(csv.utf8.count), "sha256": "\(SHA256.hash(Array(csv.utf8)))"}],
             "totals": {"postbacks": \(postbacks), "installs": \(postbacks), "redownloads": 0, "reengagements": 0, "losses": 0, "null_cv_postbacks": 0,
                        "revenue_est_by_currency": {}, "development_postbacks": 0, "rejected_postbacks": 0, "duplicates_same_day": 0,
                        "duplicates_of_earlier_days": 0, "corrupt_lines": 0, "torn_tails": 0},
             "rejected_by_status": {}, "rejected_reasons": [], "problems": []}
            """
        try manifest.write(toFile: store.path("agg/_manifests/dt=\(day).json"), atomically: false, encoding: .utf8)
    }
}
