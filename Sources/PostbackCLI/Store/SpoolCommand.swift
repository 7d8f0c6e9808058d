import Basics
import PostbackStore

/// `postback spool set-aside`: the way forward for a sealed segment damaged at rest when no good copy
/// exists (docs/aggregate.md, "Damaged segments").
enum SpoolCommand {
    static let usage = """
        usage: postback spool set-aside --data DIR SEGMENT...

        Moves a spool segment damaged at rest (its bytes match none of the seals its receiver
        recorded: 'postback aggregate' stops its day and names it) out of the spool into
        DIR/raw/_damaged/<spool>/dt=DAY/, kept, never deleted. Use it when no good copy exists to
        restore (the object store's copy under the same path, a backup); then rerun
        'postback aggregate' for that day, which is published without the segment's postbacks
        (add --force if the day was published before: it now has fewer postbacks).
        A segment that matches its seal, or has none, is refused.

          --data DIR    the store (the receiver's data directory)
          SEGMENT       the segment's path, as 'postback aggregate' names it (or raw/… relative to DIR)

        Exit status: 0 every segment set aside; 2 usage or I/O error, or a segment that is not damaged (nothing of it moved).
        """

    static let setAsideSyntax = CommandSyntax("spool set-aside", usage: usage, options: ["--data"])
    static let syntax = CommandSyntax("spool", usage: usage)

    static func run(_ words: [String], io: CommandIO) -> ExitStatus {
        syntax.dispatch(words, io: io, to: [("set-aside", setAside)])
    }

    private static func setAside(_ words: [String], io: CommandIO) -> ExitStatus {
        let data: String
        let segments: [String]
        do {
            let arguments = try setAsideSyntax.parse(words)
            guard let directory = arguments.value("--data") else {
                throw CommandError.usage("--data DIR is required (the store)")
            }
            try UserPaths.requireDirectory(directory, option: "--data", holding: "the receiver's store (raw/postbacks)")
            guard !arguments.positionals.isEmpty else { throw CommandError.usage("give the damaged segment's path") }
            data = directory
            segments = arguments.positionals
        } catch {
            return setAsideSyntax.finish(error, io: io)
        }
        let layout = StoreLayout(root: data)
        var days: Set<UTCDay> = []
        for segment in segments {
            do {
                let moved = try DamagedSegments.setAside(segment, layout: layout)
                io.print("set aside: \(moved.from) (\(moved.size) bytes) -> \(moved.to)")
                days.insert(moved.day)
            } catch {
                io.printError("postback spool set-aside: \(error)")
                return .usageOrIOError
            }
        }
        for day in days.sorted() {
            io.print(
                "next: postback aggregate --data \(data) --date \(day) (add --force if \(day) was published before: "
                    + "it now has fewer postbacks)")
        }
        return .success
    }
}
