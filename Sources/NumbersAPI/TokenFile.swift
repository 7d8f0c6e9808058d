import Basics
import Reporting

#if canImport(Glibc)
    import Glibc
#endif

/// The tokens file: one JSON object per line, one line per token (`APIToken`), written whole and
/// atomically with mode 0600. It is refused when its group or others may read it (`SigningFileMode`).
///
///     {"name":"agency-x","id":"…","salt":"…","sha256":"…","apps":"1229670720","networks":"a.skadnetwork",
///      "expires":"2027-03-31","created":"2026-12-06","revoked":null}
package enum TokenFile {
    package struct Failure: Error, CustomStringConvertible, Equatable {
        package let description: String
        init(_ description: String) { self.description = description }
    }

    /// The tokens of `path`; a missing file holds none when `missingIsEmpty` (the first `token create`).
    package static func read(_ path: String, missingIsEmpty: Bool = false) throws(Failure) -> [APIToken] {
        var status = stat()
        if stat(path, &status) != 0, errno == ENOENT, missingIsEmpty { return [] }
        if let refusal = SigningFileMode.refusal(path, rule: .ownerOnlyCredentials, what: "the tokens file \(path)") {
            throw Failure(refusal)
        }
        let bytes: [UInt8]
        do {
            bytes = try FileBytes.read(path: path, limit: 64 << 20)
        } catch {
            throw Failure("the tokens file \(path): \(error.message)")
        }
        var tokens: [APIToken] = []
        for (index, line) in bytes.split(separator: 0x0A, omittingEmptySubsequences: true).enumerated() {
            do {
                tokens.append(try parse(Array(line)))
            } catch {
                throw Failure("the tokens file \(path), line \(index + 1): \(error.description)")
            }
        }
        var names = Set<String>()
        for token in tokens where !names.insert(token.name).inserted {
            throw Failure("the tokens file \(path) names \(token.name) twice")
        }
        return tokens
    }

    /// Replaces the file with `tokens`, atomically, mode 0600.
    package static func write(_ tokens: [APIToken], to path: String) throws(Failure) {
        var bytes: [UInt8] = []
        for token in tokens { bytes += line(token) }
        do {
            try DurableFile.write(bytes, to: path, mode: 0o600)
        } catch {
            throw Failure("cannot write the tokens file \(path): \(error)")
        }
    }

    static func line(_ token: APIToken) -> [UInt8] {
        var json = JSONWriter(reservingCapacity: 320)
        json.beginObject()
        json.field("name", token.name)
        json.field("id", token.id)
        json.field("salt", token.salt)
        json.field("sha256", token.sha256)
        json.field("apps", token.scope.apps.text)
        json.field("networks", token.scope.networks.text)
        json.field("expires", token.expires?.description)
        json.field("created", token.created.description)
        json.field("revoked", token.revoked?.description)
        json.endObject()
        return json.bytes + [0x0A]
    }

    private static func parse(_ line: [UInt8]) throws(Failure) -> APIToken {
        guard case .object(let object)? = try? StrictJSONParser.parse(line) else { throw Failure("not a JSON object") }
        func text(_ key: String) throws(Failure) -> String {
            guard case .string(let value)? = object[key] else { throw Failure("\(key) is missing or not a string") }
            return value
        }
        func day(_ key: String) throws(Failure) -> UTCDay? {
            switch object[key] {
            case .null?, nil: return nil
            case .string(let value)?:
                guard let day = UTCDay(value) else { throw Failure("\(key) is not a day YYYY-MM-DD") }
                return day
            default: throw Failure("\(key) is not a day YYYY-MM-DD")
            }
        }
        guard let apps = DataScope.Members(text: try text("apps")), let networks = DataScope.Members(text: try text("networks"))
        else { throw Failure("apps and networks must be 'all' or a comma-separated list") }
        let name = try text("name")
        guard APIToken.isValidName(name) else { throw Failure("the name '\(name)' is not a valid token name") }
        guard let created = try day("created") else { throw Failure("created is missing") }
        return APIToken(
            name: name, id: try text("id"), salt: try text("salt"), sha256: try text("sha256"),
            scope: DataScope(apps: apps, networks: networks), expires: try day("expires"), created: created,
            revoked: try day("revoked"))
    }
}
