package import Foundation

/// The repository's files that tests read: Apple's vectors, the sample schemas.
package enum Fixtures {
    package static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    package static let appleVectors = root.appendingPathComponent("Tests/Vectors/apple")
    package static let sampleSchemas = root.appendingPathComponent("Samples/schemas").path

    package static func bytes(_ url: URL) throws -> [UInt8] { Array(try Data(contentsOf: url)) }

    package static func appleVector(_ name: String) throws -> [UInt8] {
        try bytes(appleVectors.appendingPathComponent(name))
    }

    package static func appleVectorNames() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: appleVectors.path).filter { $0.hasSuffix(".json") }.sorted()
    }
}

/// A fresh directory under the system temp dir, removed when the test's value goes away.
package final class TemporaryDirectory {
    package let path: String

    package init(_ label: String = "agg") {
        path = TemporaryDirectory.create(label)
    }

    /// A fresh directory that stays (a server's data directory outlives the value that named it).
    package static func create(_ label: String) -> String {
        let path = NSTemporaryDirectory() + "\(label)-\(UUID().uuidString)"
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    package func write(_ text: String, to relative: String) throws {
        let url = URL(fileURLWithPath: path + "/" + relative)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(text.utf8).write(to: url)
    }

    package func read(_ relative: String) throws -> String {
        String(decoding: try Data(contentsOf: URL(fileURLWithPath: path + "/" + relative)), as: UTF8.self)
    }

    package func bytes(_ relative: String) throws -> [UInt8] {
        Array(try Data(contentsOf: URL(fileURLWithPath: path + "/" + relative)))
    }

    package func exists(_ relative: String) -> Bool { FileManager.default.fileExists(atPath: path + "/" + relative) }
}

/// Runs a Python script with the project's virtual environment (`.build/venv`, from
/// scripts/requirements-test.txt: DuckDB, pyarrow…), never the system's Python.
package enum VenvPython {
    package static let path = Fixtures.root.appendingPathComponent(".build/venv/bin/python3").path

    /// The script's exit status, standard output and standard error.
    package static func run(script: String, arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = ["-c", script] + arguments
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        // Scripts write a small JSON answer and short errors: neither pipe fills while the other is read.
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let problem = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, text, problem)
    }
}
