import AggregateSchema
import Aggregation
import Basics
import Foundation
import PostbackTesting

/// The demo's past: the 20 days before today, published as a relay's daily files would be
/// (`aggregate --input`, each day's postbacks taken as received at its noon), so that cohorts mature
/// and the charts show a trend; and the networks' spend for those days, one of which claims more
/// installs than Apple signed.
enum DemoHistory {
    static let days = 20

    /// A day's share of `count` (today's traffic): the volume grows over the weeks, with a weekend dip.
    static func volume(_ count: Int, day: UTCDay, today: UTCDay) -> Int {
        let age = today.daysSinceEpoch - day.daysSinceEpoch
        let growth = 0.35 + 0.25 * Double(days - age) / Double(days)
        let weekday = (day.daysSinceEpoch + 4) % 7  // 0 Sunday
        let weekend = weekday == 0 || weekday == 6 ? 0.75 : 1.0
        return max(1, Int(Double(count) * growth * weekend))
    }

    /// Signs each past day's postbacks, writes them to `DIR/history/DAY.jsonl` and publishes the day
    /// from that file. Returns the postbacks published.
    static func publish(
        traffic: SyntheticPostbacks, signer: TestPostbackSigner, count: Int, today: UTCDay, layout: DemoCommand.Layout,
        io: CommandIO
    ) throws -> Int {
        try FileManager.default.createDirectory(atPath: layout.history, withIntermediateDirectories: true)
        var total = 0
        var firstIndex = 1_000_000  // after today's indices: no transaction id repeats
        for age in stride(from: days, through: 1, by: -1) {
            let day = today.adding(days: -age)
            let n = volume(count, day: day, today: today)
            var lines: [UInt8] = []
            for index in firstIndex..<(firstIndex + n) {
                lines += try signer.sign(traffic.postback(index, seed: 14))
                lines.append(0x0A)
            }
            firstIndex += n
            total += n
            let file = "\(layout.history)/\(day).jsonl"
            try DurableFile.write(lines, to: file)
            let quiet = CommandIO(standardOutput: MemoryOutput(), standardError: io.standardError)
            let status = AggregateCommand.run(
                [
                    "--input", file, "--date", day.description, "--data", layout.store, "--schemas", layout.schemas,
                    "--allow-dev", "--trust-key", layout.key, "--skip-cohorts",
                ], io: quiet)
            guard status == .success else {
                throw CommandError.stepFailed("'postback aggregate --input \(file)' failed")
            }
        }
        io.print("published \(days) earlier days from \(layout.history) (\(total) postbacks, as a relay's daily files)")
        return total
    }

    /// What each network charges per install of each campaign (EUR), and how its claim compares with
    /// what Apple signed: demo-network-b over-reports by a fifth.
    static let costPerInstall: [String: Double] = [
        "spring_sale": 1.50, "summer_sale": 6.00, "payer_retargeting": 14.00, "brand_video": 12.00, "loyalty_push": 20.00,
    ]
    static let networkPrice = [1.0, 1.35, 0.85]
    static let claimFactor = [1.0, 1.2, 0.98]

    /// The spend file the networks would send for the demo's days (`DIR/spend.csv`): per install date,
    /// network and campaign, what it charged for the installs it delivered and how many it says it
    /// delivered. Network a names campaigns, b gives four-digit source identifiers, c campaign names too.
    static func writeSpend(layout: DemoCommand.Layout, from: UTCDay, to: UTCDay) throws -> String {
        var installs: [String: Int] = [:]  // "date|network|campaign"
        var day = from
        while day <= to {
            let path = "\(layout.store)/agg/\(AggregateTables.campaignDailyDevelopment)/dt=\(day)/part-00000.csv"
            if let bytes = try? FileBytes.read(path: path, limit: 1 << 30), let csv = try? UserCSV(bytes),
                let header = csv.records.first?.fields
            {
                let at = { (name: String) in header.firstIndex(of: name)! }
                let (date, network, campaign, count) = (
                    at("est_install_date"), at("ad_network_id"), at("campaign"), at("installs")
                )
                for record in csv.records.dropFirst() where !record.fields[campaign].isEmpty {
                    installs["\(record.fields[date])|\(record.fields[network])|\(record.fields[campaign])", default: 0] +=
                        Int(record.fields[count]) ?? 0
                }
            }
            day = day.adding(days: 1)
        }
        var lines = ["date,app_id,ad_network_id,campaign,source_identifier,spend,currency,impressions,clicks,reported_installs"]
        var installDay = from
        while installDay <= to {
            for (n, network) in DemoCommand.adNetworks.enumerated() {
                for (c, campaign) in DemoCommand.campaignNames.enumerated() {
                    let signed = installs["\(installDay)|\(network)|\(campaign)"] ?? 0
                    // A campaign a network ran that day costs something even before its postbacks come.
                    let delivered = max(signed, installDay.daysSinceEpoch >= to.daysSinceEpoch - 3 ? 3 : 0)
                    guard delivered > 0 else { continue }
                    let wobble = 0.9 + 0.2 * Double((installDay.daysSinceEpoch * 7 + n * 3 + c) % 11) / 10
                    let spend = Double(delivered) * costPerInstall[campaign]! * networkPrice[n] * wobble
                    let clicks = delivered * (18 + c * 3)
                    let key = n == 1 ? ",\(DemoCommand.sourceIdentifiers[c])" : "\(campaign),"
                    lines.append(
                        "\(installDay),\(DemoCommand.schemaAppID),\(network),\(key),\(String(format: "%.2f", spend)),EUR,"
                            + "\(clicks * 40),\(clicks),\(Int((Double(signed) * claimFactor[n]).rounded()))")
                }
            }
            installDay = installDay.adding(days: 1)
        }
        try DurableFile.write(Array((lines.joined(separator: "\n") + "\n").utf8), to: layout.spend)
        return layout.spend
    }
}

/// Standard output a step of the demo keeps to itself (one line per published day would drown the story).
final class MemoryOutput: OutputSink, @unchecked Sendable {
    func write(_ bytes: [UInt8]) {}
    var isTerminal: Bool { false }
    var writeError: String? { nil }
}
