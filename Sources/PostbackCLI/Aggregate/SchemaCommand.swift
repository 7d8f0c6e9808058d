import Aggregation
import Basics
import Postbacks

#if canImport(Glibc)
    import Glibc
#endif

/// `postback schema`: check conversion schemas, and export them as flat decode tables (issue 6).
enum SchemaCommand {
    static let usage = """
        usage: postback schema check PATH...
               postback schema export --schemas DIR [--table values|events|sources] [--out FILE|-]

          check    validate schema files, or schema directories (DIR/<app-id>/*.json, checked
                   together for overlapping periods); prints one line per schema
          export   the decoding rules of every schema in DIR as a CSV table, for joins in other
                   engines (Spark, DuckDB): 'values' (default) has one row per schema, protocol,
                   conversion type, window and value; 'events' the events each value implies;
                   'sources' what each source identifier and campaign id decodes to
          --out FILE         where export writes the table ('-' or none: standard output)

        Exit status: 0 valid; 1 some schema is invalid (problems on stderr); 2 usage or I/O error
        (a PATH that does not exist or cannot be read).
        """

    static let syntax = CommandSyntax("schema", usage: usage)
    static let checkSyntax = CommandSyntax("schema check", usage: usage)
    static let exportSyntax = CommandSyntax("schema export", usage: usage, options: ["--schemas", "--table", "--out"])

    static func run(_ words: [String], io: CommandIO) -> ExitStatus {
        syntax.dispatch(words, io: io, to: [("check", check), ("export", export)])
    }

    private static func check(_ words: [String], io: CommandIO) -> ExitStatus {
        let arguments: Arguments
        do {
            arguments = try checkSyntax.parse(words)
            guard !arguments.positionals.isEmpty else { throw UsageError("no PATH given") }
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
                io.printError(error.description)
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

    private static func export(_ words: [String], io: CommandIO) -> ExitStatus {
        let catalog: SchemaCatalog
        let table: DecodeTable.Table
        let out: String?
        do {
            let arguments = try exportSyntax.parse(words)
            try arguments.requireNoPositionals()
            guard let directory = arguments.value("--schemas") else { throw UsageError("--schemas DIR is required") }
            let name = arguments.value("--table") ?? "values"
            guard let chosen = DecodeTable.Table(rawValue: name) else {
                throw UsageError("--table must be values, events or sources, got '\(name)'")
            }
            table = chosen
            out = arguments.value("--out")
            try UserPaths.requireDirectory(directory, option: "--schemas", holding: "<app-id>/*.json schema files")
            if let out { try UserPaths.requireOutputFile(out, option: "--out") }
            do {
                catalog = try SchemaCatalog.load(directory: directory)
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
