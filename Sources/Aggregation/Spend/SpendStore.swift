package import Basics
import Foundation
import PostbackCrypto

#if canImport(Glibc)
    import Glibc
#endif

/// Where spend lives in a store and how an import replaces it (docs/spend.md, "Importing"):
/// `DATA/spend/dt=DAY/SOURCE.csv`, one canonical file per day and source; `DATA/spend/_imports/`,
/// one record per import. An import is all or nothing: its day files are staged in
/// `DATA/spend/_staging/ID/`, synced, a `COMMIT` marker written, then moved into place; a staging
/// directory with a marker is finished by the next import or nightly run, one without is removed.
package struct SpendStore: Sendable {
    package let root: String

    package init(dataDirectory: String) { root = dataDirectory + "/spend" }

    package func dayFile(_ day: UTCDay, source: String) -> String { "\(root)/dt=\(day)/\(source).csv" }
    var stagingRoot: String { root + "/_staging" }
    var importsDirectory: String { root + "/_imports" }

    /// A source name as a file name allows: letters, digits, `.`, `_`, `-`, not starting with `.` or `_`.
    package static func isValidSource(_ name: String) -> Bool {
        guard let first = name.utf8.first, first != UInt8(ascii: "."), first != UInt8(ascii: "_"), name.utf8.count <= 100
        else { return false }
        return name.utf8.allSatisfy {
            ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x2E || $0 == 0x5F
                || $0 == 0x2D
        }
    }

    /// What an import did.
    package struct ImportResult: Sendable {
        package var rows: Int
        package var days: [UTCDay]
        package var changedDays: [UTCDay]
        package var recordPath: String
    }

    /// One file to import: its name (for errors and the record) and bytes.
    package struct InputFile: Sendable {
        package var name: String
        package var bytes: [UInt8]
        package init(name: String, bytes: [UInt8]) {
            self.name = name
            self.bytes = bytes
        }
    }

    /// Checks every row of every file, then replaces the source's days the files cover.
    package func importFiles(
        _ files: [InputFile], source: String, catalog: SchemaCatalog?, now: UTCTimestamp
    ) throws -> ImportResult {
        guard Self.isValidSource(source) else {
            throw AggregationError.spend(
                "--source '\(source)' is not a source name: letters, digits, '.', '_' and '-' (e.g. network-a), not starting with '.' or '_'"
            )
        }
        var rows: [SpendRow] = []
        for file in files { rows += try SpendFile.rows(file.bytes, name: file.name, catalog: catalog) }
        let byDay = Dictionary(grouping: SpendRow.merged(rows), by: \.date)
        let days = byDay.keys.sorted()

        let lock = try lockStore()
        defer { lock.release() }
        try finishStagedImports()

        let id = "\(now.microsecondsSinceEpoch)-\(getpid())"
        let staging = "\(stagingRoot)/\(id)"
        var changed: [UTCDay] = []
        try system { () throws(SystemCallError) in
            try DurableFile.makeDirectories(staging)
            for day in days {
                let bytes = SpendRow.storedCSV(byDay[day]!)
                if (try? FileBytes.read(path: dayFile(day, source: source), limit: 1 << 30)) != bytes { changed.append(day) }
                try DurableFile.makeDirectories("\(staging)/dt=\(day)")
                try DurableFile.write(bytes, to: "\(staging)/dt=\(day)/\(source).csv")
            }
            try DurableFile.write(Array("commit\n".utf8), to: "\(staging)/COMMIT")
        }
        try finish(staging: staging)
        rmdir(stagingRoot)  // only when empty

        var json = JSONWriter()
        json.beginObject()
        json.field("imported_at", now.description)
        json.field("source", source)
        json.key("files")
        json.beginArray()
        for file in files {
            json.beginObject()
            json.field("file", file.name)
            json.field("bytes", file.bytes.count)
            json.field("sha256", SHA256.hash(file.bytes).description)
            json.endObject()
        }
        json.endArray()
        json.field("rows", rows.count)
        json.key("days")
        json.beginArray()
        for day in days { json.value(day.description) }
        json.endArray()
        json.key("changed_days")
        json.beginArray()
        for day in changed { json.value(day.description) }
        json.endArray()
        json.endObject()
        json.endLine()
        let record = "\(importsDirectory)/\(id)-\(source).json"
        try system { () throws(SystemCallError) in
            try DurableFile.makeDirectories(importsDirectory)
            try DurableFile.write(json.bytes, to: record)
        }
        return ImportResult(rows: rows.count, days: days, changedDays: changed, recordPath: record)
    }

    /// Finishes imports a crash interrupted after their commit marker and removes the others. Runs under
    /// the spend lock; when another import holds it, does nothing (that import finishes its own).
    package func recover() throws {
        guard FileManager.default.fileExists(atPath: stagingRoot) else { return }
        guard let lock = try? FileLock(path: root + "/.lock") else { return }
        defer { lock.release() }
        try finishStagedImports()
    }

    private func lockStore() throws -> FileLock {
        try system { () throws(SystemCallError) in try DurableFile.makeDirectories(root) }
        guard let lock = try system({ () throws(SystemCallError) in try FileLock(path: root + "/.lock") }) else {
            throw AggregationError.spend("\(root)/.lock is held: another 'postback spend import' is running on this store")
        }
        return lock
    }

    private func finishStagedImports() throws {
        let staged = ((try? FileManager.default.contentsOfDirectory(atPath: stagingRoot)) ?? []).sorted()
        for id in staged {
            let staging = "\(stagingRoot)/\(id)"
            if FileManager.default.fileExists(atPath: staging + "/COMMIT") {
                try finish(staging: staging)
            } else {
                try? FileManager.default.removeItem(atPath: staging)
            }
        }
        rmdir(stagingRoot)  // only when empty
    }

    /// Moves a committed staging directory's day files into place (each a rename, then its directory
    /// synced), then removes the directory: safe to run again after a crash at any point.
    private func finish(staging: String) throws {
        let entries = ((try? FileManager.default.contentsOfDirectory(atPath: staging)) ?? []).filter { $0.hasPrefix("dt=") }
        try system { () throws(SystemCallError) in
            for partition in entries.sorted() {
                for name in ((try? FileManager.default.contentsOfDirectory(atPath: "\(staging)/\(partition)")) ?? []).sorted()
                where name.hasSuffix(".csv") && !name.hasPrefix(".") {
                    let target = "\(root)/\(partition)/\(name)"
                    try DurableFile.makeDirectories("\(root)/\(partition)")
                    guard rename("\(staging)/\(partition)/\(name)", target) == 0 else {
                        throw SystemCallError(operation: "rename", path: target, errorNumber: errno)
                    }
                    try DurableFile.syncDirectory(containing: target)
                }
            }
        }
        try? FileManager.default.removeItem(atPath: staging)
    }

    /// The stored spend files of `day` (`dt=DAY/*.csv`), sorted by name.
    package func files(of day: UTCDay) -> [String] {
        let directory = "\(root)/dt=\(day)"
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.filter { $0.hasSuffix(".csv") && !$0.hasPrefix(".") }.sorted().map { "\(directory)/\($0)" }
    }

    /// The days with stored spend.
    package func days() -> [UTCDay] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []
        return names.compactMap { $0.hasPrefix("dt=") ? UTCDay(String($0.dropFirst(3))) : nil }.filter { !files(of: $0).isEmpty }
            .sorted()
    }

    private func system<R>(_ body: () throws(SystemCallError) -> R) throws -> R {
        do {
            return try body()
        } catch {
            throw AggregationError.spend(error.description)
        }
    }
}
