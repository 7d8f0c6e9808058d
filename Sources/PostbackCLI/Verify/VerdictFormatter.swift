import Basics
import Postbacks

/// How `postback verify` prints one verdict.
enum VerdictFormatter {
    /// One JSON object per postback (the `--json` contract):
    /// `source`, `status`, `protocol`, `version`, `key`, `environment`, `reason` (when not verified),
    /// `dedup_key`, `test_mode` when it is a SKAdNetwork test-mode postback, `flags` (each value not
    /// taken as sent: field, action, raw, note; always present, possibly empty) and `quarantine`
    /// when a receiver would keep it in `raw/unverifiable/`.
    static func appendJSON(source: String, result: VerificationResult, to json: inout JSONWriter) {
        json.beginObject()
        json.field("source", source)
        json.field("status", result.status.rawValue)
        json.field("protocol", result.postbackProtocol?.rawValue)
        json.field("version", result.version)
        json.field("key", result.keyName)
        json.field("environment", result.environment?.rawValue)
        if let reason = result.reason { json.field("reason", reason) }
        json.field("dedup_key", result.dedupKey)
        if result.isTestMode { json.field("test_mode", true) }
        json.key("flags")
        json.beginArray()
        for flag in result.flags { flag.write(to: &json) }
        json.endArray()
        if let quarantine = result.quarantineReason { json.field("quarantine", quarantine.rawValue) }
        json.endObject()
        json.endLine()
    }

    /// A readable line: status, source, protocol and version, key and environment, then the reason.
    static func appendText(source: String, result: VerificationResult, to output: inout [UInt8]) {
        var line = result.status.rawValue.padding(to: 20)
        line += printable(source)
        var details: [String] = []
        if let postbackProtocol = result.postbackProtocol {
            details.append(result.version.map { "\(postbackProtocol.rawValue) \($0)" } ?? postbackProtocol.rawValue)
        }
        if result.isVerified {
            if let key = result.keyName { details.append("key \(key)") }
            if let environment = result.environment {
                details.append(environment.rawValue + (result.isTestMode ? " (test mode)" : ""))
            }
            if let dedup = result.dedupKey { details.append("dedup \(printable(dedup))") }
        }
        if !details.isEmpty { line += "  " + details.joined(separator: "  ") }
        if let reason = result.reason { line += ": " + reason }
        let flags = result.flags
        if !flags.isEmpty { line += "  flags: " + flags.map { printable($0.summary) }.joined(separator: "; ") }
        output.append(contentsOf: line.utf8)
        output.append(0x0A)
    }

    /// File names and ids are user or attacker text: escape anything that could hide or rewrite output.
    static func printable(_ text: String) -> String { JSONWriter.escapedForMessage(text, limit: 400) }
}

extension String {
    func padding(to width: Int) -> String {
        count >= width ? self + " " : self + String(repeating: " ", count: width - count)
    }
}
