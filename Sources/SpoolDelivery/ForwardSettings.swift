package import Basics
import Foundation
package import Postbacks

/// One partner destination from the receiver's config (`"forward": [ … ]`, docs/forwarding.md):
/// where verified postbacks go, which ones, with which headers and enrichment.
package struct ForwardSettings: Sendable {
    /// `[a-z0-9_-]`, 1–40 characters: names the ledger (`raw/_delivery/forward-<name>/`) and the metrics label.
    package var name: String
    package var url: String
    /// Filters; nil passes everything. Only verified postbacks are ever forwarded.
    package var appIDs: Set<Int64>?
    /// Compared case-insensitively (Apple signs the case the ad network registered).
    package var adNetworkIDs: Set<String>?
    package var protocols: Set<PostbackProtocol>?
    package var environments: Set<PostbackEnvironment>?
    /// Extra headers. Values may be secrets: they are never logged, rendered in metrics or written anywhere.
    package var headers: [(name: String, value: String)]
    package var timeoutSeconds: Double
    /// Requests in flight at once for this destination.
    package var concurrency: Int
    /// Postbacks received longer ago than this go to dead letters instead; nil never.
    package var maxAgeSeconds: Double?
    package var enrichment: Enrichment

    /// Fields added next to Apple's (which go out byte for byte): the body's closing `}` is replaced
    /// by `,"<field>":<value>…}`.
    package struct Enrichment: Sendable {
        /// The receive time (ISO 8601, UTC) under this field name.
        package var receivedAtField: String?
        /// Constant fields.
        package var fields: [(name: String, value: String)] = []
        /// Per source identifier (SKAdNetwork 4 / AdAttributionKit) or campaign id (SKAdNetwork 1–3),
        /// as its decimal text: fields to add, e.g. `partner-campaign-id`, `partner-campaign-name`.
        package var campaigns: [String: [(name: String, value: String)]] = [:]

        package var isEmpty: Bool { receivedAtField == nil && fields.isEmpty && campaigns.isEmpty }
        package init() {}
    }

    package init(name: String, url: String) {
        self.name = name
        self.url = url
        headers = []
        timeoutSeconds = 10
        concurrency = 4
        enrichment = Enrichment()
    }

    /// The URL for logs and `forward status`: without its user-info and query (`URLRedaction`), which
    /// may hold a password or an API key.
    package var urlForDisplay: String { URLRedaction.redacted(url) }

    /// The delivery machinery's name for this destination (ledger directory, metrics label).
    package var destinationName: String { "forward-\(name)" }

    /// Parses the config's `forward` array. Header values come from `{"env": "VAR"}` or
    /// `{"file": "path"}` (relative to `directory`, the config file's); a literal string is accepted
    /// too, for values that are not secret. `environment` replaces the process environment (tests).
    package static func parseList(
        _ value: JSONValue, relativeTo directory: String = ".",
        environment: [String: String]? = nil
    ) throws -> [ForwardSettings] {
        let environment = environment ?? ProcessInfo.processInfo.environment
        guard case .array(let items) = value else {
            throw ConfigurationError("forward must be an array of destinations, got \(value.kindDescription)")
        }
        var result: [ForwardSettings] = []
        for (index, item) in items.enumerated() {
            let settings = try parse(item, at: "forward[\(index)]", relativeTo: directory, environment: environment)
            if result.contains(where: { $0.name == settings.name }) {
                throw ConfigurationError(
                    "forward[\(index)].name \"\(settings.name)\" is used twice; each destination needs its own name (it names its cursor)"
                )
            }
            result.append(settings)
        }
        return result
    }

    private static func parse(
        _ value: JSONValue, at location: String, relativeTo directory: String,
        environment: [String: String]
    ) throws -> ForwardSettings {
        guard case .object(let object) = value else {
            throw ConfigurationError("\(location) must be an object with name and url")
        }
        func fail(_ key: String, _ expected: String) -> ConfigurationError {
            ConfigurationError("\(location).\(key) must be \(expected)")
        }
        func string(_ key: String, _ value: JSONValue) throws -> String {
            guard case .string(let text) = value else { throw fail(key, "a string") }
            return text
        }
        func strings(_ key: String, _ value: JSONValue) throws -> [String] {
            guard case .array(let items) = value else { throw fail(key, "an array") }
            var texts: [String] = []
            for item in items {
                switch item {
                case .string(let text): texts.append(text)
                case .number(let number): texts.append(number.text)
                default: throw fail(key, "an array of strings or numbers")
                }
            }
            return texts
        }
        func number(_ key: String, _ value: JSONValue, in range: ClosedRange<Double>) throws -> Double {
            guard case .number(let number) = value, let double = Double(number.text), range.contains(double) else {
                throw fail(key, "a number from \(range.lowerBound) to \(range.upperBound)")
            }
            return double
        }
        func pairs(_ key: String, _ value: JSONValue) throws -> [(name: String, value: String)] {
            guard case .object(let members) = value else { throw fail(key, "an object of field names and strings") }
            var result: [(name: String, value: String)] = []
            for member in members.members {
                guard case .string(let text) = member.value else { throw fail("\(key).\(member.key)", "a string") }
                result.append((member.key, text))
            }
            return result
        }

        guard case .string(let name)? = object["name"] else { throw fail("name", "a string") }
        guard (1...40).contains(name.utf8.count),
            name.utf8.allSatisfy({ ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x5F || $0 == 0x2D })
        else {
            throw ConfigurationError(
                "\(location).name \"\(JSONWriter.escapedForMessage(name))\" must be 1–40 of a-z, 0-9, '_' or '-' (it names the cursor's directory)"
            )
        }
        guard case .string(let url)? = object["url"] else { throw fail("url", "a string") }
        guard url.hasPrefix("http://") || url.hasPrefix("https://") else {
            throw ConfigurationError(
                "\(location).url must be an http:// or https:// URL, got \"\(JSONWriter.escapedForMessage(URLRedaction.redacted(url)))\""
            )
        }
        var settings = ForwardSettings(name: name, url: url)
        for member in object.members {
            let key = member.key
            switch key {
            case "name", "url": break
            case "app_ids":
                var ids: Set<Int64> = []
                for text in try strings(key, member.value) {
                    guard let id = Int64(text), id >= 0 else { throw fail(key, "an array of App Store item ids (whole numbers)") }
                    ids.insert(id)
                }
                settings.appIDs = ids
            case "ad_network_ids": settings.adNetworkIDs = Set(try strings(key, member.value).map { $0.lowercased() })
            case "protocols":
                var protocols: Set<PostbackProtocol> = []
                for text in try strings(key, member.value) {
                    guard let value = PostbackProtocol(rawValue: text) else {
                        throw fail(key, "an array of \"skadnetwork\" or \"adattributionkit\"")
                    }
                    protocols.insert(value)
                }
                settings.protocols = protocols
            case "environments":
                var environments: Set<PostbackEnvironment> = []
                for text in try strings(key, member.value) {
                    guard let value = PostbackEnvironment(rawValue: text) else {
                        throw fail(
                            key,
                            "an array of \(PostbackEnvironment.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: " or "))")
                    }
                    environments.insert(value)
                }
                settings.environments = environments
            case "headers":
                guard case .object(let headers) = member.value else { throw fail(key, "an object of header names") }
                for header in headers.members {
                    let at = "\(key).\(header.key)"
                    guard !header.key.isEmpty, header.key.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != 0x3A }) else {
                        throw fail(at, "named by a valid header name")
                    }
                    let headerValue: String
                    switch header.value {
                    case .string(let text): headerValue = text
                    case .object(let source):
                        if case .string(let variable)? = source["env"] {
                            guard let text = environment[variable], !text.isEmpty else {
                                throw ConfigurationError(
                                    "\(location).\(at): environment variable \(variable) is not set; export it before starting the receiver"
                                )
                            }
                            headerValue = text
                        } else if case .string(let file)? = source["file"] {
                            let path = file.hasPrefix("/") ? file : "\(directory)/\(file)"
                            guard let data = FileManager.default.contents(atPath: path) else {
                                throw ConfigurationError(
                                    "\(location).\(at): cannot read \(path); create it (the secret on one line) or fix the path")
                            }
                            headerValue = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
                        } else {
                            throw fail(at, "a string, {\"env\": \"VARIABLE\"} or {\"file\": \"path\"}")
                        }
                    default: throw fail(at, "a string, {\"env\": \"VARIABLE\"} or {\"file\": \"path\"}")
                    }
                    guard !headerValue.utf8.contains(where: { $0 == 0x0A || $0 == 0x0D || $0 == 0 }) else {
                        throw ConfigurationError("\(location).\(at): the value contains a line break; it must be one line")
                    }
                    settings.headers.append((header.key, headerValue))
                }
            case "timeout_seconds": settings.timeoutSeconds = try number(key, member.value, in: 0.1...600)
            case "concurrency": settings.concurrency = Int(try number(key, member.value, in: 1...64))
            case "max_age_hours": settings.maxAgeSeconds = try number(key, member.value, in: 1...87_840) * 3600
            case "enrich":
                guard case .object(let enrich) = member.value else { throw fail(key, "an object") }
                for part in enrich.members {
                    switch part.key {
                    case "received_at_field":
                        settings.enrichment.receivedAtField = try string("enrich.received_at_field", part.value)
                    case "fields": settings.enrichment.fields = try pairs("enrich.fields", part.value)
                    case "campaigns":
                        guard case .object(let campaigns) = part.value else {
                            throw fail("enrich.campaigns", "an object keyed by source identifier or campaign id")
                        }
                        for campaign in campaigns.members {
                            settings.enrichment.campaigns[campaign.key] = try pairs(
                                "enrich.campaigns.\(campaign.key)", campaign.value)
                        }
                    default:
                        throw ConfigurationError(
                            "\(location).enrich: unknown key \"\(JSONWriter.escapedForMessage(part.key))\"; known keys: received_at_field, fields, campaigns"
                        )
                    }
                }
            default:
                throw ConfigurationError(
                    "\(location): unknown key \"\(JSONWriter.escapedForMessage(key))\"; known keys: name, url, app_ids, ad_network_ids, protocols, environments, headers, timeout_seconds, concurrency, max_age_hours, enrich"
                )
            }
        }
        return settings
    }
}
