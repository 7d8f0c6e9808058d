import Foundation
import Postbacks
import TestSupport
import Testing

@testable import Aggregation

/// Every way a schema can be wrong gets a clear message that names the place, and nothing crashes.
@Suite struct SchemaValidationTests {
    struct Case: CustomTestStringConvertible, Sendable {
        let name: String
        let top: String
        let windows: String
        let expected: String
        let currency: String
        var testDescription: String { name }

        init(_ name: String, windows: String = "{}", top: String = "", currency: String = "USD", expect expected: String) {
            self.name = name
            self.top = top
            self.windows = windows
            self.currency = currency
            self.expected = expected
        }

        var json: String {
            #"{"schema_id": "bad", "app_id": 1, "effective_from": "2026-01-01", "currency": ""# + currency + #"", "# + top
                + #""windows": "# + windows + "}"
        }
    }

    static func fine(_ entries: String) -> String { #"{"0": {"fine": {"entries": ["# + entries + "]}}}" }

    static let cases: [Case] = [
        Case(
            "unknown top-level key with a hint", top: #""curency": "USD", "#,
            expect: #"unknown key "curency" (did you mean "currency"?)"#),
        Case(
            "unknown key in an entry", windows: fine(#"{"value": 1, "label": "a", "revenu": {"min": 1}}"#),
            expect: #"windows.0.fine.entries[0]: unknown key "revenu""#),
        Case(
            "overlapping values", windows: fine(#"{"values": [1, 5], "label": "a"}, {"value": 3, "label": "b"}"#),
            expect: "windows.0.fine.entries[1]: value 3 is already mapped by windows.0.fine.entries[0]"),
        Case("reversed range", windows: fine(#"{"values": [10, 9], "label": "a"}"#), expect: "[10, 9] is not a range"),
        Case(
            "value above 63", windows: fine(#"{"value": 64, "label": "a"}"#),
            expect: "windows.0.fine.entries[0].value: must be from 0 to 63, got 64"),
        Case("non-integer value", windows: fine(#"{"value": 1.5, "label": "a"}"#), expect: "must be a whole number"),
        Case("range of three numbers", windows: fine(#"{"values": [1, 2, 3], "label": "a"}"#), expect: "must be [first, last]"),
        Case(
            "value and values", windows: fine(#"{"value": 1, "values": [1, 2], "label": "a"}"#),
            expect: "has both \"value\" and \"values\""),
        Case("no value at all", windows: fine(#"{"label": "a"}"#), expect: "needs \"value\" (one value) or \"values\""),
        Case("missing label", windows: fine(#"{"value": 1}"#), expect: "windows.0.fine.entries[0].label: is required"),
        Case(
            "unknown placeholder", windows: fine(#"{"value": 1, "label": "a${bucket}"}"#), expect: "unknown placeholder ${bucket}"
        ),
        Case(
            "buckets without a range", windows: fine(#"{"value": 1, "label": "a", "revenue_buckets": {"start": 1, "width": 1}}"#),
            expect: "needs a range of values"),
        Case(
            "zero bucket width", windows: fine(#"{"values": [1, 2], "label": "a", "revenue_buckets": {"start": 1, "width": 0}}"#),
            expect: "width: must be greater than 0"),
        Case(
            "revenue and buckets",
            windows: fine(
                #"{"values": [1, 2], "label": "a", "revenue": {"min": 1, "max": 2}, "revenue_buckets": {"start": 1, "width": 1}}"#
            ),
            expect: "has both \"revenue\" and \"revenue_buckets\""),
        Case(
            "max below min", windows: fine(#"{"value": 1, "label": "a", "revenue": {"min": 5, "max": 2}}"#),
            expect: "revenue.max: 2 is less than min 5"),
        Case(
            "estimate outside the range",
            windows: fine(#"{"value": 1, "label": "a", "revenue": {"min": 1, "max": 2, "estimate": 3}}"#),
            expect: "estimate: 3 lies outside 1…2"),
        Case(
            "open range without estimate", windows: fine(#"{"value": 1, "label": "a", "revenue": {"min": 100}}"#),
            expect: "needs an explicit estimate"),
        Case(
            "negative revenue", windows: fine(#"{"value": 1, "label": "a", "revenue": {"min": -1, "max": 2}}"#),
            expect: "must be a non-negative amount"),
        Case(
            "too many decimals", windows: fine(#"{"value": 1, "label": "a", "revenue": {"min": 0.0000001, "max": 2}}"#),
            expect: "at most 6 decimals"),
        Case(
            "event listed twice", windows: fine(#"{"value": 1, "label": "a", "events": [{"name": "p"}, {"name": "p"}]}"#),
            expect: "event \"p\" is listed twice"),
        Case(
            "max count below min count",
            windows: fine(#"{"value": 1, "label": "a", "events": [{"name": "p", "min_count": 3, "max_count": 2}]}"#),
            expect: "max_count: 2 is less than min_count 3"),
        Case(
            "both encodings", windows: #"{"0": {"fine": {"entries": [], "bits": {"fields": []}}}}"#,
            expect: "has both \"entries\" and \"bits\""),
        Case("no encoding", windows: #"{"0": {"fine": {}}}"#, expect: "needs either \"entries\" or \"bits\""),
        Case(
            "fine values in window 1", windows: #"{"1": {"fine": {"entries": []}}}"#,
            expect: "windows.1.fine: fine values are only sent in the first postback"),
        Case("window 3", windows: #"{"3": {}}"#, expect: "windows: unknown key \"3\""),
        Case(
            "inheritance cycle", windows: #"{"1": {"coarse": {"inherit": "2"}}, "2": {"coarse": {"inherit": "1"}}}"#,
            expect: "inheritance cycle"),
        Case(
            "inheriting an undefined window", windows: #"{"1": {"coarse": {"inherit": "0"}}}"#, expect: "window 0 is not defined"),
        Case("inheriting itself", windows: #"{"1": {"coarse": {"inherit": "1"}}}"#, expect: "must name another window"),
        Case("unknown coarse level", windows: #"{"0": {"coarse": {"top": {"label": "x"}}}}"#, expect: "unknown key \"top\""),
        Case(
            "overlapping bit fields",
            windows:
                #"{"0": {"fine": {"bits": {"fields": [{"name": "a", "bits": [0, 2], "entries": []}, {"name": "b", "bits": [2, 3], "entries": []}]}}}}"#,
            expect: "bit 2 is already used by field \"a\""),
        Case(
            "bit out of range",
            windows: #"{"0": {"fine": {"bits": {"fields": [{"name": "a", "bits": [4, 6], "entries": []}]}}}}"#,
            expect: "must be from 0 to 5, got 6"),
        Case(
            "field value too large for its bits",
            windows:
                #"{"0": {"fine": {"bits": {"fields": [{"name": "a", "bits": [0, 1], "entries": [{"value": 4, "label": "x"}]}]}}}}"#,
            expect: "must be from 0 to 3, got 4"),
        Case(
            "bad field name",
            windows: #"{"0": {"fine": {"bits": {"fields": [{"name": "Rev", "bits": [0, 1], "entries": []}]}}}}"#,
            expect: "must be lower-case letters"),
        Case(
            "label naming an unknown field",
            windows:
                #"{"0": {"fine": {"bits": {"label": "${nope}", "fields": [{"name": "a", "bits": [0, 1], "entries": []}]}}}}"#,
            expect: "unknown placeholder ${nope}"),
        Case(
            "bad date", top: #""effective_to": "2026-02-30", "#,
            expect: "effective_to: must be a date YYYY-MM-DD, got \"2026-02-30\""),
        Case(
            "period ends before it starts", top: #""effective_to": "2025-12-31", "#,
            expect: "effective_to: 2025-12-31 is before effective_from 2026-01-01"),
        Case("bad currency", currency: "usd", expect: "ISO 4217"),
        Case(
            "unknown protocol", top: #""applies_to": {"protocols": ["skan"]}, "#,
            expect: "applies_to.protocols[0]: must be one of"),
        Case("empty conversion types", top: #""applies_to": {"conversion_types": []}, "#, expect: "must not be empty"),
        Case(
            "bad estimate policy", top: #""revenue_estimate": "max", "#,
            expect: "revenue_estimate: must be one of \"midpoint\", \"min\""),
        Case("control character in a label", windows: fine(#"{"value": 1, "label": "a\u2063b"}"#), expect: "contains U+2063"),
        Case(
            "source map position used twice",
            top:
                #""source_identifier_map": [{"ad_network_id": "n", "digits": [{"positions": [1, 2], "dimension": "campaign"}, {"positions": [2], "dimension": "geo"}]}], "#,
            expect: "position 2 is already used by campaign"),
        Case(
            "source map position 5",
            top: #""source_identifier_map": [{"ad_network_id": "n", "digits": [{"positions": [5], "dimension": "geo"}]}], "#,
            expect: "must be from 1 to 4, got 5"),
        Case(
            "source map value key of the wrong length",
            top:
                #""source_identifier_map": [{"ad_network_id": "n", "digits": [{"positions": [1, 2], "dimension": "campaign", "values": {"1": "x"}}]}], "#,
            expect: "key \"1\" must be 2 digits"),
        Case(
            "source map unknown dimension",
            top: #""source_identifier_map": [{"ad_network_id": "n", "digits": [{"positions": [1], "dimension": "creative"}]}], "#,
            expect: "dimension: must be one of \"campaign\", \"geo\", \"placement\""),
        Case(
            "campaign id above 100",
            top: #""source_identifier_map": [{"ad_network_id": "n", "campaign_id_map": {"101": "x"}}], "#,
            expect: "must be a SKAdNetwork campaign id"),
        Case(
            "two maps for one network on the same days",
            top: #""source_identifier_map": [{"ad_network_id": "N"}, {"ad_network_id": "n", "valid_from": "2026-05-01"}], "#,
            expect: "n already has a map valid on some of the same days"),
    ]

    @Test(arguments: cases) func rejectsWithAClearMessage(_ testCase: Case) {
        do {
            _ = try ConversionSchema(json: Array(testCase.json.utf8), file: "bad.json")
            Issue.record("accepted a bad schema: \(testCase.json)")
        } catch let error as AggregationError {
            #expect(error.code == .schema && error.path == "bad.json")
            #expect(error.problems.contains { $0.contains(testCase.expected) }, "got: \(error.problems)")
            #expect(error.description.hasPrefix("bad.json:"))
        } catch {
            Issue.record("not an AggregationError: \(error)")
        }
    }

    @Test func reportsEveryProblemAtOnce() throws {
        let json =
            #"{"schema_id": "x", "app_id": -1, "effective_from": "soon", "currency": "USD", "windows": {"0": {"fine": {"entries": [{"value": 99, "label": "a"}]}}}, "extra": 1}"#
        do {
            _ = try ConversionSchema(json: Array(json.utf8), file: "x.json")
            Issue.record("accepted")
        } catch let error as AggregationError {
            #expect(error.problems.count == 4, "\(error.problems)")
        }
    }

    @Test func rejectsInvalidJSON() {
        for text in ["", "{", #"{"a": 1, "a": 2}"#, "[1]", "{\"schema_id\": \"x\"} trailing"] {
            #expect(throws: AggregationError.self, "\(text)") { try ConversionSchema(json: Array(text.utf8), file: "j.json") }
        }
        #expect((try? ConversionSchema(json: Array(#"{"a": 1, "a": 2}"#.utf8), file: "j.json")) == nil)
    }

    /// A schema is a file people edit: a JSON error says where, as an editor counts (the byte offset
    /// of a stray comma after a two-byte character is not what anyone can find).
    @Test func invalidJSONSaysTheLineAndColumn() {
        let text = "{\n  \"schema_id\": \"é\",\n  \"app_id\": 1,,\n}\n"
        #expect {
            try ConversionSchema(json: Array(text.utf8), file: "j.json")
        } throws: { error in
            let message = "\(error)"
            return message.contains("not valid JSON") && message.contains("at line 3, column 15") && !message.contains("byte")
        }
    }

    @Test func catalogRejectsOverlapsAndDuplicates() throws {
        let a = #"{"schema_id": "a", "app_id": 5, "effective_from": "2026-01-01", "currency": "USD", "windows": {}}"#
        let b = #"{"schema_id": "b", "app_id": 5, "effective_from": "2026-03-01", "currency": "USD", "windows": {}}"#
        let c = #"{"schema_id": "a", "app_id": 6, "effective_from": "2026-01-01", "currency": "USD", "windows": {}}"#
        do {
            _ = try catalog(a, b)
            Issue.record("accepted overlapping periods")
        } catch let error as AggregationError {
            #expect(error.problems.first?.contains("both decode app 5 on 2026-03-01") == true, "\(error.problems)")
        }
        do {
            _ = try catalog(a, c)
            Issue.record("accepted a repeated schema id")
        } catch let error as AggregationError {
            #expect(error.problems.first?.contains("schema_id \"a\" is used by both") == true)
        }
        let bounded =
            #"{"schema_id": "a", "app_id": 5, "effective_from": "2026-01-01", "effective_to": "2026-02-28", "currency": "USD", "windows": {}}"#
        #expect(try catalog(bounded, b).schemas.count == 2)
    }

    @Test func directoryLayoutIsChecked() throws {
        let directory = TemporaryDirectory("schemas")
        try directory.write(
            #"{"schema_id": "a", "app_id": 5, "effective_from": "2026-01-01", "currency": "USD", "windows": {}}"#, to: "6/a.json")
        try directory.write("notes", to: "README.md")
        try directory.write("notes", to: "6/README.txt")
        #expect(throws: AggregationError.self) { try SchemaCatalog.load(directory: directory.path) }
        do {
            _ = try SchemaCatalog.load(directory: directory.path)
        } catch {
            #expect("\(error)".contains("app_id 5 does not match its directory 6"))
        }
        try FileManager.default.removeItem(atPath: directory.path + "/6")
        try directory.write(
            #"{"schema_id": "a", "app_id": 5, "effective_from": "2026-01-01", "currency": "USD", "windows": {}}"#, to: "5/a.json")
        try directory.write("{", to: "5/b.json")
        do {
            _ = try SchemaCatalog.load(directory: directory.path)
            Issue.record("accepted a broken file")
        } catch {
            #expect("\(error)".contains("5/b.json: not valid JSON"))
        }
        try FileManager.default.removeItem(atPath: directory.path + "/5/b.json")
        try directory.write("{}", to: "campaigns/x.json")
        #expect((try? SchemaCatalog.load(directory: directory.path)) == nil, "a directory that is not an app id")
        try FileManager.default.removeItem(atPath: directory.path + "/campaigns")
        #expect(try SchemaCatalog.load(directory: directory.path).schemas.map(\.schemaID) == ["a"])
        #expect(throws: AggregationError.self) { try SchemaCatalog.load(directory: directory.path + "/missing") }
    }
}
