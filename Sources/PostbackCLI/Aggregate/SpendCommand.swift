import Aggregation
import Basics
import Foundation
import PostbackClient

/// `postback spend import`: the networks' cost rows into the store (docs/spend.md). Reading, checking
/// and storing are the Aggregation module's (`SpendFile`, `SpendStore`); this is argument handling.
enum SpendCommand {
    static let usage = """
        usage: postback spend import --data DATA [--schemas DIR] [--source NAME] FILE... | -

        Imports what ad networks report they charged (CSV with a header: date, app_id,
        ad_network_id, one of campaign_id | source_identifier | campaign, spend, currency, and
        optionally impressions, clicks, reported_installs) into DATA/spend/dt=DAY/NAME.csv, where
        the nightly job ('postback aggregate') joins it to the postbacks by install date:
        spend, CPI and ROAS in campaign_cohort_daily.

        A source's day is replaced, never added to: networks restate spend, and importing the same
        file again writes the same bytes. Every row is checked first; a bad one stops the import
        with FILE:LINE:COLUMN and nothing is stored. Each import is recorded in DATA/spend/_imports/.

          --data DATA      the store (the receiver's data directory; created when missing), or
                           s3://BUCKET/PREFIX
          --schemas DIR    conversion schemas: campaign names are checked against the app's
                           source-identifier map, and ids the map names are stored with the name
          --source NAME    where the rows come from (default: the file's name without extension;
                           '-' needs it): letters, digits, '.', '_', '-'
          FILE             a spend CSV; '-' reads standard input

        Example: Samples/spend/example-spend.csv. The format: docs/spend.md.

        Exit status: 0 imported; 2 usage, a bad row or an I/O error (nothing imported).
        """

    static let syntax = CommandSyntax("spend", usage: usage)
    static let importSyntax = CommandSyntax("spend import", usage: usage, options: ["--data", "--schemas", "--source"])

    static func run(_ words: [String], io: CommandIO) -> ExitStatus {
        syntax.dispatch(words, io: io, to: [("import", importSpend)])
    }

    private static func importSpend(_ words: [String], io: CommandIO) -> ExitStatus {
        let data: String
        let source: String
        var files: [SpendStore.InputFile] = []
        var catalog: SchemaCatalog? = nil
        var created = false
        do {
            let arguments = try importSyntax.parse(words)
            guard let directory = arguments.value("--data") else { throw CommandError.usage("--data DATA is required") }
            guard !arguments.positionals.isEmpty else {
                throw CommandError.usage("no FILE given (a spend CSV, or '-' for standard input)")
            }
            if !S3Location.isObjectStoreURL(directory), UserPaths.kind(of: directory) != .missing {
                try UserPaths.requireDirectory(directory, option: "--data", holding: "the store (raw/ from 'postback serve')")
            }
            created = !S3Location.isObjectStoreURL(directory) && UserPaths.kind(of: directory) == .missing
            data = directory
            for path in arguments.positionals {
                if path == "-" {
                    files.append(
                        SpendStore.InputFile(name: "<stdin>", bytes: Array(FileHandle.standardInput.readDataToEndOfFile())))
                    continue
                }
                try UserPaths.requireInputFile(path)
                // A read error says "PATH: what failed" itself.
                files.append(SpendStore.InputFile(name: path, bytes: try FileBytes.read(path: path, limit: 1 << 30)))
            }
            if let name = arguments.value("--source") {
                source = name
            } else {
                guard arguments.positionals.count == 1, arguments.positionals[0] != "-" else {
                    throw CommandError.usage("give --source NAME: it names where the rows come from when they are not one file")
                }
                let file = arguments.positionals[0].split(separator: "/").last.map(String.init) ?? arguments.positionals[0]
                source = file.split(separator: ".", maxSplits: 1).first.map(String.init) ?? file
            }
            if let schemas = arguments.value("--schemas") {
                try UserPaths.requireDirectory(schemas, option: "--schemas", holding: "<app-id>/*.json schema files")
                do {
                    catalog = try SchemaCatalog.load(directory: schemas)
                } catch {
                    io.printError("postback spend import: invalid schemas\n\(error)")
                    return .usageOrIOError
                }
            }
        } catch {
            return importSyntax.finish(error, io: io)
        }
        do {
            let result: SpendStore.ImportResult
            if S3Location.isObjectStoreURL(data) {
                result = try ObjectStoreJobs.importSpend(url: data) { root in
                    try SpendStore(dataDirectory: root).importFiles(files, source: source, catalog: catalog, now: .now())
                }
            } else {
                result = try SpendStore(dataDirectory: data).importFiles(files, source: source, catalog: catalog, now: .now())
            }
            let days = result.days.count == 1 ? "1 day" : "\(result.days.count) days"
            let range = result.days.first.map { first in " (\(first)..\(result.days.last!))" } ?? ""
            io.print(
                "spend import: \(result.rows) row\(result.rows == 1 ? "" : "s") from \(source) for \(days)\(range); "
                    + "\(result.changedDays.count) day\(result.changedDays.count == 1 ? "" : "s") changed; "
                    + "run 'postback aggregate' to rebuild the cohorts" + (created ? " (\(data) was created: a new store)" : ""))
            return .success
        } catch {
            io.printError("postback spend import: \(error)")
            return .usageOrIOError
        }
    }
}
