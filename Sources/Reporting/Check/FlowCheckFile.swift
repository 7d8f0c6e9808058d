import AggregateSchema
package import Basics
import PostbackStore

/// The nightly check's findings beside the manifests: `agg/_checks/dt=DAY.json` (production) or
/// `agg/_checks/dt=DAY.development.json`, written atomically like a manifest; the report shows
/// them at the top of its first screen.
package enum FlowCheckFile {
    static let format = 1

    package static func path(dataDirectory: String, day: UTCDay, environment: ReportEnvironment) -> String {
        let suffix = environment == .production ? "" : ".\(environment.rawValue)"
        return "\(dataDirectory)/agg/_checks/dt=\(day)\(suffix).json"
    }

    package static func write(_ result: FlowCheck.Result, dataDirectory: String, toolVersion: String) throws
        -> String
    {
        let path = path(dataDirectory: dataDirectory, day: result.day, environment: result.environment)
        try DurableFile.makeDirectories("\(dataDirectory)/agg/_checks")
        try DurableFile.write(json(result, toolVersion: toolVersion), to: path)
        return path
    }

    static func json(_ result: FlowCheck.Result, toolVersion: String) -> [UInt8] {
        var json = JSONWriter(reservingCapacity: 1024)
        json.beginObject()
        json.field("format", format)
        json.field("dt", result.day.description)
        json.field("environment", result.environment.rawValue)
        json.field("tool", toolVersion)
        json.field("history_days", result.historyDays.count)
        json.field("pairs", result.pairs)
        json.field("pairs_with_too_little_history", result.pairsWithTooLittleHistory)
        json.key("still_stopped")
        json.beginArray()
        for pair in result.pairsStillStopped {
            json.beginObject()
            json.field("app_id", pair.appID)
            json.field("ad_network_id", pair.adNetworkID)
            json.endObject()
        }
        json.endArray()
        json.key("findings")
        json.beginArray()
        for finding in result.findings {
            json.beginObject()
            json.field("kind", finding.kind.rawValue)
            json.field("app_id", finding.pair.appID)
            json.field("ad_network_id", finding.pair.adNetworkID)
            json.field("text", finding.text)
            for (name, value) in finding.figures {
                json.key(name)
                switch value {
                case .count(let count): json.value(count)
                case .decimal(let number), .probability(let number): json.value(numberText: "\(number)")
                }
            }
            json.endObject()
        }
        json.endArray()
        json.endObject()
        json.endLine()
        return json.bytes
    }

    /// The findings of the files of `days` that have one, as lines (`FlowFinding.line`); a file
    /// that does not read is one line saying so, never a failed page.
    static func lines(dataDirectory: String, days: [UTCDay], environment: ReportEnvironment) -> [String] {
        var lines: [String] = []
        for day in days {
            let path = path(dataDirectory: dataDirectory, day: day, environment: environment)
            guard let bytes = try? FileBytes.read(path: path, limit: 64 << 20) else { continue }
            guard case .object(let root)? = try? StrictJSONParser.parse(bytes), case .array(let findings)? = root["findings"]
            else {
                lines.append("\(day): \(path) does not read as the check's findings (run 'postback check --date \(day)' again)")
                continue
            }
            for case .object(let finding) in findings {
                func text(_ key: String) -> String {
                    if case .string(let value)? = finding[key] { return value }
                    return "?"
                }
                lines.append("\(day) app \(text("app_id")) \(text("ad_network_id")): \(text("kind")): \(text("text"))")
            }
        }
        return lines
    }
}
