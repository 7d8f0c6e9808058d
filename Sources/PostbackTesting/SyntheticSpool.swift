package import Basics
import Foundation
package import PostbackStore
import Postbacks
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A reproducible spool of made-up postbacks for benchmarks and tests: records written straight
/// from synthetic `Attribution` values, with realistic bodies whose signatures are placeholders
/// (minting millions of signed postbacks would cost minutes of ECDSA for nothing: aggregation trusts
/// the spool's verdicts and never re-verifies).
///
/// Shape: `apps` apps, `adNetworks` networks, `campaigns` campaigns whose four-digit source
/// identifier is campaign (2 digits), geo (1) and placement (1), truncated to 3 or 2 trailing digits
/// at lower tiers; SKAdNetwork 4.0, AdAttributionKit and some 3.0; three conversion windows; fine,
/// coarse and withheld values; winners and non-winners; two receivers (`rx1`, `rx2`) writing
/// segments that roll at `segmentBytes`. A fraction of postbacks arrives twice (the second copy
/// from the other receiver, seconds to three days later), a few are development and a few rejected.
///
/// `shape` `.uniform` (the default: every test spool and golden output) draws those fields uniformly,
/// so nearly every postback is a row of its own at the detail grain; `.realistic` draws them the way
/// real traffic falls (`RealisticShape`), so rollups group many postbacks per row (bench/aggregate
/// reports how many rows each table has).
package struct SyntheticSpool: Sendable {
    package enum Shape: String, Sendable, CaseIterable {
        case uniform, realistic
    }

    package var seed: UInt64 = 1
    package var postbacksPerDay = 1000
    package var apps: [Int64] = [525_463_029, 1_229_670_720]
    package var adNetworks = 3
    package var campaigns = 20
    package var duplicateRate = 0.02
    package var developmentRate = 0.005
    package var rejectedRate = 0.005
    package var segmentBytes = 32 << 20
    package var shape = Shape.uniform

    package init() {}

    /// Writes the spool for `days` days from `first` under `layout`; returns the number of lines.
    @discardableResult
    package func write(to layout: StoreLayout, first: UTCDay, days: Int, workers: Int = 2) throws(SystemCallError) -> Int {
        let total = Atomic<Int>(0)
        try Parallel.run(workers: workers, tasks: days) { (_, offset) throws(SystemCallError) in
            let count = try writeDay(first.adding(days: offset), first: first, to: layout)
            total.add(count, ordering: .relaxed)
        }
        return total.load(ordering: .relaxed)
    }

    /// The lines of one day: its own postbacks plus the late copies of the previous days' duplicated ones.
    package func lines(day: UTCDay, first: UTCDay) -> [(receivedAt: Int64, writer: Int, spool: StoreLayout.Spool, line: [UInt8])]
    {
        var lines: [(Int64, Int, StoreLayout.Spool, [UInt8])] = []
        lines.reserveCapacity(postbacksPerDay + postbacksPerDay / 20)
        let realistic = shape == .realistic ? RealisticShape(apps: apps.count, adNetworks: adNetworks) : nil
        for back in 0...3 {
            let origin = day.adding(days: -back)
            guard origin >= first else { continue }
            for index in 0..<postbacksPerDay {
                var random = SplitMix64(
                    seed: seed ^ UInt64(origin.daysSinceEpoch) &* 0x9E37_79B9_7F4A_7C15 ^ UInt64(index) &* 0xD1B5_4A32_D192_ED03)
                let record = makeRecord(day: origin, index: index, realistic: realistic, random: &random)
                let writer = Int(random.next() % 2)
                if back == 0 {
                    lines.append(
                        (
                            record.receivedAt.microsecondsSinceEpoch, writer, record.status == .verified ? .postbacks : .rejected,
                            record.encoded()
                        ))
                }
                // The duplicate decision is drawn after the record, so it does not change the record.
                guard record.status == .verified, Double(random.next() % 1_000_000) / 1_000_000 < duplicateRate else { continue }
                let delayDays = Int(random.next() % 4)
                guard delayDays == back else { continue }
                var copy = record
                let delay =
                    delayDays == 0
                    ? Int64(1 + random.next() % 3600) * 1_000_000
                    : Int64(delayDays) * 86_400_000_000 + Int64(random.next() % 3600) * 1_000_000
                let dayEnd = Int64(day.daysSinceEpoch + 1) * 86_400_000_000 - 1
                copy.receivedAt = UTCTimestamp(
                    microsecondsSinceEpoch: min(record.receivedAt.microsecondsSinceEpoch + delay, dayEnd))
                copy.writer = writer == 0 ? "rx2" : "rx1"
                lines.append((copy.receivedAt.microsecondsSinceEpoch, 1 - writer, .postbacks, copy.encoded()))
            }
        }
        lines.sort { ($0.0, $0.1) < ($1.0, $1.1) }
        return lines
    }

    private func writeDay(_ day: UTCDay, first: UTCDay, to layout: StoreLayout) throws(SystemCallError) -> Int {
        let lines = lines(day: day, first: first)
        for spool in StoreLayout.Spool.allCases { try DurableFile.makeDirectories(layout.partition(spool, day: day)) }
        var files: [String: (file: OutputFile, sequence: Int)] = [:]
        for (_, writer, spool, line) in lines {
            let name = writer == 0 ? "rx1" : "rx2"
            let key = "\(spool.rawValue)/\(name)"
            if files[key] == nil || files[key]!.file.bytesWritten >= segmentBytes {
                let sequence = (files[key]?.sequence ?? 0) + 1
                try files[key]?.file.close()
                let path = layout.partition(spool, day: day) + "/" + StoreLayout.segmentName(writer: name, sequence: sequence)
                files[key] = (try OutputFile(path: path), sequence)
            }
            try files[key]!.file.append(line)
            if files[key]!.file.pendingBytes >= 1 << 20 { try files[key]!.file.flush() }
        }
        for entry in files.values { try entry.file.close() }
        return lines.count
    }

    private func makeRecord(day: UTCDay, index: Int, realistic: RealisticShape?, random: inout SplitMix64) -> SpoolRecord {
        func chance(_ percent: UInt64) -> Bool { random.next() % 100 < percent }
        func pick<T>(_ values: [T]) -> T { values[Int(random.next() % UInt64(values.count))] }
        let receivedAt = UTCTimestamp(
            microsecondsSinceEpoch: Int64(day.daysSinceEpoch) * 86_400_000_000 + Int64(random.next() % 86_400_000_000))
        let id = random.uuid()
        let kind = random.next() % 10  // 0–5 SKAN 4.0, 6–8 AAK, 9 SKAN 3.0
        // Each `realistic?.…` draw replaces the uniform one in place (`??` draws only when it is nil),
        // so the default spool stays byte for byte what it was.
        let appIndex = realistic?.app.rank(random.next()) ?? Int(random.next() % UInt64(apps.count))
        let app = apps[appIndex]
        let network = realistic?.network(app: appIndex, random.next()) ?? Int(random.next() % UInt64(adNetworks))
        let campaign = 10 + (realistic?.campaign.rank(random.next()) ?? Int(random.next() % UInt64(campaigns)))
        let geo = 1 + (realistic?.geo.rank(random.next()) ?? Int(random.next() % 3))
        let placement = 1 + (realistic?.placement.rank(random.next()) ?? Int(random.next() % 2))
        let didWin = !chance(10)
        let window = didWin ? (chance(60) ? 0 : chance(60) ? 1 : 2) : 0
        let tier = window == 0 ? Int(random.next() % 4) : 1 + Int(random.next() % 3)
        let withheld = chance(15)
        let click = chance(70)
        var attribution = Attribution(
            postbackProtocol: kind >= 6 && kind <= 8 ? .adattributionkit : .skadnetwork,
            version: kind >= 6 && kind <= 8 ? nil : kind == 9 ? "3.0" : "4.0", appID: app,
            adNetworkID: "network\(network).\(kind >= 6 && kind <= 8 ? "adattributionkit" : "skadnetwork")")
        attribution.interaction = click ? .click : .view
        attribution.didWin = didWin
        attribution.conversionType = chance(10) ? .redownload : .download
        if kind == 9 {
            attribution.campaignID = Int64(campaign)
            if didWin, !withheld { attribution.fineValue = realistic?.fineValue.rank(random.next()) ?? Int(random.next() % 64) }
            if didWin, chance(40) {
                attribution.sourceAppID = realistic?.sourceApp(random.next()) ?? 1_000_000 + Int64(random.next() % 10)
            }
        } else {
            let full = String(campaign) + String(geo) + String(placement)
            let digits = window == 0 && tier >= 2 ? (chance(50) ? 4 : 3) : 2
            attribution.sourceIdentifier = String(full.suffix(digits))
            attribution.postbackSequenceIndex = window
            if attribution.postbackProtocol == .adattributionkit {
                if chance(5) {
                    attribution.conversionType = .reengagement
                    attribution.didWin = true
                    attribution.interaction = .click
                }
                if tier >= 1 { attribution.marketplaceID = "com.apple.AppStore" }
                if tier == 3 && didWin && window == 0 {
                    attribution.countryCode = realistic?.country(random.next()) ?? pick(["US", "GB", "DE", "JP", "BR"])
                }
            }
            if didWin, window == 0, tier == 3 {
                if attribution.postbackProtocol == .skadnetwork, chance(20) {
                    attribution.sourceDomain = realistic?.sourceDomain(random.next()) ?? "news\(network).example"
                } else {
                    attribution.sourceAppID = realistic?.sourceApp(random.next()) ?? 1_000_000 + Int64(random.next() % 10)
                }
            }
            if attribution.didWin != false, !withheld, tier >= 1 {
                if window == 0, tier >= 2 {
                    attribution.fineValue =
                        realistic?.fineValue.rank(random.next()) ?? Int(min(63, random.next() % 40 + (chance(10) ? 24 : 0)))
                } else {
                    attribution.coarseValue = realistic?.coarse(random.next()) ?? pick(CoarseConversionValue.allCases)
                }
            }
        }
        let development = chance(1) && Double(random.next() % 1000) / 1000 < developmentRate * 100
        let rejected = !development && Double(random.next() % 1_000_000) / 1_000_000 < rejectedRate
        let body = Self.body(attribution, id: id, random: &random)
        let dedupKey =
            "\(attribution.postbackProtocol == .adattributionkit ? id.uppercased() : id):\(attribution.postbackSequenceIndex)"
        var record = SpoolRecord(
            receivedAt: receivedAt, writer: "rx1",
            route: attribution.postbackProtocol == .adattributionkit
                ? "appattribution-developer-copy" : "skadnetwork-developer-copy",
            status: rejected ? .invalidSignature : .verified, environment: development ? .development : .production,
            dedupKey: dedupKey, postbackProtocol: attribution.postbackProtocol, version: attribution.version,
            keyName: development
                ? "apple-development-identifier/0"
                : attribution.postbackProtocol == .adattributionkit ? "apple-cas-identifier/0" : "apple-skadnetwork-p256",
            reason: rejected ? "the signature does not verify with apple-skadnetwork-p256" : nil,
            attribution: rejected && chance(50) ? nil : attribution, body: body)
        // A few postbacks came with an unsigned value in upper case (flagged, counted in flagged_postbacks).
        // Chosen by index, not by a draw, so the rest of the spool is what it was before flags existed.
        if !rejected, index % 37 == 5, let coarse = attribution.coarseValue {
            record.flags = [
                PostbackFlag(
                    field: .coarseConversionValue, action: .normalized, raw: "\"\(coarse.rawValue.asciiUppercased)\"",
                    note: "case-folded to \(coarse.rawValue)")
            ]
        }
        return record
    }

    /// A body shaped like Apple's, with a placeholder signature of the real length.
    static func body(_ attribution: Attribution, id: String, random: inout SplitMix64) -> [UInt8] {
        var json = JSONWriter(reservingCapacity: 700)
        json.beginObject()
        if attribution.postbackProtocol == .adattributionkit {
            func segment(_ count: Int) -> String {
                let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
                return String(decoding: (0..<count).map { _ in alphabet[Int(random.next() % 64)] }, as: UTF8.self)
            }
            json.field(
                "jws-string", "eyJraWQiOiJhcHBsZS1jYXMtaWRlbnRpZmllci8wIiwiYWxnIjoiRVMyNTYifQ." + segment(360) + "." + segment(86)
            )
            json.field("conversion-value", attribution.fineValue)
            json.field("coarse-conversion-value", attribution.coarseValue?.rawValue)
            json.field("ad-interaction-type", attribution.interaction?.rawValue)
            if let country = attribution.countryCode { json.field("country-code", country) }
        } else {
            json.field("version", attribution.version)
            json.field("ad-network-id", attribution.adNetworkID)
            if let campaign = attribution.campaignID { json.field("campaign-id", campaign) }
            if let source = attribution.sourceIdentifier { json.field("source-identifier", source) }
            json.field("transaction-id", id)
            json.field("app-id", attribution.appID)
            json.field("redownload", attribution.conversionType == .redownload)
            if let sourceApp = attribution.sourceAppID { json.field("source-app-id", sourceApp) }
            if let domain = attribution.sourceDomain { json.field("source-domain", domain) }
            json.field("fidelity-type", attribution.interaction == .click ? 1 : 0)
            json.field("did-win", attribution.didWin)
            if let fine = attribution.fineValue { json.field("conversion-value", fine) }
            if let coarse = attribution.coarseValue { json.field("coarse-conversion-value", coarse.rawValue) }
            if attribution.version == "4.0" { json.field("postback-sequence-index", attribution.postbackSequenceIndex) }
            let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
            json.field(
                "attribution-signature",
                "MEUCI" + String(decoding: (0..<90).map { _ in alphabet[Int(random.next() % 64)] }, as: UTF8.self) + "=")
        }
        json.endObject()
        return json.bytes
    }
}

/// The draws of `SyntheticSpool.Shape.realistic`: Zipf-like (exponent 1.1) apps, campaigns (40:
/// ids 10–49, each with three geos and two placements), publishers (2,000 source apps, 200 source
/// domains), countries (40) and values (fine 0–63, coarse low > medium > high), and per-app ad
/// networks (each app buys from two of them, its first one most). Ad networks and campaigns of real
/// traffic are few per app and lopsided; publishers and values have long tails.
struct RealisticShape: Sendable {
    static let countries = [
        "US", "GB", "DE", "JP", "BR", "FR", "CA", "AU", "KR", "IN", "IT", "ES", "MX", "NL", "SE", "TR", "PL", "ID", "RU", "CH",
        "SA", "AE", "TW", "TH", "BE", "AT", "NO", "DK", "FI", "IE", "PT", "SG", "HK", "NZ", "ZA", "AR", "CL", "CO", "PH", "VN",
    ]
    let app: ZipfDistribution
    let adNetworks: Int
    let networksPerApp: ZipfDistribution
    let campaign = ZipfDistribution(count: 40)
    let geo = ZipfDistribution(count: 3)
    let placement = ZipfDistribution(count: 2)
    let fineValue = ZipfDistribution(count: 64)
    let coarseValue = ZipfDistribution(count: 3)
    let sourceApps = ZipfDistribution(count: 2000)
    let sourceDomains = ZipfDistribution(count: 200)
    let countryCode = ZipfDistribution(count: countries.count)

    init(apps: Int, adNetworks: Int) {
        app = ZipfDistribution(count: apps)
        self.adNetworks = adNetworks
        networksPerApp = ZipfDistribution(count: min(2, adNetworks))
    }

    /// App number `app` buys from networks app, app + 1 (mod the network count), the first most.
    func network(app: Int, _ draw: UInt64) -> Int { (app + networksPerApp.rank(draw)) % adNetworks }
    func sourceApp(_ draw: UInt64) -> Int64 { 1_000_000 + Int64(sourceApps.rank(draw)) }
    func sourceDomain(_ draw: UInt64) -> String { "publisher\(sourceDomains.rank(draw)).example" }
    func country(_ draw: UInt64) -> String { Self.countries[countryCode.rank(draw)] }
    func coarse(_ draw: UInt64) -> CoarseConversionValue { CoarseConversionValue.allCases[coarseValue.rank(draw)] }
}
