package import Basics
import Foundation
package import Postbacks

/// Every conversion schema of a schema directory, checked against each other, with the lookup
/// aggregation uses: which schema decodes a postback of app A, protocol P and conversion type T whose
/// estimated install date is D.
///
/// Layout: `DIR/<app-id>/<anything>.json`, one file per app and effective period. Other files (a
/// README, editor backups) and hidden entries are ignored; a directory whose name is not an app id,
/// a file whose `app_id` differs from its directory, and a `.json` file directly in `DIR` are errors
/// (each would silently turn decoded days into `no_schema`); so is a directory with no schema at all,
/// unless the caller allows it (`aggregate` counts the postbacks of apps without a schema, with no revenue).
package struct SchemaCatalog: Sendable {
    /// Sorted by app id, then effective date, then schema id.
    package let schemas: [ConversionSchema]
    private let indicesByApp: [Int64: [Int]]

    /// Checks that schema ids are unique and that no two schemas of one app claim the same day for the
    /// same protocol and conversion type.
    package init(schemas: [ConversionSchema], origin: String = "schemas") throws {
        let sorted = schemas.sorted { ($0.appID, $0.effectiveFrom, $0.schemaID) < ($1.appID, $1.effectiveFrom, $1.schemaID) }
        var problems: [String] = []
        var seenIDs: [String: String] = [:]
        for schema in sorted {
            if let other = seenIDs[schema.schemaID] {
                problems.append("schema_id \"\(schema.schemaID)\" is used by both \(other) and \(schema.file)")
            }
            seenIDs[schema.schemaID] = schema.file
        }
        var byApp: [Int64: [Int]] = [:]
        for (index, schema) in sorted.enumerated() { byApp[schema.appID, default: []].append(index) }
        for indices in byApp.values {
            for (offset, first) in indices.enumerated() {
                for second in indices[(offset + 1)...] where Self.overlap(sorted[first], sorted[second]) {
                    let a = sorted[first]
                    let b = sorted[second]
                    problems.append(
                        "\(a.file) (\(a.schemaID)) and \(b.file) (\(b.schemaID)) both decode app \(a.appID) on \(Self.firstCommonDay(a, b)) for the same protocol and conversion type; narrow effective_from/effective_to or applies_to"
                    )
                }
            }
        }
        guard problems.isEmpty else { throw AggregationError.schema(file: origin, problems: problems) }
        self.schemas = sorted
        self.indicesByApp = byApp
    }

    /// No schemas: every postback is reported as `no_schema`.
    package static let empty = try! SchemaCatalog(schemas: [])

    /// Loads and validates every schema under `directory`; with `allowingEmpty`, a directory with no
    /// schema yet is an empty catalog.
    ///
    /// - Throws: `SchemaError` naming each bad file and each problem in it.
    package static func load(directory: String, allowingEmpty: Bool = false) throws -> SchemaCatalog {
        let manager = FileManager.default
        var isDirectory: ObjCBool = false
        guard manager.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw AggregationError.schema(file: directory, problems: ["is not a directory"])
        }
        let apps: [String]
        do {
            apps = try manager.contentsOfDirectory(atPath: directory).sorted()
        } catch {
            throw AggregationError.schema(file: directory, problems: ["cannot be listed: \(error.localizedDescription)"])
        }
        var schemas: [ConversionSchema] = []
        var problems: [String] = []
        for app in apps where !app.hasPrefix(".") {
            let appPath = directory + "/" + app
            guard manager.fileExists(atPath: appPath, isDirectory: &isDirectory), isDirectory.boolValue else {
                // A schema dropped next to the app directories would otherwise be ignored, and a rerun
                // would republish its app's days as `no_schema` with no revenue.
                if app.hasSuffix(".json") {
                    problems.append(
                        "\(appPath): schema files go in a directory named after the app id: \(Self.layoutHint(directory)); move it there"
                    )
                }
                continue
            }
            guard let appID = Int64(app), String(appID) == app else {
                problems.append("\(appPath): directory names must be app ids (digits), one directory per app")
                continue
            }
            let files = ((try? manager.contentsOfDirectory(atPath: appPath)) ?? []).filter {
                $0.hasSuffix(".json") && !$0.hasPrefix(".")
            }.sorted()
            for file in files {
                do {
                    let schema = try ConversionSchema(contentsOf: appPath + "/" + file)
                    if schema.appID != appID {
                        problems.append("\(schema.file): app_id \(schema.appID) does not match its directory \(app)")
                    } else {
                        schemas.append(schema)
                    }
                } catch {
                    problems.append("\(error)")
                }
            }
        }
        if problems.isEmpty, schemas.isEmpty, !allowingEmpty {
            // An empty directory is a mistyped path or a failed checkout far more often than a team
            // with no schemas; publishing with it would turn every decoded row into `no_schema`.
            problems.append("holds no schemas: expected \(Self.layoutHint(directory)) (see docs/aggregate.md)")
        }
        guard problems.isEmpty else { throw AggregationError.schema(file: directory, problems: problems) }
        return try SchemaCatalog(schemas: schemas, origin: directory)
    }

    /// The expected layout, spelled with the user's own directory.
    static func layoutHint(_ directory: String) -> String {
        let root = directory.hasSuffix("/") ? String(directory.dropLast()) : directory
        return "\(root)/<app-id>/<effective-from>.json, e.g. \(root)/525463029/2026-01-01.json"
    }

    /// The schema for a postback, or nil when none applies (reported as `no_schema`).
    package func schema(appID: Int64, day: UTCDay, postbackProtocol: PostbackProtocol, conversionType: ConversionType)
        -> ConversionSchema?
    {
        schemaIndex(appID: appID, day: day, postbackProtocol: postbackProtocol, conversionType: conversionType).map {
            schemas[$0]
        }
    }

    /// The position in `schemas` of the schema for a postback.
    package func schemaIndex(appID: Int64, day: UTCDay, postbackProtocol: PostbackProtocol, conversionType: ConversionType)
        -> Int?
    {
        guard let indices = indicesByApp[appID] else { return nil }
        for index in indices {
            let schema = schemas[index]
            if schema.covers(day) && schema.applies(to: postbackProtocol, conversionType) { return index }
        }
        return nil
    }

    private static func overlap(_ a: ConversionSchema, _ b: ConversionSchema) -> Bool {
        let sharesKind =
            a.protocols.contains(where: b.protocols.contains) && a.conversionTypes.contains(where: b.conversionTypes.contains)
        let start = max(a.effectiveFrom, b.effectiveFrom)
        let aEnd = a.effectiveTo?.daysSinceEpoch ?? Int.max
        let bEnd = b.effectiveTo?.daysSinceEpoch ?? Int.max
        return sharesKind && start.daysSinceEpoch <= min(aEnd, bEnd)
    }

    private static func firstCommonDay(_ a: ConversionSchema, _ b: ConversionSchema) -> UTCDay {
        max(a.effectiveFrom, b.effectiveFrom)
    }
}
