import Aggregation
import Basics
import Foundation
import Postbacks

#if canImport(Glibc)
    import Glibc
#endif

/// `postback schema`: check conversion schemas, and export them as flat decode tables (issue 6).
enum SchemaCommand {
    static let usage = """
        usage: postback schema check PATH...
               postback schema export --schemas DIR [--table values|events|sources] [--out FILE|-]
               postback schema init --app APP_ID [--from DATA] [--out FILE|-]

          check    validate schema files, or schema directories (DIR/<app-id>/*.json, checked
                   together for overlapping periods); prints one line per schema
          export   the decoding rules of every schema in DIR as a CSV table, for joins in other
                   engines (Spark, DuckDB): 'values' (default) has one row per schema, protocol,
                   conversion type, window and value; 'events' the events each value implies;
                   'sources' what each source identifier and campaign id decodes to
          init     a starter schema for APP_ID that 'aggregate' accepts as it is, for a person
                   to fill in: every fine value (0-63) and coarse level listed with a placeholder
                   label and revenue of at least 0 (no upper bound); with --from DATA, the ad
                   networks, source identifiers and campaign ids of the app in DATA's published
                   campaign_daily as placeholder campaigns. Put it at
                   SCHEMAS/APP_ID/2018-01-01.json and pass --schemas SCHEMAS to aggregate
          --out FILE         where export and init write ('-' or none: standard output; init
                             refuses to replace an existing file)

        Exit status: 0 valid (check), written (export, init); 1 some schema is invalid (problems on
        stderr); 2 usage or I/O error (a PATH that does not exist or cannot be read, an init --out
        that exists).
        """

    static let syntax = CommandSyntax("schema", usage: usage)
    static let checkSyntax = CommandSyntax("schema check", usage: usage)
    static let exportSyntax = CommandSyntax("schema export", usage: usage, options: ["--schemas", "--table", "--out"])
    static let initSyntax = CommandSyntax("schema init", usage: usage, options: ["--app", "--from", "--out"])

    static func run(_ words: [String], io: CommandIO) -> ExitStatus {
        syntax.dispatch(words, io: io, to: [("check", check), ("export", export), ("init", starter)])
    }

    private static func check(_ words: [String], io: CommandIO) -> ExitStatus {
        let arguments: Arguments
        do {
            arguments = try checkSyntax.parse(words)
            guard !arguments.positionals.isEmpty else { throw CommandError.usage("no PATH given") }
        } catch {
            return checkSyntax.finish(error, io: io)
        }
        var failed = false
        var unreadable = false
        for path in arguments.positionals {
            var status = stat()
            guard stat(path, &status) == 0 else {
                io.printError("postback schema check: \(SystemCallError(operation: "stat", path: path, errorNumber: errno))")
                unreadable = true
                continue
            }
            let isDirectory = (status.st_mode & S_IFMT) == S_IFDIR
            do {
                let schemas =
                    isDirectory ? try SchemaCatalog.load(directory: path).schemas : [try ConversionSchema(contentsOf: path)]
                for schema in schemas { io.print(describe(schema)) }
                if schemas.isEmpty { io.print("\(path): no schemas") }
            } catch {
                failed = true
                io.printError("\(error)")
            }
        }
        if unreadable { return .usageOrIOError }
        return failed ? .failure : .success
    }

    static func describe(_ schema: ConversionSchema) -> String {
        let fine = schema.windows[0].fine?.compactMap { $0 }.count ?? 0
        let coarseWindows = schema.windows.indices.filter { schema.windows[$0].coarse.contains { $0 != nil } }
        return
            "\(schema.file): ok: \(schema.schemaID), app \(schema.appID), \(schema.effectiveFrom) to \(schema.effectiveTo?.description ?? "open"), "
            + "\(schema.currency), \(fine) of 64 fine values, coarse in window\(coarseWindows.count == 1 ? "" : "s") "
            + "\(coarseWindows.isEmpty ? "none" : coarseWindows.map(String.init).joined(separator: ",")), "
            + "\(schema.sourceIdentifierMaps.count) source map\(schema.sourceIdentifierMaps.count == 1 ? "" : "s")"
    }

    /// `schema init`: the starter schema of one app.
    private static func starter(_ words: [String], io: CommandIO) -> ExitStatus {
        let appID: Int64
        let store: String?
        let out: String?
        do {
            let arguments = try initSyntax.parse(words)
            try arguments.requireNoPositionals()
            guard let app = arguments.value("--app") else { throw CommandError.usage("--app APP_ID is required") }
            guard let id = Int64(app), id > 0, String(id) == app else {
                throw CommandError.usage("--app must be an app id (digits, as in the postbacks' app-id), got '\(app)'")
            }
            appID = id
            store = arguments.value("--from")
            out = arguments.value("--out").flatMap { $0 == "-" ? nil : $0 }
            if let store {
                try UserPaths.requireDirectory(store, option: "--from", holding: "agg/ from 'postback aggregate'")
            }
            if let out {
                guard UserPaths.kind(of: out) == .missing else {
                    throw CommandError.usage("--out \(out) exists: init never replaces a file; choose another path or remove it")
                }
            }
        } catch {
            return initSyntax.finish(error, io: io)
        }
        let networks: [String: StarterSchema.Network]
        do {
            networks =
                try store.map { (store) in try StarterSchema.networksSeen(store: store, appID: appID) }
                ?? [:]
        } catch {
            io.printError("postback schema init: \(error)")
            return .usageOrIOError
        }
        let bytes = Array(StarterSchema.text(appID: appID, networks: networks).utf8)
        guard let out else {
            io.standardOutput.write(bytes)
            return .success
        }
        do {
            // SCHEMAS/APP_ID/ is made as needed: the layout aggregate reads.
            if let slash = out.lastIndex(of: "/"), slash != out.startIndex {
                try FileManager.default.createDirectory(atPath: String(out[..<slash]), withIntermediateDirectories: true)
            }
            try DurableFile.write(bytes, to: out)
        } catch {
            io.printError("postback schema init: \(out): \(error)")
            return .usageOrIOError
        }
        let identifiers = networks.values.reduce(0) { $0 + $1.sourceIdentifiers.count + $1.campaignIDs.count }
        io.printError(
            "postback schema init: wrote \(out): app \(appID), 64 fine values and 3 coarse levels in each of 3 windows, "
                + "\(networks.count) ad network\(networks.count == 1 ? "" : "s") with \(identifiers) source identifiers and campaign ids; "
                + "fill in the labels, events and revenue, then 'postback schema check' it")
        return .success
    }

    private static func export(_ words: [String], io: CommandIO) -> ExitStatus {
        let catalog: SchemaCatalog
        let table: DecodeTable.Table
        let out: String?
        do {
            let arguments = try exportSyntax.parse(words)
            try arguments.requireNoPositionals()
            guard let directory = arguments.value("--schemas") else { throw CommandError.usage("--schemas DIR is required") }
            let name = arguments.value("--table") ?? "values"
            guard let chosen = DecodeTable.Table(rawValue: name) else {
                throw CommandError.usage("--table must be values, events or sources, got '\(name)'")
            }
            table = chosen
            out = arguments.value("--out")
            try UserPaths.requireDirectory(directory, option: "--schemas", holding: "<app-id>/*.json schema files")
            if let out { try UserPaths.requireOutputFile(out, option: "--out") }
            do {
                // No schema yet exports the empty decode table (headers only): the Spark job's "no schemas".
                catalog = try SchemaCatalog.load(directory: directory, allowingEmpty: true)
            } catch {
                io.printError("postback schema export: invalid schemas\n\(error)")
                return .failure
            }
        } catch {
            return exportSyntax.finish(error, io: io)
        }
        let bytes = DecodeTable.csv(catalog, table: table)
        if let out, out != "-" {
            do {
                try DurableFile.write(bytes, to: out)
            } catch {
                io.printError("postback schema export: \(error)")
                return .usageOrIOError
            }
        } else {
            io.standardOutput.write(bytes)
        }
        return .success
    }
}
