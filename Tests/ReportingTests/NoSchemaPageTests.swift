import AggregateSchema
import Aggregation
import Foundation
import PostbackStore
import PostbackTesting
import TestSupport
import Testing

@testable import Basics
@testable import Reporting

/// A receiver's store and no schema yet: `aggregate` without `--schemas`, then `report`. Seen in
/// Chromium at 1280×800, the first screen shows the store's postbacks and installs (summed here from
/// the published table) and the "no schema" notice naming the apps, what a schema adds and the
/// exact `postback schema init` command.
@Suite(.serialized, .disabled(if: TestScale.underSanitizer, "Chromium is not sanitized (TestScale)")) struct NoSchemaPageTests {
    @Test func aStoreWithoutSchemasShowsItsCountsAndTheNoSchemaNotice() throws {
        let directory = TemporaryDirectory("no-schema-page")
        let root = directory.path + "/store"
        var spool = SyntheticSpool()
        spool.postbacksPerDay = 2000
        spool.apps = [111, 222]
        _ = try spool.write(to: StoreLayout(root: root), first: UTCDay("2026-03-10")!, days: 1)
        let aggregated = TestSupport.run(["aggregate", "--data", root, "--date", "2026-03-10"])
        #expect(aggregated.status == .success, "\(aggregated.stdout)\(aggregated.stderr)")
        let page = directory.path + "/report.html"
        let reported = TestSupport.run(["report", "--data", root, "--date", "2026-03-10", "--out", page])
        #expect(reported.status == .success, "\(reported.stderr)")

        var postbacks = 0
        var installs = 0
        var byApp: [String: Int] = [:]
        let table = try String(
            contentsOfFile: root + "/agg/campaign_daily/dt=2026-03-10/part-00000.csv", encoding: .utf8)
        for row in CSVText.rowsKeepingNulls(table) {
            postbacks += row.int("postbacks")
            installs += row.int("installs")
            if let app = row.text("app_id") { byApp[app, default: 0] += row.int("postbacks") }
        }
        #expect(postbacks > 1500 && installs > 0)

        try FileManager.default.createDirectory(atPath: TestPaths.output, withIntermediateDirectories: true)
        let visit = try BrowserRenderTests.visit(
            page, screenshot: TestPaths.output + "/first-screen-no-schema-1280.png", width: 1280, height: 800)
        let firstScreen = visit.facts["firstScreen"] as? String ?? ""
        for text in [NumberFormat.count(postbacks), NumberFormat.count(installs)] {
            #expect(firstScreen.contains(text), "the first screen shows \(text): \(firstScreen)")
        }
        let (first, second) = byApp["111"]! >= byApp["222"]! ? ("111", "222") : ("222", "111")
        for text in [
            "No conversion schema for app \(first) (\(NumberFormat.count(byApp[first]!)) postbacks), "
                + "app \(second) (\(NumberFormat.count(byApp[second]!)) postbacks)",
            "which adds labels, events and revenue",
            "postback schema init --app \(first) --out schemas/\(first)/\(StarterSchemaFile.effectiveFrom).json",
            "(add --from and the store's directory to list the campaigns it has seen)",
        ] {
            #expect(firstScreen.contains(text), "the first screen shows \(text): \(firstScreen)")
        }
        #expect((visit.facts["overflowing"] as? [Any])?.isEmpty == true, "\(visit.facts["overflowing"] ?? "?")")
        #expect(visit.console.isEmpty && visit.exceptions.isEmpty, "\(visit.console) \(visit.exceptions)")

        // With a schema for every app, no notice.
        let schemas = directory.path + "/schemas"
        for app in ["111", "222"] {
            let path = "\(schemas)/\(app)/\(StarterSchemaFile.effectiveFrom).json"
            #expect(TestSupport.run(["schema", "init", "--app", app, "--from", root, "--out", path]).status == .success)
        }
        #expect(TestSupport.run(["aggregate", "--data", root, "--schemas", schemas, "--date", "2026-03-10"]).status == .success)
        #expect(TestSupport.run(["report", "--data", root, "--date", "2026-03-10", "--out", page]).status == .success)
        #expect(!(try String(contentsOfFile: page, encoding: .utf8)).contains("No conversion schema"))
    }
}
