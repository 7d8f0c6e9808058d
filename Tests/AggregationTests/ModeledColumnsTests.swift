import AggregateSchema
import Foundation
import PostbackStore
import PostbackTesting
import Postbacks
import TestSupport
import Testing

@testable import Aggregation
@testable import Basics

/// The null-value model in the nightly job (docs/modeling.md): a store where the value distribution is
/// planted (app 111: two ad networks × twelve campaigns, each campaign's fine values drawn around its
/// own mean, a third of the winners null; app 222: too few postbacks to model; app 333: one campaign),
/// aggregated over ten days.
/// The modeled columns are checked with DuckDB from the docs, the measured columns against a run
/// without the model, two runs against each other byte for byte, and `postback model check` on it.
///
/// Size: `POSTBACK_MODEL_TEST_PER_DAY` postbacks of app 111 a day (default 240: about 25 s on two
/// loaded cores for the suite), e.g. `POSTBACK_MODEL_TEST_PER_DAY=3000 swift test --filter ModeledColumnsTests`.
@Suite(.serialized) struct ModeledColumnsTests {
    static let first = "2026-03-01"
    static let days = 10
    static let perDay = ProcessInfo.processInfo.environment["POSTBACK_MODEL_TEST_PER_DAY"].flatMap(Int.init) ?? 240
    /// Per campaign (network, source identifier): the mean fine value (revenue = value); twelve
    /// campaigns a network, with means from 4 to 26.
    static let campaigns: [(network: String, source: String, mean: Double)] = (0..<24).map { (index: Int) in
        let network = index < 12 ? "alpha.skadnetwork" : "beta.skadnetwork"
        let mean = 4 + Double(index * 7 % 23)
        return (network, String(1000 + index), mean)
    }

    static func schema(app: Int64, id: String) -> String {
        let entries = (1...63).map {
            #"{"value": \#($0), "label": "v\#($0)", "revenue": {"min": \#($0), "max": \#($0), "estimate": \#($0)}}"#
        }
        return """
            {"schema_id": "\(id)", "app_id": \(app), "effective_from": "2026-01-01", "currency": "USD",
             "windows": {"0": {"fine": {"entries": [{"value": 0, "label": "zero"}, \(entries.joined(separator: ", "))]}}}}
            """
    }

    static func day(_ offset: Int) -> String { UTCDay(first)!.adding(days: offset).description }

    /// The planted spool: values from a fixed seed, so every run writes the same store.
    static func buildSpool(root: String) throws {
        var spool = SpoolBuilder(root: root)
        var random = SplitMix64(seed: 0x6D6F_6465_6C)
        func unit() -> Double { Double(random.next() >> 11) / Double(1 << 53) }
        for offset in 0..<days {
            let date = day(offset)
            for index in 0..<perDay {
                let campaign = campaigns[Int(random.next() % UInt64(campaigns.count))]
                // Exponential around the campaign's mean, in 1…63: a skewed, positive value.
                let value = min(63, max(1, Int((-log(1 - unit()) * campaign.mean).rounded(.up))))
                let null = unit() < 1.0 / 3
                let seconds = String(format: "%02d:%02d:%02d", index / 3600 % 24, index / 60 % 60, index % 60)
                spool.add(
                    record(
                        AggregateJobTests.skan4(network: campaign.network, source: campaign.source, fine: null ? nil : value),
                        key: "p\(offset)-\(index)", at: "\(date)T\(seconds).000000Z"))
            }
            // App 333: one campaign, so its modeled mean is its own measured mean.
            for index in 0..<12 {
                let value = min(63, max(1, Int((-log(1 - unit()) * 10).rounded(.up))))
                spool.add(
                    record(
                        AggregateJobTests.skan4(
                            network: "gamma.skadnetwork", app: 333, source: "4001", fine: index % 3 == 0 ? nil : value),
                        key: "r\(offset)-\(index)", at: "\(date)T22:00:\(String(format: "%02d", index)).000000Z"))
            }
            // App 222: two postbacks a day, never the 30 measured a stratum needs.
            for index in 0..<2 {
                spool.add(
                    record(
                        AggregateJobTests.skan4(
                            network: "alpha.skadnetwork", app: 222, source: "3001", fine: index == 0 ? 5 : nil),
                        key: "q\(offset)-\(index)", at: "\(date)T23:00:0\(index).000000Z"))
            }
        }
        try spool.write()
    }

    static func aggregate(_ root: String, model: Bool = true, format: AggregateFormat = .csv, from: Int = 0) throws {
        var request = AggregationRequest(
            dataDirectory: root, from: UTCDay(day(from))!, to: UTCDay(day(days - 1))!, workers: 2, toolVersion: "postback test")
        request.model = model
        request.format = format
        try AggregationJob(
            request: request,
            catalog: catalog(
                schema(app: 111, id: "s111"), schema(app: 222, id: "s222"), schema(app: 333, id: "s333"))
        )
        .run()
        // The cohort pass, as `postback aggregate` runs it after the days.
        var cohorts = CohortRequest(dataDirectory: root, from: request.from, to: request.to, toolVersion: request.toolVersion)
        cohorts.format = format
        _ = try CohortBuilder.rebuild(cohorts)
    }

    /// One store, built and aggregated once for the suite's tests that only read it.
    static let store: String = {
        let root = TemporaryDirectory.create("modeled")
        try! buildSpool(root: root)
        try! aggregate(root)
        return root
    }()

    static func files(_ root: String) throws -> [String: [UInt8]] {
        var files: [String: [UInt8]] = [:]
        let agg = root + "/agg"
        for path in FileManager.default.enumerator(atPath: agg)!.compactMap({ $0 as? String })
        where !path.hasPrefix("_work") && !path.hasSuffix(".lock") {
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: agg + "/" + path, isDirectory: &isDirectory), !isDirectory.boolValue {
                files[path] = Array(try Data(contentsOf: URL(fileURLWithPath: agg + "/" + path)))
            }
        }
        return files
    }

    /// A CSV file without its last `count` columns (the modeled ones hold no comma or quote).
    static func strip(_ bytes: [UInt8], columns count: Int) -> [UInt8] {
        var out: [UInt8] = []
        for line in bytes.split(separator: 0x0A, omittingEmptySubsequences: false) where !line.isEmpty {
            var cut = line.endIndex
            for _ in 0..<count { cut = line[..<cut].lastIndex(of: 0x2C)! }
            out += line[..<cut]
            out.append(0x0A)
        }
        return out
    }

    /// The measured columns of every table are the same bytes with and without the model; only the
    /// appended columns differ, and with the model they hold figures.
    @Test func theModelOnlyAppendsColumns() throws {
        let without = TemporaryDirectory("modeled-off")
        try Self.buildSpool(root: without.path)
        try Self.aggregate(without.path, model: false)
        let on = try Self.files(Self.store)
        let off = try Self.files(without.path)
        #expect(on.keys.sorted() == off.keys.sorted())
        var modeledValues = 0
        var cohortModeled = 0
        for (path, bytes) in on.sorted(by: { $0.key < $1.key }) where path.hasSuffix(".csv") && !path.hasPrefix("_cohort") {
            let table = String(path.prefix { $0 != "/" })
            let appended = [
                AggregateTables.campaignDaily, AggregateTables.campaignDailyDevelopment, AggregateTables.campaignCohortDaily,
                AggregateTables.campaignCohortDailyDevelopment,
            ].contains(table)
            let count = appended ? AggregateTables.modeledColumns.count : 0
            #expect(Self.strip(bytes, columns: count) == Self.strip(off[path]!, columns: count), "\(path)")
            if table == AggregateTables.campaignCohortDaily {
                let rows = CSVText.rowsKeepingNulls(String(decoding: bytes, as: UTF8.self))
                cohortModeled += rows.filter { (($0["modeled_null_revenue_est"] ?? nil) ?? "0") != "0" }.count
                let offRows = CSVText.rowsKeepingNulls(String(decoding: off[path]!, as: UTF8.self))
                #expect(offRows.allSatisfy { row in AggregateTables.modeledColumns.allSatisfy { (row[$0.name] ?? nil) == nil } })
            }
            if table == AggregateTables.campaignDaily {
                let rows = CSVText.rowsKeepingNulls(String(decoding: bytes, as: UTF8.self))
                modeledValues += rows.filter { (($0["modeled_null_revenue_est"] ?? nil) ?? "0") != "0" }.count
                let offRows = CSVText.rowsKeepingNulls(String(decoding: off[path]!, as: UTF8.self))
                #expect(offRows.allSatisfy { row in AggregateTables.modeledColumns.allSatisfy { (row[$0.name] ?? nil) == nil } })
            }
            if table == AggregateTables.campaignDailyDevelopment {
                #expect(bytes == off[path]!, "the development table's modeled columns are empty either way")
            }
        }
        #expect(modeledValues >= Self.days, "rows with a modeled value: \(modeledValues)")
        #expect(cohortModeled >= Self.days, "cohort rows with a modeled value: \(cohortModeled)")
    }

    /// Two runs over the same inputs publish the same bytes: from scratch in another directory, and again
    /// over the published days (the pooling window then read from the published files, then from the
    /// model's cache); Parquet too.
    @Test func rerunsPublishTheSameBytes() throws {
        let again = TemporaryDirectory("modeled-again")
        try Self.buildSpool(root: again.path)
        try Self.aggregate(again.path)
        let first = try Self.files(Self.store).filter { !$0.key.hasPrefix("_cohort") || true }
        #expect(try Self.files(again.path) == first)
        try Self.aggregate(again.path, format: .both)
        let both = try Self.files(again.path)
        for (path, bytes) in first where path.hasSuffix(".csv") || path.hasPrefix("_manifests") == false {
            if path.hasSuffix(".csv") { #expect(both[path] == bytes, "\(path) changed in the rerun") }
        }
        let parquet = both.keys.filter { $0.hasPrefix("campaign_daily/") && $0.hasSuffix(".parquet") }
        #expect(parquet.count == Self.days)
        try Self.aggregate(again.path, format: .both)
        #expect(try Self.files(again.path) == both, "a rerun with Parquet changed bytes")
        // A run keeps the days it read in memory; the nightly run of one day reads the published days
        // before it (and caches their sums), the next reads that cache: the same bytes each time.
        #expect(!FileManager.default.fileExists(atPath: again.path + "/cache/model-2/campaign_daily"))
        try Self.aggregate(again.path, format: .both, from: Self.days - 1)
        #expect(FileManager.default.fileExists(atPath: again.path + "/cache/model-2/campaign_daily"))
        #expect(try Self.files(again.path) == both, "the last day alone, pooling from the published files")
        try Self.aggregate(again.path, format: .both, from: Self.days - 1)
        #expect(try Self.files(again.path) == both, "the last day alone, pooling from the model's cache")
        // The manifest names the model.
        let manifest = try JSONSerialization.jsonObject(
            with: Data(contentsOf: URL(fileURLWithPath: "\(Self.store)/agg/_manifests/dt=\(Self.day(3)).json")))
        let model = try #require((manifest as? [String: Any])?["model"] as? [String: Any])
        #expect(model["name"] as? String == "null-eb-2")
        #expect(model["pooling_days"] as? Int == 28 && model["min_measured"] as? Int == 30)
        #expect(model["prior_postbacks"] as? Int == 30)
        #expect(model["interval"] as? Double == 0.9)
    }

    /// Every modeled figure that follows from the docs without the estimator, recomputed with DuckDB
    /// over the published files: each row's campaign's own values variance σ²_c and zero share p0_c,
    /// shrunk toward its network's and the network's toward its stratum's (its values variance is
    /// k · σ²_c, its log_p_zero k · ln p0_c), the too-little-data rows and their note, the sum column,
    /// zeros without nulls, the interval around the estimate (low 0 when log_p_zero ≥ ln 0.05); and a
    /// stratum of one campaign, whose mean is the stratum's.
    @Test func modeledColumnsFollowTheDocs() throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: VenvPython.path), "no \(VenvPython.path): run scripts/setup --test")
        let result = try VenvPython.run(script: Self.sqlCheck, arguments: [Self.store])
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        let answer = try #require(
            try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "\(result.stdout)")
        #expect(answer["problems"] as? [String] == [], "\(answer)")
        // Far above a stub's figures: every day's null rows of app 111 modeled, app 222's every row noted.
        #expect((answer["modeled_null_rows"] as? Int ?? 0) >= Self.days * 6, "\(answer)")
        #expect((answer["too_little_rows"] as? Int ?? 0) >= Self.days, "\(answer)")
        #expect((answer["one_campaign_rows"] as? Int ?? 0) >= Self.days - 3, "\(answer)")
    }

    static let sqlCheck = """
        import duckdb, json, math, sys
        root = sys.argv[1]
        con = duckdb.connect()
        con.execute(f\"\"\"CREATE TABLE cd AS SELECT * FROM read_csv('{root}/agg/campaign_daily/dt=*/part-00000.csv',
            hive_partitioning = true, header = true, auto_detect = true, all_varchar = false,
            types = {{'revenue_est_sum': 'DECIMAL(38,6)', 'modeled_null_revenue_est': 'DECIMAL(38,6)',
                      'modeled_null_revenue_low': 'DECIMAL(38,6)', 'modeled_null_revenue_high': 'DECIMAL(38,6)',
                      'modeled_revenue_est': 'DECIMAL(38,6)', 'modeled_null_values_var': 'DOUBLE',
                      'modeled_null_mean_sd': 'DOUBLE', 'modeled_null_log_p_zero': 'DOUBLE', 'modeled_note': 'VARCHAR', 'source_identifier': 'VARCHAR',
                      'currency': 'VARCHAR', 'conversion_type': 'VARCHAR', 'ad_network_id': 'VARCHAR'}})\"\"\")
        # docs/modeling.md: a row's m = postbacks - null_cv_postbacks measured postbacks, each worth
        # revenue_est_sum / m (z: those of rows worth exactly 0); a stratum (window, conversion type
        # install or re-engagement) pools the 28 arrival days up to the row's day; a campaign is
        # (ad network, source identifier, campaign id).
        con.execute(\"\"\"CREATE TABLE measured AS SELECT dt::DATE AS dt, app_id, currency, coalesce(postback_sequence_index, 0) AS w,
            CASE WHEN conversion_type = 're-engagement' THEN 're-engagement' ELSE 'install' END AS ct,
            ad_network_id AS net, coalesce(source_identifier, '') AS src, coalesce(campaign_id::VARCHAR, '') AS cid,
            postbacks - null_cv_postbacks AS m, revenue_est_sum::DOUBLE AS r,
            CASE WHEN revenue_est_sum = 0 THEN postbacks - null_cv_postbacks ELSE 0 END AS z
            FROM cd WHERE revenue_est_sum IS NOT NULL AND postbacks - null_cv_postbacks > 0 AND currency IS NOT NULL\"\"\")
        con.execute(\"\"\"CREATE TABLE keyed AS SELECT *, dt::DATE AS d, coalesce(postback_sequence_index, 0) AS kw,
            CASE WHEN conversion_type = 're-engagement' THEN 're-engagement' ELSE 'install' END AS kct,
            coalesce(source_identifier, '') AS ksrc, coalesce(campaign_id::VARCHAR, '') AS kcid
            FROM cd WHERE currency IS NOT NULL\"\"\")
        # Per level (app, network, campaign): n, mean, s2 (population) and z over the pooling window.
        def level(name, keys):
            on = ''.join(f' AND m.{a} = d.{b}' for a, b in keys)
            cols = ''.join(f', d.{b}' for _, b in keys)
            con.execute(f\"\"\"CREATE TABLE {name} AS SELECT d.d, d.app_id, d.currency, d.kw, d.kct{cols},
                sum(m.m) AS n, sum(m.r) / sum(m.m) AS mean,
                greatest(0, sum(m.r * m.r / m.m) / sum(m.m) - pow(sum(m.r) / sum(m.m), 2)) AS s2, sum(m.z) AS z,
                count(DISTINCT m.net || '/' || m.src || '/' || m.cid) AS campaigns
                FROM (SELECT DISTINCT d, app_id, currency, kw, kct{cols.replace('d.', '')} FROM keyed) d
                LEFT JOIN measured m ON m.app_id = d.app_id AND m.currency = d.currency AND m.w = d.kw AND m.ct = d.kct{on}
                     AND m.dt BETWEEN d.d - INTERVAL 27 DAY AND d.d
                GROUP BY ALL\"\"\")
        level('app', [])
        level('network', [('net', 'ad_network_id')])
        level('campaign', [('net', 'ad_network_id'), ('src', 'ksrc'), ('cid', 'kcid')])
        rows = con.execute(\"\"\"SELECT c.d, c.app_id, c.null_cv_postbacks AS k, c.revenue_est_sum, c.modeled_null_revenue_est,
            c.modeled_null_revenue_low, c.modeled_null_revenue_high, c.modeled_revenue_est, c.modeled_null_values_var,
            c.modeled_null_mean_sd, c.modeled_null_log_p_zero, c.modeled_note, coalesce(a.n, 0), a.mean, a.s2, a.z, a.campaigns,
            coalesce(n.n, 0), n.s2, n.z, coalesce(p.n, 0), p.s2, p.z
            FROM keyed c
            JOIN app a ON a.d = c.d AND a.app_id = c.app_id AND a.currency = c.currency AND a.kw = c.kw AND a.kct = c.kct
            JOIN network n ON n.d = c.d AND n.app_id = c.app_id AND n.currency = c.currency AND n.kw = c.kw AND n.kct = c.kct
                 AND n.ad_network_id = c.ad_network_id
            JOIN campaign p ON p.d = c.d AND p.app_id = c.app_id AND p.currency = c.currency AND p.kw = c.kw AND p.kct = c.kct
                 AND p.ad_network_id = c.ad_network_id AND p.ksrc = c.ksrc AND p.kcid = c.kcid
            ORDER BY ALL\"\"\").fetchall()
        problems, modeled, little, one_campaign = [], 0, 0, 0
        P = 30
        def close(a, b, rel=1e-9):
            return abs(a - b) <= rel * max(abs(a), abs(b), 1e-12)
        for (dt, app, k, rev, est, low, high, total, var, sd, lpz, note, n, mean, sigma2, z_app, campaigns,
             n_net, s2_net, z_net, n_c, s2_c, z_c) in rows:
            where = f"{dt} app {app}"
            if n < 30:
                little += 1
                expected = f"too little data: {n} measured postback{'' if n == 1 else 's'} for this app and window in 28 days (30 needed)"
                if note != expected or any(v is not None for v in (est, low, high, total, var, sd, lpz)):
                    problems.append(f"{where}: n {n}, note {note!r}, modeled {est}")
                continue
            if note is not None:
                problems.append(f"{where}: a note on a modeled row: {note!r}")
            if k == 0:
                if (est, low, high, var, sd, lpz) != (0, 0, 0, 0.0, 0.0, 0.0):
                    problems.append(f"{where}: no null, modeled {est} {low} {high} {var} {sd} {lpz}")
                if total != rev:
                    problems.append(f"{where}: modeled_revenue_est {total}, revenue_est_sum {rev}")
                continue
            modeled += 1
            # The campaign's own values variance and zero share, shrunk toward its network's, the network's
            # toward the app's (prior weight P postbacks; a level without data: its parent's).
            sigma2_net = (n_net * (s2_net or 0) + P * sigma2) / (n_net + P)
            sigma2_c = (n_c * (s2_c or 0) + P * sigma2_net) / (n_c + P)
            p0_app = z_app / n
            p0_net = ((z_net or 0) + P * p0_app) / (n_net + P)
            p0_c = ((z_c or 0) + P * p0_net) / (n_c + P)
            if not close(var, k * sigma2_c):
                problems.append(f"{where}: values variance {var}, k sigma2_c {k * sigma2_c}")
            want_lpz = k * (math.log(p0_c) if p0_c > 0 else math.log(1e-300))
            if not close(lpz, want_lpz):
                problems.append(f"{where}: log_p_zero {lpz}, k ln p0_c {want_lpz}")
            if lpz >= math.log(0.05) and low != 0:
                problems.append(f"{where}: log_p_zero {lpz} >= ln 0.05 but the low end is {low}")
            if total != (rev or 0) + est:
                problems.append(f"{where}: modeled_revenue_est {total} is not {rev} + {est}")
            if not (low <= est <= high) or low < 0:
                problems.append(f"{where}: interval {low}..{high} around {est}")
            if campaigns == 1:
                one_campaign += 1
                if abs(float(est) - k * mean) > 0.0000005 + 1e-12 * k * mean:
                    problems.append(f"{where}: one campaign: {est}, expected k * mean = {k * mean}")
        print(json.dumps({"problems": problems[:20], "modeled_null_rows": modeled, "too_little_rows": little,
                          "one_campaign_rows": one_campaign}))
        """

    /// `campaign_cohort_daily`'s modeled columns recomputed with DuckDB and SciPy from the published
    /// `campaign_daily` files by docs/modeling.md's sum rule: each cohort row's campaign_daily rows (same
    /// install date and key) summed, the mean parts summed per model campaign (with its campaign ID) and
    /// stratum (window, conversion type as the model pools it) before squaring, `modeled_null_log_p_zero`
    /// summed, the gamma interval (low end 0 when that sum ≥ ln 0.05), measured + modeled, and the notes of
    /// rows with too little data.
    @Test func cohortModeledColumnsFollowTheSumRule() throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: VenvPython.path), "no \(VenvPython.path): run scripts/setup --test")
        let result = try VenvPython.run(script: Self.cohortCheck, arguments: [Self.store])
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        let answer = try #require(
            try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "\(result.stdout)")
        #expect(answer["problems"] as? [String] == [], "\(answer)")
        #expect((answer["modeled_rows"] as? Int ?? 0) >= Self.days * 10, "\(answer)")
        #expect((answer["noted_rows"] as? Int ?? 0) >= Self.days, "\(answer)")
    }

    static let cohortCheck = """
        import duckdb, json, math, sys
        from scipy.stats import gamma
        root = sys.argv[1]
        con = duckdb.connect()
        types = {'revenue_est_sum': 'DECIMAL(38,6)', 'modeled_null_revenue_est': 'DECIMAL(38,6)',
                 'modeled_null_revenue_low': 'DECIMAL(38,6)', 'modeled_null_revenue_high': 'DECIMAL(38,6)',
                 'modeled_revenue_est': 'DECIMAL(38,6)', 'modeled_null_values_var': 'DOUBLE',
                 'modeled_null_mean_sd': 'DOUBLE', 'modeled_null_log_p_zero': 'DOUBLE', 'modeled_note': 'VARCHAR',
                 'source_identifier': 'VARCHAR', 'currency': 'VARCHAR', 'conversion_type': 'VARCHAR', 'ad_network_id': 'VARCHAR',
                 'campaign': 'VARCHAR',
                 'campaign_id': 'BIGINT'}
        def load(name, table, types):
            con.execute(f\"\"\"CREATE TABLE {name} AS SELECT * FROM read_csv('{root}/agg/{table}/dt=*/part-00000.csv',
                hive_partitioning = true, header = true, auto_detect = true, types = {types})\"\"\")
        load('cd', 'campaign_daily', types)
        for name in ('revenue_est_sum', 'currency', 'conversion_type'):
            del types[name]
        load('co', 'campaign_cohort_daily', {**types, 'revenue_est_cum_w3': 'DECIMAL(38,6)', 'revenue_currency': 'VARCHAR'})
        # A cohort row is the campaign_daily rows of its install date and key (no campaign names here); its
        # mean part is summed per model campaign (network, source identifier, campaign ID) and stratum (currency,
        # window — an empty one is 0 —, conversion type as the model pools it) before it is squared.
        con.execute(\"\"\"CREATE TABLE per_campaign AS SELECT est_install_date::DATE AS dt, app_id, ad_network_id,
            campaign_id, source_identifier, coalesce(postback_sequence_index, 0) AS window,
            CASE WHEN conversion_type = 're-engagement' THEN 're-engagement' ELSE 'install' END AS kind, currency,
            sum(modeled_null_revenue_est) AS est, sum(modeled_null_values_var) AS var, sum(modeled_null_mean_sd) AS sd,
            sum(modeled_null_log_p_zero) AS lpz, string_agg(DISTINCT modeled_note, '; ' ORDER BY modeled_note) AS note
            FROM cd WHERE postbacks > 0 AND est_install_date IS NOT NULL GROUP BY ALL\"\"\")
        rows = con.execute(\"\"\"SELECT co.dt, co.app_id, co.ad_network_id, co.source_identifier, co.revenue_currency,
            co.revenue_est_cum_w3, co.modeled_null_revenue_est, co.modeled_null_revenue_low, co.modeled_null_revenue_high,
            co.modeled_revenue_est, co.modeled_null_values_var, co.modeled_null_mean_sd, co.modeled_null_log_p_zero,
            co.modeled_note, sum(p.est), sum(p.var), sum(p.sd), sum(p.var + p.sd * p.sd), sum(p.lpz),
            string_agg(DISTINCT p.note, '; ' ORDER BY p.note)
            FROM co JOIN per_campaign p ON p.dt = co.dt::DATE AND p.app_id = co.app_id AND p.ad_network_id = co.ad_network_id
                 AND p.campaign_id IS NOT DISTINCT FROM co.campaign_id
                 AND p.source_identifier IS NOT DISTINCT FROM co.source_identifier
            GROUP BY ALL ORDER BY ALL\"\"\").fetchall()
        problems, modeled, noted, zero_low = [], 0, 0, 0
        def close(a, b, rel=1e-9):
            return abs(a - b) <= rel * max(abs(a), abs(b), 1e-12)
        def micro(x):
            return round(x * 1e6) / 1e6
        for (dt, app, net, src, cur, rev, est, low, high, total, var, sd, lpz, note, e_est, e_var, e_sd, e_variance, e_lpz,
             e_note) in rows:
            where = f"{dt} app {app} {net}/{src}"
            if cur is None:
                if any(v is not None for v in (est, low, high, total, var, sd, lpz, note)):
                    problems.append(f"{where}: no revenue currency, modeled {est} note {note!r}")
                continue
            if e_note is not None:
                noted += 1
                if note != e_note or any(v is not None for v in (est, low, high, total, var, sd, lpz)):
                    problems.append(f"{where}: note {note!r}, expected {e_note!r}, modeled {est}")
                continue
            if e_est is None:
                if any(v is not None for v in (est, low, high, total, var, sd, lpz, note)):
                    problems.append(f"{where}: no modeled row, modeled {est}")
                continue
            modeled += 1
            if note is not None or est != e_est or not close(var, e_var) or not close(sd, e_sd) or not close(lpz, e_lpz):
                problems.append(f"{where}: {est} {var} {sd} {lpz} {note!r}, expected {e_est} {e_var} {e_sd} {e_lpz}")
                continue
            if total != (rev or 0) + est and not (rev is None and est == 0 and total is None):
                problems.append(f"{where}: modeled_revenue_est {total} is not {rev} + {est}")
            mean = float(est)
            if mean == 0:
                expected = (0.0, 0.0)
            elif e_variance == 0:
                expected = (mean, mean)
            else:
                shape, scale = mean * mean / e_variance, e_variance / mean
                expected = (max(0.0, gamma.ppf(0.05, shape, scale=scale)), gamma.ppf(0.95, shape, scale=scale))
            if mean > 0 and e_lpz >= math.log(0.05):   # a 5% chance or more that every null postback is worth 0
                expected = (0.0, expected[1])
                zero_low += 1
            if abs(float(low) - micro(expected[0])) > 2e-6 or abs(float(high) - micro(expected[1])) > 2e-6:
                problems.append(f"{where}: interval {low}..{high}, expected {expected}")
        print(json.dumps({"problems": problems[:20], "modeled_rows": modeled, "noted_rows": noted, "zero_low_rows": zero_low}))
        """

    /// `postback model check` on the planted store: each campaign's values are independent draws around
    /// its own mean, as the model assumes, so the 90% intervals of totals with five or more hidden
    /// postbacks hold the hidden truth about 90% of the time, and the app's total is close; the same
    /// seed gives the same answer; a missing or empty store is a clear error.
    @Test func modelCheckOnAPlantedDistribution() throws {
        let arguments = ["model", "check", "--data", Self.store, "--from", Self.day(3), "--to", Self.day(Self.days - 1)]
        let run = TestSupport.run(arguments + ["--json"])
        #expect(run.status == .success, "\(run.stderr)")
        let answer = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        #expect(TestSupport.run(arguments + ["--json"]).stdout == run.stdout, "the same seed hides the same postbacks")
        #expect(TestSupport.run(arguments + ["--json", "--seed", "7"]).stdout != run.stdout)
        let windows = try #require(answer["campaign_windows"] as? [String: Any])
        let bySize = try #require(windows["by_hidden_postbacks"] as? [[String: Any]])
        let large = bySize.filter { ["5-19", "20+"].contains($0["hidden_postbacks"] as? String) }
        let tested = large.reduce(0) { $0 + ($1["tested"] as? Int ?? 0) }
        let covered = large.reduce(0) { $0 + ($1["covered"] as? Int ?? 0) }
        #expect(tested >= 20, "\(answer)")
        #expect(Double(covered) >= 0.7 * Double(tested), "\(covered) of \(tested) covered: \(answer)")
        let apps = try #require(answer["apps"] as? [[String: Any]])
        let app = try #require(apps.first { $0["app_id"] as? String == "111" })
        let error = try #require(app["relative_error"] as? Double)
        #expect(abs(error) < 0.15, "\(app)")
        // App 222 never has the 30 measured postbacks: its hidden postbacks are not tested.
        #expect(!apps.contains { $0["app_id"] as? String == "222" })
        #expect((answer["untested_postbacks"] as? Int ?? 0) >= 0)

        let text = TestSupport.run(arguments)
        #expect(text.status == .success)
        #expect(text.stdout.contains("campaign × window totals: the 90% interval holds the hidden value for "), "\(text.stdout)")
        #expect(text.stdout.contains("app 111 (USD): modeled "), "\(text.stdout)")

        let missing = TestSupport.run([
            "model", "check", "--data", Self.store + "/nowhere", "--from", Self.first, "--to", Self.first,
        ])
        #expect(missing.status == .usageOrIOError)
        #expect(missing.stderr.contains("\(Self.store)/nowhere: no such directory"), "\(missing.stderr)")
        let empty = TemporaryDirectory("modeled-empty")
        let nothing = TestSupport.run(["model", "check", "--data", empty.path, "--from", Self.first, "--to", Self.first])
        #expect(nothing.status == .usageOrIOError)
        #expect(nothing.stderr.contains("run 'postback aggregate' for those days first"), "\(nothing.stderr)")
    }
}
