package import Basics

/// Why a manifest could not be read as declared: the reason names the member (`totals.postbacks is
/// missing or not a count`), as the report prints it after the manifest's path.
package struct ManifestError: Error, Sendable, Equatable {
    package let reason: String

    package init(_ reason: String) { self.reason = reason }
}

/// An object of a manifest read through its declared members (`Key`). The lenient accessors give nil
/// for a member that is absent or of another kind (what a reader of older formats tolerates); the
/// strict ones throw a `ManifestError` naming the member, prefixed by `place` (`totals.`, `outputs[].`).
package struct ManifestObject<Key: ManifestKey>: Sendable {
    package let object: JSONObject
    package let place: String

    package init(_ object: JSONObject, place: String = "") {
        self.object = object
        self.place = place
    }

    /// A whole manifest: nil unless the bytes are a JSON object.
    package init?(json bytes: [UInt8]) {
        guard case .object(let root)? = try? StrictJSONParser.parse(bytes) else { return nil }
        self.init(root)
    }

    /// A whole manifest, strictly: the bytes must be a JSON object.
    package static func parse(_ bytes: [UInt8]) throws(ManifestError) -> ManifestObject {
        let value: JSONValue
        do {
            value = try StrictJSONParser.parse(bytes)
        } catch {
            throw ManifestError("not valid JSON: \(error)")
        }
        guard case .object(let object) = value else { throw ManifestError("not a JSON object") }
        return ManifestObject(object)
    }

    package subscript(_ key: Key) -> JSONValue? { object[key.rawValue] }

    package func string(_ key: Key) -> String? {
        if case .string(let text)? = self[key] { text } else { nil }
    }

    package func int64(_ key: Key) -> Int64? {
        if case .number(let number)? = self[key] { number.int64Value } else { nil }
    }

    package func bool(_ key: Key) -> Bool? {
        if case .bool(let flag)? = self[key] { flag } else { nil }
    }

    /// The member's object, read through its own members.
    package func object<Member: ManifestKey>(_ key: Key, _: Member.Type, place: String = "") -> ManifestObject<Member>? {
        if case .object(let object)? = self[key] { ManifestObject<Member>(object, place: place) } else { nil }
    }

    /// The objects of the member's array (other elements skipped); nil when it is not an array.
    package func objects<Member: ManifestKey>(_ key: Key, _: Member.Type, place: String = "") -> [ManifestObject<Member>]? {
        guard case .array(let values)? = self[key] else { return nil }
        return values.compactMap { value in
            if case .object(let object) = value { ManifestObject<Member>(object, place: place) } else { nil }
        }
    }

    /// A non-negative integer.
    package func count(_ key: Key) throws(ManifestError) -> Int {
        guard let value = int64(key), value >= 0 else { throw ManifestError("\(place)\(key.rawValue) is missing or not a count") }
        return Int(value)
    }

    package func requiredString(_ key: Key) throws(ManifestError) -> String {
        guard let text = string(key) else { throw ManifestError("\(place)\(key.rawValue) is missing or not a string") }
        return text
    }

    package func requiredObject<Member: ManifestKey>(_ key: Key, _ member: Member.Type, place: String = "") throws(ManifestError)
        -> ManifestObject<Member>
    {
        guard let object = object(key, member, place: place) else {
            throw ManifestError("\(key.rawValue) is missing or not an object")
        }
        return object
    }

    /// Every element of the member's array, each an object.
    package func requiredObjects<Member: ManifestKey>(_ key: Key, _: Member.Type, place: String = "") throws(ManifestError)
        -> [ManifestObject<Member>]
    {
        guard case .array(let values)? = self[key] else { throw ManifestError("\(key.rawValue) is missing or not an array") }
        var objects: [ManifestObject<Member>] = []
        for value in values {
            guard case .object(let object) = value else {
                throw ManifestError("\(key.rawValue) holds something other than objects")
            }
            objects.append(ManifestObject<Member>(object, place: place))
        }
        return objects
    }
}

/// A published file as the manifests list it (`outputs`): its table, path in the store, rows, size
/// and SHA-256.
package struct ManifestOutput: Sendable, Equatable {
    package var table: String
    package var path: String
    package var rows: Int
    package var bytes: Int
    package var sha256: String

    package init(table: String, path: String, rows: Int, bytes: Int, sha256: String) {
        self.table = table
        self.path = path
        self.rows = rows
        self.bytes = bytes
        self.sha256 = sha256
    }

    /// `"outputs": [{"table", "path", "rows", "bytes", "sha256"}, …]`: a day's and a cohort's manifest.
    package static func write(_ outputs: [ManifestOutput], into json: inout JSONWriter) {
        json.key(DayManifestKey.outputs)
        json.beginArray()
        for output in outputs {
            json.beginObject()
            json.field(ManifestOutputKey.table, output.table)
            json.field(ManifestOutputKey.path, output.path)
            json.field(ManifestOutputKey.rows, output.rows)
            json.field(ManifestOutputKey.bytes, output.bytes)
            json.field(ManifestOutputKey.sha256, output.sha256)
            json.endObject()
        }
        json.endArray()
    }
}

/// Where the published files are, relative to the data directory (docs/aggregate.md, "Output").
package enum PublishedLayout {
    /// A day's manifest, written last.
    package static func dayManifest(_ day: UTCDay) -> String { "agg/_manifests/dt=\(day).json" }
    /// The directory of the cohort manifests.
    package static let cohortManifests = "agg/_cohort_manifests"
    /// An install date's cohort manifest.
    package static func cohortManifest(_ day: UTCDay) -> String { "\(cohortManifests)/dt=\(day).json" }
}
