import AggregateSchema
import Postbacks
import TestSupport
import Testing

@testable import Aggregation

/// Every decoding rule, on small hand-made schemas.
@Suite struct SchemaDecodingTests {
    static func schema(_ windows: String, extra: String = "") throws -> ConversionSchema {
        try ConversionSchema(
            json: Array(
                """
                {"schema_id": "s", "app_id": 1, "effective_from": "2026-01-01", "currency": "USD", \(extra)
                 "windows": \(windows)}
                """.utf8), file: "s.json")
    }

    static func decoded(_ decoding: ValueDecoding) -> DecodedValue? {
        if case .decoded(let value) = decoding { return value }
        return nil
    }

    static func money(_ text: String) -> Money { Money(decimal: text)! }

    @Test func singleValuesRangesAndLabelTemplates() throws {
        let schema = try Self.schema(
            """
            {"0": {"fine": {"entries": [
              {"value": 0, "label": "install_only"},
              {"values": [10, 12], "label": "level_${value}_b${bucket}", "events": [{"name": "level_up", "min_count": 2, "max_count": 4}]}
            ]}}}
            """)
        #expect(Self.decoded(schema.decode(fine: 0, window: 0)) == DecodedValue(label: "install_only"))
        let level = try #require(Self.decoded(schema.decode(fine: 11, window: 0)))
        #expect(level.label == "level_11_b1")
        #expect(level.events == [EventMapping(name: "level_up", minCount: 2, maxCount: 4)])
        #expect(level.revenue == .zero, "a value without revenue decodes to zero revenue")
        #expect(Self.decoded(schema.decode(fine: 12, window: 0))?.label == "level_12_b2")
        #expect(schema.decode(fine: 13, window: 0) == .unmapped(label: "undecoded"), "never guessed from a neighbour")
        #expect(schema.decode(fine: 9, window: 0) == .unmapped(label: "undecoded"))
    }

    @Test func revenueBucketsAreEqualWidthAndExact() throws {
        let schema = try Self.schema(
            """
            {"0": {"fine": {"entries": [{"values": [1, 4], "label": "r${bucket}", "revenue_buckets": {"start": 0.99, "width": 0.1}}]}}}
            """)
        let expected: [(Int, String, String, String)] = [
            (1, "0.99", "1.09", "1.04"), (2, "1.09", "1.19", "1.14"), (4, "1.29", "1.39", "1.34"),
        ]
        for (value, min, max, estimate) in expected {
            let revenue = try #require(Self.decoded(schema.decode(fine: value, window: 0))).revenue
            #expect(
                revenue == RevenueRange(min: Self.money(min), max: Self.money(max), estimate: Self.money(estimate)),
                "value \(value)")
        }
    }

    @Test func explicitRevenueOpenEndsAndEstimatePolicies() throws {
        let midpoint = try Self.schema(
            """
            {"0": {"fine": {"entries": [
              {"value": 1, "label": "a", "revenue": {"min": 1, "max": 2}},
              {"value": 2, "label": "b", "revenue": {"min": 1, "max": 2, "estimate": 1.25}},
              {"value": 3, "label": "c", "revenue": {"min": 100, "max": null, "estimate": 150}},
              {"value": 4, "label": "d", "revenue": {"min": 0.000001, "max": 0.000002}}
            ]}}}
            """)
        #expect(
            Self.decoded(midpoint.decode(fine: 1, window: 0))?.revenue
                == RevenueRange(min: Self.money("1"), max: Self.money("2"), estimate: Self.money("1.5")))
        #expect(Self.decoded(midpoint.decode(fine: 2, window: 0))?.revenue.estimate == Self.money("1.25"))
        #expect(
            Self.decoded(midpoint.decode(fine: 3, window: 0))?.revenue
                == RevenueRange(min: Self.money("100"), max: nil, estimate: Self.money("150")))
        #expect(
            Self.decoded(midpoint.decode(fine: 4, window: 0))?.revenue.estimate == Self.money("0.000001"),
            "midpoint rounds down to the micro")

        let minimum = try Self.schema(
            """
            {"0": {"fine": {"entries": [{"value": 1, "label": "a", "revenue": {"min": 3, "max": null}},
                                         {"values": [2, 3], "label": "b", "revenue_buckets": {"start": 10, "width": 5}}]}}}
            """, extra: "\"revenue_estimate\": \"min\",")
        #expect(
            Self.decoded(minimum.decode(fine: 1, window: 0))?.revenue
                == RevenueRange(min: Self.money("3"), max: nil, estimate: Self.money("3")))
        #expect(
            Self.decoded(minimum.decode(fine: 3, window: 0))?.revenue
                == RevenueRange(min: Self.money("15"), max: Self.money("20"), estimate: Self.money("15")))
    }

    @Test func fineValuesOnlyInTheFirstWindowAndNeverThroughCoarseRules() throws {
        let schema = try Self.schema(
            """
            {"0": {"fine": {"unmapped": "unknown_value", "entries": [{"value": 5, "label": "five"}]},
                   "coarse": {"low": {"label": "low0"}}},
             "1": {"coarse": {"low": {"label": "low1"}}}}
            """)
        #expect(Self.decoded(schema.decode(fine: 5, window: 0))?.label == "five")
        #expect(schema.decode(fine: 6, window: 0) == .unmapped(label: "unknown_value"), "the window's own unmapped label")
        #expect(
            schema.decode(fine: 5, window: 1) == .unmapped(label: "undecoded"),
            "a fine value in window 1 is not decoded with window 0's table")
        #expect(schema.decode(coarse: .medium, window: 0) == .unmapped(label: "unknown_value"))
        #expect(Self.decoded(schema.decode(coarse: .low, window: 1))?.label == "low1")
        #expect(schema.decode(coarse: .low, window: 2) == .unmapped(label: "undecoded"), "an undefined window decodes nothing")
    }

    @Test func coarseValuesInheritBetweenWindowsWithOverrides() throws {
        let schema = try Self.schema(
            """
            {"0": {"coarse": {"low": {"label": "engaged"}, "medium": {"label": "payer", "revenue": {"min": 1, "max": 3}},
                              "high": {"label": "whale", "events": [{"name": "purchase", "min_count": 3}], "revenue": {"min": 20, "estimate": 30}}}},
             "1": {"coarse": {"inherit": "0", "low": {"label": "retained"}}},
             "2": {"coarse": {"inherit": "1", "high": {"label": "late_whale", "revenue": {"min": 50, "estimate": 60}}}}}
            """)
        #expect(Self.decoded(schema.decode(coarse: .low, window: 1))?.label == "retained")
        #expect(
            Self.decoded(schema.decode(coarse: .medium, window: 1))?.revenue.estimate == Self.money("2"),
            "inherited from window 0")
        #expect(Self.decoded(schema.decode(coarse: .low, window: 2))?.label == "retained", "inherited through window 1")
        #expect(Self.decoded(schema.decode(coarse: .medium, window: 2))?.label == "payer", "inherited through two windows")
        let high = try #require(Self.decoded(schema.decode(coarse: .high, window: 2)))
        #expect(high.label == "late_whale" && high.events.isEmpty && high.revenue.max == nil)
        #expect(Self.decoded(schema.decode(coarse: .high, window: 1))?.events == [EventMapping(name: "purchase", minCount: 3)])
    }

    @Test func bitFieldsCombineLabelsEventsAndRevenue() throws {
        let schema = try Self.schema(
            """
            {"0": {"fine": {"bits": {"label": "r${rev}-${flags}-v${value}", "fields": [
              {"name": "rev", "bits": [0, 2], "entries": [{"value": 0, "label": "none"},
                 {"values": [1, 6], "label": "${bucket}", "revenue_buckets": {"start": 1, "width": 2}, "events": [{"name": "purchase"}]}]},
              {"name": "flags", "bits": [3, 4], "entries": [{"value": 0, "label": "x"}, {"value": 1, "label": "t", "events": [{"name": "tutorial"}]},
                 {"value": 2, "label": "p", "events": [{"name": "purchase", "min_count": 2, "max_count": 2}], "revenue": {"min": 0.5, "max": 0.5}}]}
            ]}}}}
            """)
        // value = rev 2 (bits 0-2) | flags 2 (bits 3-4) = 2 + 16 = 18
        let value = try #require(Self.decoded(schema.decode(fine: 18, window: 0)))
        #expect(value.label == "r1-p-v18")
        #expect(
            value.events == [EventMapping(name: "purchase", minCount: 3, maxCount: nil)],
            "the same event from two fields adds up; an open max stays open")
        #expect(value.revenue == RevenueRange(min: Self.money("3.5"), max: Self.money("5.5"), estimate: Self.money("4.5")))
        #expect(Self.decoded(schema.decode(fine: 8, window: 0))?.label == "rnone-t-v8")
        #expect(
            schema.decode(fine: 7, window: 0) == .unmapped(label: "undecoded"), "rev 7 has no entry: the whole value is unknown")
        #expect(schema.decode(fine: 24, window: 0) == .unmapped(label: "undecoded"), "flags 3 has no entry")
        #expect(schema.decode(fine: 32, window: 0) == .unmapped(label: "undecoded"), "bit 5 belongs to no field")

        let defaultLabel = try Self.schema(
            """
            {"0": {"fine": {"bits": {"fields": [{"name": "a", "bits": [0, 0], "entries": [{"values": [0, 1], "label": "a${value}"}]},
                                                {"name": "b", "bits": [1, 5], "entries": [{"values": [0, 31], "label": "b${value}"}]}]}}}}
            """)
        #expect(
            Self.decoded(defaultLabel.decode(fine: 63, window: 0))?.label == "a1+b31", "default label joins the fields with +")
        #expect(defaultLabel.windows[0].fine?.allSatisfy { $0 != nil } == true)
    }

    @Test func sourceIdentifiersKeepTrailingDigitsByDefault() throws {
        let schema = try Self.schema(
            "{}",
            extra: """
                "source_identifier_map": [{"ad_network_id": "Example123.SKAdNetwork", "digits": [
                  {"positions": [1, 2], "dimension": "campaign", "values": {"52": "summer"}},
                  {"positions": [3], "dimension": "geo"},
                  {"positions": [4], "dimension": "placement", "values": {"9": "feed"}}],
                 "campaign_id_map": {"42": "legacy"}},
                 {"ad_network_id": "lead.skadnetwork", "truncation": "keeps_leading", "digits": [
                  {"positions": [1, 2], "dimension": "campaign"}, {"positions": [3, 4], "dimension": "placement", "values": {"39": "banner"}}]}],
                """)
        let map = try #require(schema.sourceIdentifierMap(adNetworkID: "example123.skadnetwork", day: day("2026-02-01")))
        #expect(map.dimensions(sourceIdentifier: "5239") == DecodedDimensions(campaign: "summer", geo: "3", placement: "feed"))
        #expect(
            map.dimensions(sourceIdentifier: "239") == DecodedDimensions(campaign: nil, geo: "3", placement: "feed"),
            "three digits: 2-4")
        #expect(
            map.dimensions(sourceIdentifier: "39") == DecodedDimensions(campaign: nil, geo: "3", placement: "feed"),
            "two digits: 3-4")
        #expect(
            map.dimensions(sourceIdentifier: "5238") == DecodedDimensions(campaign: "summer", geo: "3", placement: nil),
            "unmapped digits are unknown")
        #expect(map.dimensions(campaignID: 42) == DecodedDimensions(campaign: "legacy"))
        #expect(map.dimensions(campaignID: 7) == DecodedDimensions())
        #expect(
            schema.sourceIdentifierMap(adNetworkID: "EXAMPLE123.skadnetwork", day: day("2026-02-01")) != nil,
            "network ids compare case-insensitively")

        let leading = try #require(schema.sourceIdentifierMap(adNetworkID: "lead.skadnetwork", day: day("2026-02-01")))
        #expect(leading.dimensions(sourceIdentifier: "5239") == DecodedDimensions(campaign: "52", placement: "banner"))
        #expect(
            leading.dimensions(sourceIdentifier: "52") == DecodedDimensions(campaign: "52"), "leading truncation keeps digits 1-2"
        )
        #expect(leading.dimensions(sourceIdentifier: "523") == DecodedDimensions(campaign: "52"))
    }

    @Test func sourceMapsHaveValidityDates() throws {
        let schema = try Self.schema(
            "{}",
            extra: """
                "source_identifier_map": [
                  {"ad_network_id": "n", "valid_to": "2026-02-28", "digits": [{"positions": [3, 4], "dimension": "campaign", "values": {"39": "old"}}]},
                  {"ad_network_id": "n", "valid_from": "2026-03-01", "digits": [{"positions": [3, 4], "dimension": "campaign", "values": {"39": "new"}}]}],
                """)
        #expect(
            schema.sourceIdentifierMap(adNetworkID: "n", day: day("2026-02-28"))?.dimensions(sourceIdentifier: "39").campaign
                == "old")
        #expect(
            schema.sourceIdentifierMap(adNetworkID: "n", day: day("2026-03-01"))?.dimensions(sourceIdentifier: "39").campaign
                == "new")
    }

    @Test func catalogPicksTheSchemaLiveOnTheInstallDate() throws {
        let skan = #""applies_to": {"protocols": ["skadnetwork"]}"#
        let old =
            #"{"schema_id": "old", "app_id": 7, "effective_from": "2026-01-01", "effective_to": "2026-01-31", "currency": "USD", "windows": {}, "#
            + skan + "}"
        let new =
            #"{"schema_id": "new", "app_id": 7, "effective_from": "2026-02-01", "currency": "EUR", "windows": {}, "# + skan + "}"
        let reengagement =
            #"{"schema_id": "re", "app_id": 7, "effective_from": "2026-01-01", "currency": "USD", "windows": {}, "applies_to": {"protocols": ["adattributionkit"], "conversion_types": ["reengagement"]}}"#
        let installs =
            #"{"schema_id": "aak", "app_id": 7, "effective_from": "2026-01-01", "currency": "USD", "windows": {}, "applies_to": {"protocols": ["adattributionkit"], "conversion_types": ["download", "redownload"]}}"#
        let catalog = try catalog(old, new, reengagement, installs)
        func pick(_ date: String, _ kind: PostbackProtocol = .skadnetwork, _ type: ConversionType = .download, app: Int64 = 7)
            -> String?
        {
            catalog.schema(appID: app, day: day(date), postbackProtocol: kind, conversionType: type)?.schemaID
        }
        #expect(pick("2025-12-31") == nil, "before any schema")
        #expect(pick("2026-01-01") == "old")
        #expect(pick("2026-01-31", .skadnetwork, .redownload) == "old", "effective_to is inclusive")
        #expect(pick("2026-02-01") == "new")
        #expect(pick("2030-01-01") == "new", "open-ended")
        #expect(
            pick("2026-02-01", .adattributionkit, .reengagement) == "re", "applies_to splits an app's postbacks between schemas")
        #expect(pick("2026-01-15", .adattributionkit, .download) == "aak")
        #expect(pick("2025-12-15", .adattributionkit, .download) == nil)
        #expect(pick("2026-01-15", app: 8) == nil, "other apps have no schema")
    }

    @Test func sampleSchemasLoadAndDecode() throws {
        let catalog = try SchemaCatalog.load(directory: Fixtures.sampleSchemas)
        #expect(catalog.schemas.map(\.schemaID) == ["example-game/2025-06-01", "example-shop/2026-01-01"])
        let game = catalog.schemas[0]
        #expect(Self.decoded(game.decode(fine: 3, window: 0))?.label == "revenue_bucket_1")
        #expect(Self.decoded(game.decode(coarse: .medium, window: 1))?.label == "payer", "window 1 inherits window 0")
        #expect(
            Self.decoded(game.decode(coarse: .medium, window: 2))?.label == "payer",
            "window 2 inherits window 1, which inherits window 0")
        #expect(Self.decoded(game.decode(coarse: .low, window: 2))?.label == "retained_d8_35")
        let shop = catalog.schemas[1]
        #expect(Self.decoded(shop.decode(fine: 0b110011, window: 0))?.label == "rev3_cart_d1")
    }

    @Test func moneyParsesAndPrintsExactly() {
        #expect(Money(decimal: "0.99")?.micros == 990_000)
        #expect(Money(decimal: "100")?.micros == 100_000_000)
        #expect(Money(decimal: "4.500000")?.description == "4.5")
        #expect(Money(decimal: "0.000001")?.description == "0.000001")
        #expect(Money(decimal: "1.0000001") == nil, "more than six decimals")
        #expect(
            Money(decimal: "1e2") == nil && Money(decimal: "-1") == nil && Money(decimal: ".5") == nil
                && Money(decimal: "5.") == nil)
        #expect(Money(micros: 123_450_000).description == "123.45")
        #expect(Money(micros: Int64.max).times(2) == nil, "overflow is reported, not wrapped")
    }

    @Test(arguments: [
        0, 1, 990_000, 100_000_000, 123_450_000, 4_500_000, -500_000, -1, -2_000_000, -1_250_000, Int64.max, Int64.min,
    ])
    func aCSVAmountIsMoneysDescription(micros: Int64) {
        var line = CSVLine()
        line.field(Money(micros: micros))
        #expect(String(decoding: line.array, as: UTF8.self) == Money(micros: micros).description)
    }

    @Test func hashMatchesMurmurHash3Reference() {
        // Reference values from the `mmh3` Python package (MurmurHash3_x64_128, seed 0).
        #expect(Hash128.of(Array("".utf8)) == Hash128(high: 0, low: 0))
        #expect(Hash128.of(Array("a".utf8)) == Hash128(high: 0x8555_5565_F659_7889, low: 0xE6B5_3A48_510E_895A))
        #expect(
            Hash128.of(Array("6aafb7a5-0170-41b5-bbe4-fe71dedf1e30:0".utf8))
                == Hash128(high: 0x1BA2_C8A5_A3D4_2AF6, low: 0x45F3_3680_2799_60FB))
        #expect(
            Hash128.of(Array("The quick brown fox jumps over the lazy dog".utf8))
                == Hash128(high: 0xE34B_BC7B_BC07_1B6C, low: 0x7A43_3CA9_C49A_9347))
    }
}
