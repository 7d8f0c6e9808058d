import Basics
import Postbacks

/// What one command (or subcommand) accepts, and the conventions every command line shares
/// (clig.dev): `-h`/`--help` anywhere prints the usage on stdout and exits 0; an unknown option or
/// subcommand is named with the closest known one ("did you mean"); a wrong command line prints the
/// problem and where to get help, and exits 2. New commands get all of this by declaring a syntax.
struct CommandSyntax: Sendable {
    /// As typed after `postback`, e.g. `schema check`.
    let name: String
    let usage: String
    /// Options without a value, e.g. `--json`.
    let flags: Set<String>
    /// Options that take a value; each may be given more than once.
    let options: Set<String>

    init(_ name: String, usage: String, flags: Set<String> = [], options: Set<String> = []) {
        self.name = name
        self.usage = usage
        self.flags = flags
        self.options = options
    }

    /// Parses `words`; throws `CommandError.helpRequested` when help was asked for.
    func parse(_ words: [String]) throws -> Arguments {
        for word in words {
            if word == "--" { break }
            if word == "-h" || word == "--help" { throw CommandError.helpRequested }
        }
        return try Arguments(words, flags: flags, options: options)
    }

    /// Ends the command after `error` from parsing or checking its arguments: the usage on stdout
    /// (exit 0) for a help request, otherwise the problem and a pointer to `--help` on stderr (exit 2).
    func finish(_ error: any Error, io: CommandIO) -> ExitStatus {
        if let commandError = error as? CommandError, commandError.code == .helpRequested {
            io.print(usage)
            return .success
        }
        io.printError("postback \(name): \(error)\nRun 'postback \(name) --help' for usage.")
        return .usageOrIOError
    }

    /// Dispatches to a subcommand by name, with help and "did you mean" for the parent command.
    func dispatch(_ words: [String], io: CommandIO, to subcommands: [(name: String, run: ([String], CommandIO) -> ExitStatus)])
        -> ExitStatus
    {
        guard let word = words.first else {
            io.printError(usage)
            return .usageOrIOError
        }
        if let subcommand = subcommands.first(where: { $0.name == word }) {
            return subcommand.run(Array(words.dropFirst()), io)
        }
        // Help for this command: `help`, or `-h`/`--help` before any subcommand word; an unknown word
        // followed by `--help` (`postback foo --help`) is an unknown command, named below.
        if word == "help"
            || (word.hasPrefix("-") && words.prefix(while: { $0 != "--" }).contains { $0 == "-h" || $0 == "--help" })
        {
            io.print(usage)
            return .success
        }
        let known = subcommands.map(\.name)
        let hint = Suggestion.closest(to: word, in: known).map { " (did you mean '\($0)'?)" } ?? ""
        let command = name.isEmpty ? "postback" : "postback \(name)"
        io.printError(
            "\(command): unknown \(name.isEmpty ? "command" : "subcommand") '\(word)'\(hint); "
                + "known: \(known.joined(separator: ", "))\nRun '\(command) --help' for usage.")
        return .usageOrIOError
    }
}

/// The parsed words of one subcommand. No outside argument parser can be fetched here, so this is the
/// small hand-written one: `--flag`, `--option value`, `--option=value`, `--` to end options, and `-`
/// as an ordinary positional (stdin or stdout).
struct Arguments {
    private(set) var flags: Set<String> = []
    private(set) var options: [String: [String]] = [:]
    private(set) var positionals: [String] = []

    /// - Parameters:
    ///   - flags: options without a value, e.g. `--json`.
    ///   - options: options that take a value; each may be given more than once.
    init(_ words: [String], flags allowedFlags: Set<String>, options allowedOptions: Set<String>) throws {
        var words = words[...]
        while let word = words.popFirst() {
            if word == "--" {
                positionals.append(contentsOf: words)
                break
            }
            guard word.hasPrefix("-"), word != "-" else {
                positionals.append(word)
                continue
            }
            var name = word
            var inlineValue: String? = nil
            if let equals = word.firstIndex(of: "=") {
                name = String(word[..<equals])
                inlineValue = String(word[word.index(after: equals)...])
            }
            if allowedFlags.contains(name) {
                guard inlineValue == nil else { throw CommandError.usage("\(name) does not take a value") }
                flags.insert(name)
            } else if allowedOptions.contains(name) {
                guard let value = inlineValue ?? words.popFirst() else { throw CommandError.usage("\(name) needs a value") }
                options[name, default: []].append(value)
            } else {
                let known = (allowedFlags.union(allowedOptions)).sorted()
                let hint = Suggestion.closest(to: name, in: known).map { " (did you mean \($0)?)" } ?? ""
                throw CommandError.usage("unknown option \(name)\(hint)")
            }
        }
    }

    func has(_ flag: String) -> Bool { flags.contains(flag) }

    /// The last value given for `option`.
    func value(_ option: String) -> String? { options[option]?.last }

    func values(_ option: String) -> [String] { options[option] ?? [] }

    func integer(_ option: String, default fallback: Int, in range: ClosedRange<Int>) throws -> Int {
        guard let text = value(option) else { return fallback }
        guard let number = Int(text), range.contains(number) else {
            throw CommandError.usage(
                "\(option) must be a whole number from \(range.lowerBound) to \(range.upperBound), got '\(text)'")
        }
        return number
    }

    /// Positional arguments are not expected.
    func requireNoPositionals() throws {
        guard let first = positionals.first else { return }
        throw CommandError.usage("unexpected argument '\(first)'" + (first.hasPrefix("-") ? " (options start with --)" : ""))
    }
}
