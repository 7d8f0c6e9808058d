import AggregateSchema
import Aggregation
import Foundation
import Postbacks
import Testing

@testable import Basics
@testable import Reporting

/// The small pieces the page is made of: number formats, axis scales and the CSV reader.
@Suite struct FormattingTests {
    @Test(arguments: [(0, "0"), (999, "999"), (1_000, "1,000"), (1_234_567, "1,234,567"), (-12_345, "-12,345")])
    func countsAreGroupedInThousands(value: Int, text: String) {
        #expect(NumberFormat.count(value) == text)
    }

    @Test(arguments: [
        (0, "0.00"), (1_234_565_000, "1,234.57"), (1_234_564_999, "1,234.56"), (5_000, "0.01"), (4_999, "0.00"),
        (100_000_000, "100.00"),
    ])
    func moneyIsRoundedHalfUpToCents(micros: Int64, text: String) {
        #expect(NumberFormat.money(Money(micros: micros)) == text)
    }

    @Test(arguments: [
        (1_234_500_000, "1,234.5"), (150_000_000, "150"), (1, "0.000001"), (12_345_678_901_234, "12,345,678.901234"),
    ])
    func exactMoneyKeepsEveryDigit(micros: Int64, text: String) {
        #expect(NumberFormat.exactMoney(Money(micros: micros)) == text)
    }

    @Test(arguments: [
        (1, 3, "33.3%"), (2, 3, "66.7%"), (1, 8, "12.5%"), (1, 16, "6.3%"), (0, 5, "0.0%"), (5, 5, "100.0%"), (1, 0, "–"),
    ])
    func percentagesHaveOneDecimalRoundedHalfUp(part: Int, whole: Int, text: String) {
        #expect(NumberFormat.percent(part, of: whole) == text)
    }

    @Test func coordinatesAndTicksAreShortAndStable() {
        #expect(NumberFormat.svg(12.34) == "12.3")
        #expect(NumberFormat.svg(40) == "40")
        #expect(NumberFormat.svg(-0.04) == "0")
        #expect(NumberFormat.tick(1_500) == "1,500")
        #expect(NumberFormat.tick(25_000) == "25k")
        #expect(NumberFormat.tick(2_500_000) == "2.5M")
        #expect(NumberFormat.tick(2.5, fractionDigits: 1) == "2.5")
        #expect(NumberFormat.longDay(UTCDayFixture.day("2026-03-02")) == "Mon 2 Mar 2026")
        #expect(NumberFormat.longDay(UTCDayFixture.day("1969-12-31")) == "Wed 31 Dec 1969")
    }

    @Test(arguments: [(0.0, 1.0), (7, 8), (10, 10), (11, 12), (97, 100), (1_234, 1_250), (0.3, 1)])
    func countScalesEndOnARoundNumberAtOrAboveTheData(value: Double, maximum: Double) {
        let scale = NiceScale(covering: value)
        #expect(scale.maximum == maximum)
        #expect(scale.maximum >= value)
        #expect(scale.step >= 1 && scale.step.rounded() == scale.step, "whole ticks for counts")
        #expect(scale.ticks.first == 0 && scale.ticks.last == scale.maximum)
        #expect((1...8).contains(scale.ticks.count - 1))
    }

    @Test func percentScalesMayUseFractionalSteps() {
        let scale = NiceScale(covering: 3.7, tickCount: 5, integral: false)
        #expect(scale.maximum == 4 && scale.step == 1)
        let small = NiceScale(covering: 1.1, tickCount: 5, integral: false)
        #expect(small.step == 0.25 && small.maximum == 1.25 && small.fractionDigits == 2)
    }

    @Test func heatMapBinsAreExact() {
        #expect(FineValueHeatmap.bin(1, of: 100) == 0)  // 1%
        #expect(FineValueHeatmap.bin(11, of: 1_000) == 1)  // 1.1%
        #expect(FineValueHeatmap.bin(1, of: 20) == 2)  // 5%
        #expect(FineValueHeatmap.bin(21, of: 100) == 5)  // 21%
        #expect(FineValueHeatmap.bin(5, of: 5) == 5)
    }

    /// Null (unquoted empty) and empty string (`""`) stay apart; quotes, commas and line breaks
    /// inside quoted fields survive; the record's starting line is reported.
    @Test func theCSVReaderFollowsTheTablesConventions() throws {
        let records = try Self.read("a,b,c\n,\"\",x\n\"q \"\"u\"\", o\",\"two\nlines\",\"\"\nlast,without,newline")
        #expect(
            records.map(\.fields) == [
                ["a", "b", "c"], [nil, "", "x"], ["q \"u\", o", "two\nlines", ""], ["last", "without", "newline"],
            ])
        #expect(records.map(\.line) == [1, 2, 3, 5])
    }

    @Test(arguments: [
        ("\"open", "unterminated quoted field"), ("a\"b", "quote inside an unquoted field"),
        ("\"a\"b", "text after the closing quote of a field"), ("\u{FF}\u{FE}", ""),
    ])
    func theCSVReaderRejectsWhatTheTablesNeverHold(text: String, reason: String) throws {
        let bytes: [UInt8] = text == "\u{FF}\u{FE}" ? [0xFF, 0xFE, 0x0A] : Array(text.utf8)
        #expect {
            _ = try Self.read(bytes: bytes)
        } throws: { error in
            guard let error = error as? ReportError, error.code == .malformed else { return false }
            return error.line == 1 && (reason.isEmpty ? error.reason.contains("UTF-8") : error.reason == reason)
        }
    }

    static func read(_ text: String) throws -> [(fields: [String?], line: Int)] { try read(bytes: Array(text.utf8)) }

    static func read(bytes: [UInt8]) throws -> [(fields: [String?], line: Int)] {
        let path = NSTemporaryDirectory() + "csv-\(UUID().uuidString)"
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let fd = open(path, O_RDONLY)
        defer { close(fd) }
        let reader = CSVRecordReader(fd: fd, path: path)
        var records: [(fields: [String?], line: Int)] = []
        while let fields = try reader.next() { records.append((fields, reader.recordLine)) }
        return records
    }

    /// Apple Ads (SKAdNetwork postbacks with ad-network-id com.apple.ads) is named in the report.
    @Test func appleAdsIsNamed() {
        #expect(ReportPage.networkName("com.apple.ads") == "Apple Ads (com.apple.ads)")
        #expect(ReportPage.networkName("COM.APPLE.ADS") == "Apple Ads (COM.APPLE.ADS)")
        #expect(ReportPage.networkName("example123.skadnetwork") == "example123.skadnetwork")
        #expect(ReportPage.networkName("") == "(no ad network)")
    }

    /// Column headings that would shorten alike keep what tells them apart; short and identical ones
    /// stay as they are, and a heading never grows past the limit per word.
    @Test func headingsThatWouldShortenAlikeDiffer() {
        let networks = ["demo-network-a.skadnetwork", "demo-network-b.skadnetwork", "demo-network-c.adattributionkit"]
        let shown = FiguresTable.distinctHeadings(["Day"] + networks + ["Share, demo-network-a.skadnetwork", "All"])
        #expect(
            shown == [
                "Day", "…a.skadnetwork", "…b.skadnetwork", "…c.adattribut…", "Share, …a.skadnetwork", "All",
            ])
        #expect(Set(shown).count == shown.count)
        #expect(shown.flatMap { $0.split(separator: " ") }.allSatisfy { $0.count <= FiguresTable.longestHeadingWord })
        // One long word alone is shortened at its end, as before.
        #expect(FiguresTable.distinctHeadings(["com.example.verylongnetwork"]) == ["com.example.v…"])
        // Look-alikes that share even more: each pass splits them after a longer shared start.
        let deep = ["network-alpha-one-x", "network-alpha-one-y", "network-beta-two-z"]
        let deepShown = FiguresTable.distinctHeadings(deep)
        #expect(Set(deepShown).count == 3, "\(deepShown)")
    }
}

enum UTCDayFixture {
    static func day(_ text: String) -> Basics.UTCDay { Basics.UTCDay(text)! }

}

/// Rejection reasons are grouped by their template; the quoted value becomes a column.
@Suite struct ReasonTemplateTests {
    @Test(arguments: [
        ("ad-network-id \"a.skadnetwork\" is not accepted here", "ad-network-id \"…\" is not accepted here", "a.skadnetwork"),
        ("kid \"x\" and alg \"y\" are unknown", "kid \"…\" and alg \"…\" are unknown", "x, y"),
        ("signature does not verify", "signature does not verify", ""),
        ("ad network 'spam.skadnetwork' is not one of Apple's", "ad network '…' is not one of Apple's", "spam.skadnetwork"),
        ("an unterminated \"quote", "an unterminated \"quote", ""),
        ("escaped \"a\\\"b\" inside", "escaped \"…\" inside", "a\\\"b"),
    ])
    func splitsTheValueFromTheTemplate(reason: String, template: String, value: String) {
        let split = ReasonTemplate(reason)
        #expect(split.template == template)
        #expect(split.value == value)
    }

    @Test func reasonsThatDifferOnlyInTheirValueShareATemplate() {
        let first = ReasonTemplate("ad-network-id \"a.skadnetwork\" is not accepted here")
        let second = ReasonTemplate("ad-network-id \"b.skadnetwork\" is not accepted here")
        #expect(first.template == second.template && first != second)
    }
}
