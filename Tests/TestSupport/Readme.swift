package import Foundation

/// README.md (and docs/*.md) as a reader follows them: the shell blocks marked `<!-- runnable -->`,
/// run as written in a fresh, empty directory that is not the clone (the samples come from
/// `postback samples --copy`), with the built `postback` first on PATH.
package enum Readme {
    package static var text: String {
        (try? String(contentsOf: Fixtures.root.appendingPathComponent("README.md"), encoding: .utf8)) ?? ""
    }

    /// The built `postback` next to the test runner.
    package static var binary: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("postback")
    }

    /// The ```sh blocks right after a `<!-- runnable -->` line, with the line each starts on.
    package static func runnableBlocks(in markdown: String) -> [(line: Int, script: String)] {
        let lines = markdown.components(separatedBy: "\n")
        var blocks: [(Int, String)] = []
        var index = 0
        while index < lines.count {
            if lines[index].trimmingCharacters(in: .whitespaces) == "<!-- runnable -->", index + 1 < lines.count,
                lines[index + 1] == "```sh"
            {
                var body: [String] = []
                var end = index + 2
                while end < lines.count, lines[end] != "```" {
                    body.append(lines[end])
                    end += 1
                }
                blocks.append((index + 3, body.joined(separator: "\n")))
                index = end
            }
            index += 1
        }
        return blocks
    }

    /// A block that did not exit 0.
    package struct Failure: Error, CustomStringConvertible {
        package let line: Int
        package let status: Int32
        package let script: String
        package let standardError: String

        package var description: String {
            "README.md block at line \(line) failed (exit \(status)):\n\(script)\n\(standardError)"
        }
    }

    /// Runs `blocks` in `directory` in order, as a reader would.
    /// - Throws: `Failure` for the first block that fails.
    package static func run(_ blocks: [(line: Int, script: String)], in directory: String) throws {
        var environment = ProcessInfo.processInfo.environment
        environment["PATH"] = binary.deletingLastPathComponent().path + ":" + (environment["PATH"] ?? "/usr/bin:/bin")
        for (line, script) in blocks {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/bash")
            process.arguments = ["-euo", "pipefail", "-c", script]
            process.currentDirectoryURL = URL(fileURLWithPath: directory)
            process.environment = environment
            let errors = Pipe()
            process.standardOutput = FileHandle.nullDevice
            process.standardError = errors
            try process.run()
            let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            guard process.terminationStatus == 0 else {
                throw Failure(line: line, status: process.terminationStatus, script: script, standardError: message)
            }
        }
    }

    /// README's first session (the runnable block that starts with `postback samples`), run in `directory`.
    package static func runFirstSession(in directory: String) throws {
        try run(Array(runnableBlocks(in: text).filter { $0.script.hasPrefix("postback samples") }.prefix(1)), in: directory)
    }
}
