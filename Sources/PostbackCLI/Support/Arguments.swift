/// A command line that is wrong: printed with the command's usage, exit code 2.
public struct UsageError: Error, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// The parsed words of one subcommand. No outside argument parser can be fetched here, so this is the
/// small hand-written one: `--flag`, `--option value`, `--option=value`, `--` to end options, and `-`
/// as an ordinary positional (stdin).
struct Arguments {
    private(set) var flags: Set<String> = []
    private(set) var options: [String: [String]] = [:]
    private(set) var positionals: [String] = []

    /// - Parameters:
    ///   - flags: options without a value, e.g. `--json`.
    ///   - options: options that take a value; each may be given more than once.
    init(_ words: [String], flags allowedFlags: Set<String>, options allowedOptions: Set<String>) throws(UsageError) {
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
                guard inlineValue == nil else { throw UsageError("\(name) does not take a value") }
                flags.insert(name)
            } else if allowedOptions.contains(name) {
                guard let value = inlineValue ?? words.popFirst() else { throw UsageError("\(name) needs a value") }
                options[name, default: []].append(value)
            } else {
                throw UsageError("unknown option \(name)")
            }
        }
    }

    func has(_ flag: String) -> Bool { flags.contains(flag) }

    /// The last value given for `option`.
    func value(_ option: String) -> String? { options[option]?.last }

    func values(_ option: String) -> [String] { options[option] ?? [] }

    func integer(_ option: String, default fallback: Int, in range: ClosedRange<Int>) throws(UsageError) -> Int {
        guard let text = value(option) else { return fallback }
        guard let number = Int(text), range.contains(number) else {
            throw UsageError("\(option) must be a whole number from \(range.lowerBound) to \(range.upperBound), got '\(text)'")
        }
        return number
    }
}
