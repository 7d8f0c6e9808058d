import Foundation

/// A tool's exit status and its standard output and error together (a program outside `postback`:
/// systemd-analyze, the virtual environment's validators).
package func runTool(
    _ tool: String, _ arguments: [String], environment: [String: String]? = nil, directory: String? = nil
) throws -> (
    status: Int32, output: String
) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: tool)
    process.arguments = arguments
    if let environment { process.environment = environment }
    if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
    let output = Pipe()
    process.standardOutput = output
    process.standardError = output
    try process.run()
    let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    return (process.terminationStatus, text)
}
