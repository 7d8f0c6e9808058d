import BuildStamp
import Foundation
import TestSupport
import Testing

/// `postback --version` tells two builds apart: the release, the commit and the date, from
/// scripts/build-stamp (run before every build by the BuildStampPlugin).
@Suite struct BuildStampTests {
    /// Runs `command` in `directory`; its standard output, trimmed.
    @discardableResult
    func shell(_ command: String, in directory: String) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", command]
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func stamp(of repository: String) throws -> String {
        let output = TemporaryDirectory("stamp")
        let script = Fixtures.root.appendingPathComponent("scripts/build-stamp").path
        try shell("sh '\(script)' '\(repository)' '\(output.path)'", in: repository)
        return try String(contentsOfFile: output.path + "/BuildStamp.swift", encoding: .utf8)
    }

    @Test func theVersionNamesTheReleaseTheCommitAndTheDate() throws {
        let version = run(["--version"]).stdout
        #expect(
            version.wholeMatch(of: /postback \d+\.\d+\.\d+ \(([0-9a-f]{7}(-dirty)?|unknown), (\d{4}-\d{2}-\d{2}|unknown)\)\n/)
                != nil, "\(version)")
        #expect(version == "postback \(BuildInfo.description)\n")
        // Built from this checkout: its commit is HEAD's, or one HEAD descends from (a build made
        // before the last commit and tested with --skip-build).
        let head = try shell("git rev-parse --short=7 HEAD", in: Fixtures.root.path)
        if head.count == 7 {
            let commit = String(BuildInfo.commit.prefix(7))
            let ancestor = try shell(
                "git merge-base --is-ancestor \(commit) HEAD && echo yes", in: Fixtures.root.path)
            #expect(ancestor == "yes", "\(BuildInfo.commit) is not HEAD \(head) nor one of its ancestors")
        }
    }

    @Test func aCleanCheckoutADirtyOneAndATarballAreToldApart() throws {
        let repository = TemporaryDirectory("stamp-repo")
        try shell(
            "git init -q . && git -c user.email=t@example.com -c user.name=t commit -q --allow-empty -m one "
                + "--date '2026-01-02T03:04:05Z' && echo a > tracked && git add tracked "
                + "&& git -c user.email=t@example.com -c user.name=t commit -q -m two",
            in: repository.path)
        let head = try shell("git rev-parse --short=7 HEAD", in: repository.path)
        let date = try shell("TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%d", in: repository.path)
        let clean = try stamp(of: repository.path)
        #expect(clean.contains("commit = \"\(head)\"") && clean.contains("date = \"\(date)\""), "\(clean)")

        try "b".write(toFile: repository.path + "/tracked", atomically: true, encoding: .utf8)
        #expect(try stamp(of: repository.path).contains("commit = \"\(head)-dirty\""))

        let tarball = TemporaryDirectory("stamp-tarball")
        let unknown = try stamp(of: tarball.path)
        #expect(unknown.contains("commit = \"unknown\"") && unknown.contains("date = \"unknown\""), "\(unknown)")
    }
}
