/// "Did you mean" hints: one function for schema keys, config keys, command names and flags, so a
/// typo gets the same help everywhere.
package enum Suggestion {
    /// The allowed word the user most likely meant: the same word in another case, or the closest
    /// one within two edits (ties: the first in `allowed`). Nil when nothing is close.
    package static func closest(to word: String, in allowed: some Sequence<String>) -> String? {
        var best: (word: String, distance: Int)? = nil
        for candidate in allowed {
            if candidate.lowercased() == word.lowercased() { return candidate }
            let distance = editDistance(candidate, word)
            if distance <= 2, distance < (best?.distance ?? Int.max) { best = (candidate, distance) }
        }
        return best?.word
    }

    /// Levenshtein distance over bytes (the words compared are ASCII keys and flags).
    package static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a.utf8)
        let b = Array(b.utf8)
        if a.isEmpty || b.isEmpty { return max(a.count, b.count) }
        var previous = Array(0...b.count)
        for (i, x) in a.enumerated() {
            var current = [i + 1] + Array(repeating: 0, count: b.count)
            for (j, y) in b.enumerated() {
                current[j + 1] = Swift.min(previous[j + 1] + 1, current[j] + 1, previous[j] + (x == y ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }
}
