import Basics
import PostbackCrypto
import Postbacks

extension ConversionSchema {
    static let topLevelKeys = [
        "$schema", "schema_id", "description", "app_id", "effective_from", "effective_to", "currency",
        "applies_to", "revenue_estimate", "windows", "source_identifier_map",
    ]

    /// Reads and validates a schema file's bytes.
    ///
    /// - Throws: `SchemaError` listing every problem found (unknown keys, wrong types, overlapping
    ///   values, bad ranges or dates, inheritance cycles…), each with its path in the document.
    package init(json bytes: [UInt8], file: String) throws {
        let document: JSONValue
        do {
            document = try StrictJSONParser.parse(bytes, maximumDepth: 32)
        } catch {
            throw AggregationError.schema(file: file, problems: ["not valid JSON: \(error.described(in: bytes))"])
        }
        let log = ProblemLog()
        let schema = Self.read(document, file: file, digest: SHA256.hash(bytes).description, log: log)
        guard log.isEmpty, let schema else { throw AggregationError.schema(file: file, problems: log.problems) }
        self = schema
    }

    /// Reads a schema file from disk.
    package init(contentsOf path: String) throws {
        let bytes: [UInt8]
        do {
            bytes = try FileBytes.read(path: path, limit: 4 << 20)
        } catch {
            throw AggregationError.schema(file: path, problems: [error.message])
        }
        try self.init(json: bytes, file: path)
    }

    private static func read(_ document: JSONValue, file: String, digest: String, log: ProblemLog) -> ConversionSchema? {
        guard let top = SchemaObject(document, path: "", log: log) else { return nil }
        top.allowOnly(topLevelKeys)
        if top.has("$schema") { _ = top.string("$schema", maximumLength: 2000) }
        if top.has("description") { _ = top.string("description", maximumLength: 10_000) }
        let schemaID = top.string("schema_id", required: true)
        let appID = top.integer("app_id", required: true, in: 0...Int64.max)
        let from = top.day("effective_from", required: true)
        let to = top.day("effective_to")
        if let from, let to, to < from { log.add("effective_to", "\(to) is before effective_from \(from)") }
        let currency = top.string("currency", required: true)
        if let currency,
            currency.utf8.count != 3 || !currency.utf8.allSatisfy({ $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") })
        {
            log.add(
                "currency", "must be an ISO 4217 code of three capital letters, got \"\(JSONWriter.escapedForMessage(currency))\""
            )
        }
        let policy = top.has("revenue_estimate") ? top.choice("revenue_estimate", RevenueEstimatePolicy.self) : .midpoint

        var protocols = PostbackProtocol.allCases
        var conversionTypes = ConversionType.allCases
        if let applies = top.object("applies_to") {
            applies.allowOnly(["protocols", "conversion_types"])
            if let list = readChoices(applies, "protocols", PostbackProtocol.self) { protocols = list }
            if let list = readChoices(applies, "conversion_types", ConversionType.self) { conversionTypes = list }
        }

        let windows = readWindows(top.object("windows", required: true), policy: policy ?? .midpoint, log: log)

        var maps: [SourceIdentifierMap] = []
        for (index, element) in (top.array("source_identifier_map") ?? []).enumerated() {
            let path = "source_identifier_map[\(index)]"
            guard let object = SchemaObject(element, path: path, log: log), let map = SourceIdentifierMap(object) else {
                continue
            }
            if let other = maps.firstIndex(where: { $0.overlaps(map) }) {
                log.add(
                    path, "\(map.adNetworkID) already has a map valid on some of the same days (source_identifier_map[\(other)])")
            }
            maps.append(map)
        }

        guard let schemaID, let appID, let from, let currency, let policy, let windows else { return nil }
        return ConversionSchema(
            schemaID: schemaID, appID: appID, effectiveFrom: from, effectiveTo: to, currency: currency,
            protocols: protocols, conversionTypes: conversionTypes, revenueEstimate: policy,
            windows: windows, sourceIdentifierMaps: maps, file: file, digest: digest)
    }

    private static func readChoices<T: RawRepresentable<String> & CaseIterable & Equatable>(
        _ object: SchemaObject, _ key: String, _ type: T.Type
    ) -> [T]? {
        guard let list = object.array(key) else { return nil }
        var result: [T] = []
        for (index, element) in list.enumerated() {
            let path = object.child(key) + "[\(index)]"
            let alias: [String: String] = ["reengagement": "re-engagement"]
            guard case .string(let text) = element, let value = T(rawValue: alias[text] ?? text) else {
                object.log.add(path, "must be one of \(T.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", "))")
                continue
            }
            if result.contains(value) { object.log.add(path, "\"\(text)\" is listed twice") }
            result.append(value)
        }
        if list.isEmpty { object.log.add(object.child(key), "must not be empty (leave the key out to mean all)") }
        return T.allCases.filter { result.contains($0) }
    }

    // MARK: Windows

    private static func readWindows(_ object: SchemaObject?, policy: RevenueEstimatePolicy, log: ProblemLog) -> [WindowDecoding]?
    {
        guard let object else { return nil }
        object.allowOnly(["0", "1", "2"])
        var windows = [WindowDecoding](repeating: WindowDecoding(), count: 3)
        var inherits: [Int: Int] = [:]
        var ownCoarse: [[DecodedValue?]] = Array(repeating: [nil, nil, nil], count: 3)
        for window in 0..<3 {
            guard let windowObject = object.object(String(window)) else { continue }
            windowObject.allowOnly(["description", "fine", "coarse"])
            if windowObject.has("description") { _ = windowObject.string("description", maximumLength: 10_000) }
            if let fine = windowObject.object("fine") {
                if window != 0 {
                    log.add(fine.path, "fine values are only sent in the first postback (window 0); map coarse values here")
                } else if let table = FineValueTable.read(fine, policy: policy) {
                    windows[window].fine = table.values
                    windows[window].unmappedLabel = table.unmappedLabel
                }
            }
            if let coarse = windowObject.object("coarse") {
                coarse.allowOnly(["description", "inherit", "low", "medium", "high"])
                if coarse.has("description") { _ = coarse.string("description", maximumLength: 10_000) }
                for level in CoarseConversionValue.allCases {
                    guard let entry = coarse.object(level.rawValue) else { continue }
                    entry.allowOnly(["label", "description", "events", "revenue"])
                    ownCoarse[window][level.tableIndex] = ValueEntryReader.readValue(entry, policy: policy, template: [:])
                }
                if let parent = coarse.string("inherit") {
                    guard let parentWindow = Int(parent), (0..<3).contains(parentWindow), parentWindow != window else {
                        log.add(coarse.child("inherit"), "must name another window, \"0\", \"1\" or \"2\"")
                        continue
                    }
                    if object.object(parent) == nil {
                        log.add(coarse.child("inherit"), "window \(parent) is not defined")
                        continue
                    }
                    inherits[window] = parentWindow
                }
            }
        }
        // Resolve inheritance: a window starts from its parent's resolved coarse values and overrides
        // the levels it maps itself.
        for window in 0..<3 {
            var chain: [Int] = [window]
            var current = window
            while let parent = inherits[current] {
                if chain.contains(parent) {
                    log.add(
                        "windows.\(window).coarse.inherit",
                        "inheritance cycle \(chain.map(String.init).joined(separator: " → ")) → \(parent)")
                    chain = [window]
                    break
                }
                chain.append(parent)
                current = parent
            }
            var resolved: [DecodedValue?] = [nil, nil, nil]
            for ancestor in chain.reversed() {
                for level in 0..<3 where ownCoarse[ancestor][level] != nil { resolved[level] = ownCoarse[ancestor][level] }
            }
            windows[window].coarse = resolved
        }
        return windows
    }
}
