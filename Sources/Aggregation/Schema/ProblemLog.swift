/// Collects problems while a schema is read, so one run reports all of them, not just the first.
final class ProblemLog {
    private(set) var problems: [String] = []

    func add(_ path: String, _ message: String) {
        problems.append(path.isEmpty ? message : "\(path): \(message)")
    }

    var isEmpty: Bool { problems.isEmpty }
}
