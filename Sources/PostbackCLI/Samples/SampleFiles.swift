// Written by SamplesCommandTests (POSTBACK_UPDATE_SAMPLES=1 swift test --filter SamplesCommandTests)
// from the repository's Samples/; do not edit by hand.

/// The repository's `Samples/`, file by file (`postback samples`).
enum SampleFiles {
    static let all: [(path: String, text: String)] = [
        (
            "README.md",
            #"""
            # Sample postbacks

            Real postbacks Apple published, each verified by `postback verify` against Apple's own keys
            (`swift test` checks every one). Conversion values in them are unsigned and were set by Apple's
            examples.

            | File | What it is | Source |
            |---|---|---|
            | `skan-2.1_whisk-skadnetwork-testdata.json` | SKAdNetwork 2.1, `source-app-id` present | `whisk/skadnetwork` `testdata/com.example-2.1.json`, originally Apple's legacy "Verifying an install-validation postback" page |
            | `skan-2.2_apple-doc.json` | SKAdNetwork 2.2 with `fidelity-type` 1 (signature is high-S) | https://developer.apple.com/documentation/storekit/combining-parameters-for-previous-skadnetwork-postback-versions |
            | `skan-3.0_apple-doc_winning.json` | SKAdNetwork 3.0, winning (`did-win` true) | https://developer.apple.com/documentation/storekit/combining-parameters-for-skadnetwork-3-postbacks |
            | `skan-3.0_apple-doc_nonwinning.json` | SKAdNetwork 3.0, non-winning: no `source-app-id`, no conversion value (proves the "omit absent field and its separator" rule) | same page |
            | `skan-4.0_apple-doc_web-ad-tier-high.json` | SKAdNetwork 4.0 web ad, high tier: 4-digit `source-identifier`, `source-domain`, fine value 63 | https://developer.apple.com/documentation/storekit/verifying-an-install-validation-postback |
            | `skan-4.0_apple-doc_web-ad-tier-low.json` | SKAdNetwork 4.0 web ad, low tier: 2-digit `source-identifier`, coarse value `high` | same page |
            | `development/aak_apple-doc_developer-settings_apple-development-identifier-1.json` | AdAttributionKit re-engagement postback from the Developer Settings tool, `kid` `apple-development-identifier/1`. Verifies only with `--allow-dev`, and is reported as development | https://developer.apple.com/documentation/adattributionkit/identifying-the-parameters-in-a-postback |

            There is no genuine verifying example for SKAdNetwork 1.0/2.0 (P-192) or for an AdAttributionKit
            production postback; the tests cover those with postbacks signed by a key made in the test.

            Try:

                postback verify Samples/*.json
                postback verify --allow-dev Samples/development/*.json
                postback explain Samples/skan-3.0_apple-doc_nonwinning.json

            """#
        ),
        (
            "development/aak_apple-doc_developer-settings_apple-development-identifier-1.json",
            #"""
            {
              "jws-string": "eyJraWQiOiJhcHBsZS1kZXZlbG9wbWVudC1pZGVudGlmaWVyXC8xIiwiYWxnIjoiRVMyNTYifQ.eyJwb3N0YmFjay1pZGVudGlmaWVyIjoiODU1NDZFQjctRkQzOS00NEJDLTg5OTAtQzk4QTRBQzM2QTQ5IiwicHVibGlzaGVyLWl0ZW0taWRlbnRpZmllciI6MCwibWFya2V0cGxhY2UtaWRlbnRpZmllciI6ImNvbS5hcHBsZS5BcHBTdG9yZSIsImltcHJlc3Npb24tdHlwZSI6ImFwcC1pbXByZXNzaW9uIiwiYWQtbmV0d29yay1pZGVudGlmaWVyIjoiZGV2ZWxvcG1lbnQuYWRhdHRyaWJ1dGlvbmtpdCIsImRpZC13aW4iOnRydWUsInBvc3RiYWNrLXNlcXVlbmNlLWluZGV4IjowLCJjb252ZXJzaW9uLXR5cGUiOiJyZS1lbmdhZ2VtZW50Iiwic291cmNlLWlkZW50aWZpZXIiOiIxMjM0IiwiYWR2ZXJ0aXNlZC1pdGVtLWlkZW50aWZpZXIiOjEwNzM4MDI3NzU2fQ.bAdNwKd6OfHK9tofvjjua4X_JPcFTxXPQSspD9gZkinw97pY7R1aI-LSjl-oxZZF3_K2H5JK5TSEBee4_1U4oQ",
              "conversion-value": 24,
              "ad-interaction-type": "click",
              "country-code": "US"
            }

            """#
        ),
        (
            "schemas/1229670720/2026-01-01.json",
            #"""
            {
              "schema_id": "example-shop/2026-01-01",
              "description": "Example of the bit-field encoding (Singular-style): bits 0-3 a revenue bucket, bit 4 'added to cart', bit 5 'day 1 return'.",
              "app_id": 1229670720,
              "effective_from": "2026-01-01",
              "currency": "EUR",
              "revenue_estimate": "min",
              "windows": {
                "0": {
                  "fine": {
                    "bits": {
                      "label": "rev${revenue}_${cart}_${returned}",
                      "fields": [
                        { "name": "revenue", "bits": [0, 3],
                          "entries": [
                            { "value": 0, "label": "0" },
                            { "values": [1, 14], "label": "${value}", "revenue_buckets": { "start": 0.0, "width": 5.0 },
                              "events": [{ "name": "purchase" }] },
                            { "value": 15, "label": "70plus", "revenue": { "min": 70.0 }, "events": [{ "name": "purchase" }] }
                          ] },
                        { "name": "cart", "bits": [4, 4],
                          "entries": [ { "value": 0, "label": "nocart" }, { "value": 1, "label": "cart", "events": [{ "name": "add_to_cart" }] } ] },
                        { "name": "returned", "bits": [5, 5],
                          "entries": [ { "value": 0, "label": "d0" }, { "value": 1, "label": "d1", "events": [{ "name": "day1_return" }] } ] }
                      ]
                    }
                  },
                  "coarse": {
                    "low": { "label": "browsed" },
                    "medium": { "label": "carted", "events": [{ "name": "add_to_cart" }] },
                    "high": { "label": "bought", "events": [{ "name": "purchase" }], "revenue": { "min": 5.0, "max": null } }
                  }
                },
                "1": { "coarse": { "inherit": "0" } },
                "2": { "coarse": { "inherit": "0" } }
              },
              "source_identifier_map": [
                { "ad_network_id": "demo-network-a.skadnetwork", "truncation": "keeps_trailing",
                  "digits": [
                    { "positions": [1], "dimension": "placement", "values": { "1": "rewarded", "2": "interstitial", "3": "video" } },
                    { "positions": [2], "dimension": "geo", "values": { "1": "US", "2": "EU", "3": "APAC" } },
                    { "positions": [3, 4], "dimension": "campaign", "values": { "01": "spring_sale", "02": "summer_sale", "03": "payer_retargeting", "04": "brand_video", "05": "loyalty_push" } }
                  ],
                  "campaign_id_map": { "1": "spring_sale", "2": "summer_sale", "3": "payer_retargeting", "4": "brand_video", "5": "loyalty_push" } },
                { "ad_network_id": "demo-network-b.skadnetwork", "truncation": "keeps_trailing",
                  "digits": [
                    { "positions": [1], "dimension": "placement", "values": { "1": "rewarded", "2": "interstitial", "3": "video" } },
                    { "positions": [2], "dimension": "geo", "values": { "1": "US", "2": "EU", "3": "APAC" } },
                    { "positions": [3, 4], "dimension": "campaign", "values": { "01": "spring_sale", "02": "summer_sale", "03": "payer_retargeting", "04": "brand_video", "05": "loyalty_push" } }
                  ],
                  "campaign_id_map": { "1": "spring_sale", "2": "summer_sale", "3": "payer_retargeting", "4": "brand_video", "5": "loyalty_push" } },
                { "ad_network_id": "demo-network-c.adattributionkit", "truncation": "keeps_trailing",
                  "digits": [
                    { "positions": [1], "dimension": "placement", "values": { "1": "rewarded", "2": "interstitial", "3": "video" } },
                    { "positions": [2], "dimension": "geo", "values": { "1": "US", "2": "EU", "3": "APAC" } },
                    { "positions": [3, 4], "dimension": "campaign", "values": { "01": "spring_sale", "02": "summer_sale", "03": "payer_retargeting", "04": "brand_video", "05": "loyalty_push" } }
                  ],
                  "campaign_id_map": { "1": "spring_sale", "2": "summer_sale", "3": "payer_retargeting", "4": "brand_video", "5": "loyalty_push" } }
              ]
            }

            """#
        ),
        (
            "schemas/525463029/2025-06-01.json",
            #"""
            {
              "schema_id": "example-game/2025-06-01",
              "description": "Example: a game measuring revenue buckets and early engagement. Documented key by key in docs/aggregate.md.",
              "app_id": 525463029,
              "effective_from": "2025-06-01",
              "effective_to": null,
              "currency": "USD",
              "revenue_estimate": "midpoint",
              "applies_to": {
                "protocols": ["skadnetwork", "adattributionkit"],
                "conversion_types": ["download", "redownload"]
              },
              "windows": {
                "0": {
                  "description": "First postback (days 0-2): fine values when the tier allows, coarse otherwise.",
                  "fine": {
                    "unmapped": "undecoded",
                    "entries": [
                      { "value": 0, "label": "install_only" },
                      { "value": 1, "label": "tutorial_done",
                        "events": [{ "name": "tutorial_complete" }] },
                      { "values": [2, 9], "label": "revenue_bucket_${bucket}",
                        "events": [{ "name": "purchase", "min_count": 1 }],
                        "revenue_buckets": { "start": 0.99, "width": 1.00 } },
                      { "values": [10, 19], "label": "engaged_level_${value}",
                        "events": [{ "name": "session", "min_count": 3, "max_count": 10 }] },
                      { "value": 20, "label": "first_purchase_small",
                        "events": [{ "name": "purchase", "min_count": 1, "max_count": 1 }],
                        "revenue": { "min": 0.99, "max": 4.99, "estimate": 2.99 } },
                      { "value": 63, "label": "whale",
                        "events": [{ "name": "purchase", "min_count": 3 }],
                        "revenue": { "min": 100.0, "max": null, "estimate": 150.0 } }
                    ]
                  },
                  "coarse": {
                    "low": { "label": "engaged", "events": [{ "name": "session", "min_count": 2 }] },
                    "medium": { "label": "payer", "events": [{ "name": "purchase" }], "revenue": { "min": 0.99, "max": 19.99 } },
                    "high": { "label": "big_payer", "revenue": { "min": 20.0, "max": null, "estimate": 40.0 } }
                  }
                },
                "1": {
                  "description": "Second postback (days 3-7): same coarse meaning as the first.",
                  "coarse": { "inherit": "0" }
                },
                "2": {
                  "description": "Third postback (days 8-35).",
                  "coarse": {
                    "inherit": "1",
                    "low": { "label": "retained_d8_35", "events": [{ "name": "session", "min_count": 1 }] },
                    "high": { "label": "big_payer_d8_35", "revenue": { "min": 50.0, "max": null, "estimate": 80.0 } }
                  }
                }
              },
              "source_identifier_map": [
                {
                  "ad_network_id": "example123.skadnetwork",
                  "description": "Four digits: campaign (digits 1-2), geo (3), placement (4). Low tiers keep the trailing digits.",
                  "truncation": "keeps_trailing",
                  "digits": [
                    { "positions": [1, 2], "dimension": "campaign", "values": { "12": "summer_sale", "39": "evergreen" } },
                    { "positions": [3], "dimension": "geo", "values": { "1": "US", "2": "EU", "9": "ROW" } },
                    { "positions": [4], "dimension": "placement", "values": { "1": "rewarded", "2": "interstitial" } }
                  ],
                  "campaign_id_map": { "42": "legacy_campaign_42" }
                }
              ]
            }

            """#
        ),
        (
            "skan-2.1_whisk-skadnetwork-testdata.json",
            #"""
            {
                "version": "2.1",
                "ad-network-id": "com.example",
                "campaign-id": 42,
                "transaction-id": "6aafb7a5-0170-41b5-bbe4-fe71dedf1e28",
                "app-id": 525463029,
                "attribution-signature": "MEUCID6rbq3qt4GvFaAaynh5/LAcvn1d8CQTRhrZhLIxLKntAiEAo7IrvoMw6u2qDg6Tr5vIsEHXjlLkPlCOL0ojJcEh3Qw=",
                "redownload": true,
                "source-app-id": 1234567891,
                "conversion-value": 20
            }

            """#
        ),
        (
            "skan-2.2_apple-doc.json",
            #"""
            {
              "version": "2.2",
              "ad-network-id": "com.example",
              "campaign-id": 42,
              "transaction-id": "6aafb7a5-0170-41b5-bbe4-fe71dedf1e28",
              "app-id": 525463029,
              "attribution-signature": "MEYCIQDTuQ1Z4Tpy9D3aEKbxLl5J5iKiTumcqZikuY/AOD2U7QIhAJAaiAv89AoquHXJffcieEQXdWHpcV8ZgbKN0EwV9/sY",
              "redownload": true,
              "source-app-id": 1234567891,
              "fidelity-type": 1,
              "conversion-value": 20
            }

            """#
        ),
        (
            "skan-3.0_apple-doc_nonwinning.json",
            #"""
            {
              "version": "3.0",
              "ad-network-id": "example123.skadnetwork",
              "campaign-id": 42,
              "transaction-id": "f9ac267a-a889-44ce-b5f7-0166d11461f0",
              "app-id": 525463029,
              "attribution-signature": "MEUCIQDDetUtkyc/MiQvVJ5I6HIO1E7l598572Wljot2Onzd4wIgVJLzVcyAV+TXksGNoa0DTMXEPgNPeHCmD4fw1ABXX0g=",
              "redownload": true,
              "fidelity-type": 1,
              "did-win": false
            }

            """#
        ),
        (
            "skan-3.0_apple-doc_winning.json",
            #"""
            {
              "version": "3.0",
              "ad-network-id": "example123.skadnetwork",
              "campaign-id": 42,
              "transaction-id": "6aafb7a5-0170-41b5-bbe4-fe71dedf1e28",
              "app-id": 525463029,
              "attribution-signature": "MEYCIQD5eq3AUlamORiGovqFiHWI4RZT/PrM3VEiXUrsC+M51wIhAPMANZA9c07raZJ64gVaXhB9+9yZj/X6DcNxONdccQij",
              "redownload": true,
              "source-app-id": 1234567891,
              "fidelity-type": 1,
              "conversion-value": 20,
              "did-win": true
            }

            """#
        ),
        (
            "skan-4.0_apple-doc_web-ad-tier-high.json",
            #"""
            {
              "version": "4.0",
              "ad-network-id": "com.example",
              "source-identifier": "5239",
              "app-id": 525463029,
              "transaction-id": "6aafb7a5-0170-41b5-bbe4-fe71dedf1e30",
              "redownload": false,
              "source-domain": "example.com",
              "fidelity-type": 1,
              "did-win": true,
              "conversion-value": 63,
              "postback-sequence-index": 0,
              "attribution-signature": "MEUCIGRmSMrqedNu6uaHyhVcifs118R5z/AB6cvRaKrRRHWRAiEAv96ne3dKQ5kJpbsfk4eYiePmrZUU6sQmo+7zfP/1Bxo="
            }

            """#
        ),
        (
            "skan-4.0_apple-doc_web-ad-tier-low.json",
            #"""
            {
              "version": "4.0",
              "ad-network-id": "com.example",
              "source-identifier": "39",
              "app-id": 525463029,
              "transaction-id": "6aafb7a5-0170-41b5-bbe4-fe71dedf1e31",
              "redownload": false,
              "source-domain": "example.com",
              "fidelity-type": 1,
              "did-win": true,
              "coarse-conversion-value": "high",
              "postback-sequence-index": 0,
              "attribution-signature": "MEUCIQD4rX6eh38qEhuUKHdap345UbmlzA7KEZ1bhWZuYM8MJwIgMnyiiZe6heabDkGwOaKBYrUXQhKtF3P/ERHqkR/XpuA="
            }

            """#
        ),
        (
            "spend/README.md",
            #"""
            # Sample spend

            `example-spend.csv` is what an ad network's cost export looks like to `postback spend import`
            (docs/spend.md): one row per day, app, network and campaign, the campaign named by `campaign_id`
            (SKAdNetwork 1.0–3.0), `source_identifier` (4.0, AdAttributionKit) or `campaign` (a name of the app's
            schema), with the spend, its currency and optionally impressions, clicks and the installs the network
            claims. Its rows match the postbacks of README's first session (`postback generate`, aggregated as
            received on 2026-03-10: the SKAdNetwork 2.2 and 3.0 ones have the estimated install date 2026-03-08);
            network2 claims more installs than Apple signed.

            """#
        ),
        (
            "spend/example-spend.csv",
            #"""
            date,app_id,ad_network_id,campaign_id,source_identifier,campaign,spend,currency,impressions,clicks,reported_installs
            2026-03-08,525463029,network0.skadnetwork,7,,,18.40,USD,12000,310,4
            2026-03-08,525463029,network0.skadnetwork,9,,,22.10,USD,15500,402,4
            2026-03-08,525463029,network0.skadnetwork,13,,,9.75,USD,8100,220,4
            2026-03-08,525463029,network0.skadnetwork,18,,,31.00,USD,21000,515,4
            2026-03-08,525463029,network2.skadnetwork,5,,,14.20,USD,9800,260,6
            2026-03-08,525463029,network2.skadnetwork,7,,,16.80,USD,11200,298,6
            2026-03-08,525463029,network2.skadnetwork,8,,,19.95,USD,13400,351,7
            2026-03-08,525463029,network2.skadnetwork,16,,,12.60,USD,8800,240,6
            2026-03-08,525463029,network3.skadnetwork,5,,,11.00,USD,7600,205,
            2026-03-08,525463029,network3.skadnetwork,11,,,24.50,USD,16100,430,
            2026-03-08,1229670720,network0.skadnetwork,6,,,15.00,EUR,9900,268,4
            2026-03-08,1229670720,network0.skadnetwork,16,,,17.25,EUR,11500,301,4
            2026-03-07,1229670720,demo-network-a.skadnetwork,,,spring_sale,40.00,EUR,30000,800,

            """#
        ),
    ]

    /// The text of the sample at `path` (relative to `Samples/`).
    static func text(_ path: String) -> String { all.first { $0.path == path }?.text ?? "" }
}
