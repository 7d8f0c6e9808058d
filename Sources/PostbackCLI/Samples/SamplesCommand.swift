import Basics

#if canImport(Glibc)
    import Glibc
#endif

/// `postback samples`: the repository's `Samples/` (Apple's example postbacks, the example schemas
/// and spend export), carried in the binary, so that README's first session runs wherever `postback`
/// is installed and in any directory.
enum SamplesCommand {
    static let usage = """
        usage: postback samples [--copy DIR]

        Apple's published example postbacks, the example conversion schemas and an example spend
        export (the repository's Samples/), carried in the binary so that they are there wherever
        postback is installed. Without --copy, lists the files.

          --copy DIR   write them under DIR (created if missing): DIR/skan-3.0_apple-doc_winning.json,
                       DIR/schemas/…, DIR/spend/example-spend.csv. A file already there with the
                       same content is left alone; one with other content is refused (nothing is
                       overwritten).

        Example: postback samples --copy Samples && postback verify Samples/*.json

        Exit status: 0 listed or copied; 2 usage or I/O error (DIR not writable, a file in the way).
        """

    static let syntax = CommandSyntax("samples", usage: usage, options: ["--copy"])

    static func run(_ words: [String], io: CommandIO) -> ExitStatus {
        let arguments: Arguments
        do {
            arguments = try syntax.parse(words)
            try arguments.requireNoPositionals()
        } catch {
            return syntax.finish(error, io: io)
        }
        guard let directory = arguments.value("--copy") else {
            for file in SampleFiles.all { io.print(file.path) }
            return .success
        }
        do {
            let written = try copy(to: directory)
            io.print(
                "postback samples: \(written) of \(SampleFiles.all.count) files written under \(directory)"
                    + (written < SampleFiles.all.count ? " (the others were there already)" : ""))
            return .success
        } catch {
            io.printError("postback samples: \(error)")
            return .usageOrIOError
        }
    }

    /// Writes every sample under `directory`; returns how many were written (files already there
    /// with the same bytes are skipped). Checks every file before writing any.
    static func copy(to directory: String) throws -> Int {
        var missing: [(path: String, bytes: [UInt8])] = []
        for file in SampleFiles.all {
            let path = directory + "/" + file.path
            let bytes = Array(file.text.utf8)
            if access(path, F_OK) == 0 {
                guard (try? FileBytes.read(path: path)) == bytes else { throw CommandError.inTheWay(path) }
                continue
            }
            missing.append((path, bytes))
        }
        for (path, bytes) in missing {
            try DurableFile.makeDirectories(String(path[..<path.lastIndex(of: "/")!]))
            try DurableFile.write(bytes, to: path)
        }
        return missing.count
    }
}
