/// A schema file (or the schema directory) that cannot be used, with every problem found, each
/// prefixed by where it is (`windows.0.fine.entries[3].values: ...`).
package struct SchemaError: Error, CustomStringConvertible, Sendable {
    package let file: String
    package let problems: [String]

    package init(file: String, problems: [String]) {
        self.file = file
        self.problems = problems
    }

    package var description: String {
        problems.count == 1
            ? "\(file): \(problems[0])"
            : "\(file): \(problems.count) problems:\n" + problems.map { "  - \($0)" }.joined(separator: "\n")
    }
}

/// Collects problems while a schema is read, so one run reports all of them, not just the first.
final class ProblemLog {
    private(set) var problems: [String] = []

    func add(_ path: String, _ message: String) {
        problems.append(path.isEmpty ? message : "\(path): \(message)")
    }

    var isEmpty: Bool { problems.isEmpty }
}
