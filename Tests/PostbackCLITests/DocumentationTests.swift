import Foundation
import TestSupport
import Testing

@testable import PostbackCLI

/// README and the service unit, checked as a user and an operator would use them: README's shell
/// blocks marked runnable run as written, its exit status table says what `--help` says, and
/// `systemd-analyze verify` accepts deploy/postback.service.
@Suite struct DocumentationTests {
    static let root = VerifyCommandTests.root
    static var readme: String { Readme.text }

    @Test func readmeRunnableBlocksRunAsWrittenInAFreshDirectory() throws {
        guard FileManager.default.isExecutableFile(atPath: Readme.binary.path) else {
            Issue.record("postback binary not found at \(Readme.binary.path); run `swift build` first")
            return
        }
        let blocks = Readme.runnableBlocks(in: Self.readme)
        #expect(blocks.count >= 2, "README marks its first session and the decode tables as runnable")
        let directory = NSTemporaryDirectory() + "postback-readme-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // Blocks run in order in the one directory, as a reader following README would.
        try Readme.run(blocks, in: directory)
        #expect(FileManager.default.fileExists(atPath: directory + "/report.html"))
        #expect(FileManager.default.fileExists(atPath: directory + "/decode/sources.csv"))
    }

    @Test func docsCiteOnlyFilesThatAreInTheRepository() throws {
        let documents =
            ["README.md", "spark/README.md"]
            + (try FileManager.default.contentsOfDirectory(atPath: Self.root.appendingPathComponent("docs").path))
            .filter { $0.hasSuffix(".md") }.map { "docs/" + $0 }
        // `shared/` is the team's notes outside the repository: a reader of the repository cannot open them.
        let repositoryDirectories = [
            "scripts/", "docs/", "Samples/", "spark/", "bench/", "deploy/", "Tests/", "Sources/", "fuzz/", ".ci/", "shared/",
        ]
        for document in documents {
            let text = try String(contentsOf: Self.root.appendingPathComponent(document), encoding: .utf8)
            let base = (document as NSString).deletingLastPathComponent
            // Markdown links to files, and `code` spans that name a path in one of the repository's directories.
            var cited: [String] = []
            for piece in text.components(separatedBy: "](").dropFirst() {
                let target = String(piece.prefix { $0 != ")" && $0 != "#" })
                if !target.isEmpty, !target.contains("://"), !target.hasPrefix("mailto:") {
                    cited.append(base.isEmpty ? target : base + "/" + target)
                }
            }
            for (index, piece) in text.components(separatedBy: "`").enumerated() where index % 2 == 1 {
                let word = String(piece.prefix { !$0.isWhitespace })
                guard repositoryDirectories.contains(where: { word.hasPrefix($0) }),
                    !word.contains("*"), !word.contains("<"), !word.contains("…")
                else { continue }
                cited.append(word)
            }
            for path in cited {
                let resolved = Self.root.appendingPathComponent(path).standardizedFileURL.path
                #expect(
                    FileManager.default.fileExists(atPath: resolved), "\(document) cites \(path), which is not in the repository")
            }
        }
    }

    @Test func runnableBlocksAreFoundOnlyAfterTheMarker() {
        let markdown = "text\n<!-- runnable -->\n```sh\necho one\necho two\n```\n```sh\nnot marked\n```\n    indented\n"
        let blocks = Readme.runnableBlocks(in: markdown)
        #expect(blocks.map(\.script) == ["echo one\necho two"])
        #expect(blocks.first?.line == 4)
    }

    @Test(arguments: [
        "verify", "explain", "reverify", "generate", "impression", "serve", "send", "aggregate", "spend", "schema", "report",
    ])
    func readmeExitStatusTableSaysWhatHelpSays(command: String) throws {
        let out = MemorySink()
        #expect(
            PostbackCommand.run([command, "--help"], io: CommandIO(standardOutput: out, standardError: MemorySink())) == .success)
        let help = out.text
        let start = try #require(help.range(of: "Exit status: "), "\(command) --help documents its exit status")
        let paragraph = help[start.upperBound...].components(separatedBy: "\n\n")[0]
        let documented = paragraph.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(
            Self.readme.contains("| `postback \(command)` | \(documented) |"),
            "README's exit status row for \(command): \(documented)")
    }

    @Test func serviceUnitHasTheHardeningAndPassesSystemdAnalyze() throws {
        let unit = try String(contentsOf: Self.root.appendingPathComponent("deploy/postback.service"), encoding: .utf8)
        for directive in [
            "User=postback", "StateDirectory=postback", "ReadWritePaths=/var/lib/postback", "NoNewPrivileges=yes",
            "ProtectSystem=strict", "PrivateTmp=yes", "MemoryDenyWriteExecute=yes", "SystemCallFilter=@system-service",
            "Restart=on-failure", "--log-format json", "LimitCORE=0\n",
        ] {
            #expect(unit.contains(directive), "\(directive)")
        }
        // systemd's stop timeout covers the deployed config's shutdown grace (and, when it ships or
        // forwards, the delivery of the last segments), with time left to close.
        let config = try Data(contentsOf: Self.root.appendingPathComponent("deploy/config.json"))
        let settings = try #require(try JSONSerialization.jsonObject(with: config) as? [String: Any])
        let grace = try #require(settings["shutdown_grace_seconds"] as? Int)
        let delivers = settings["ship_to"] != nil || settings["forward"] != nil
        let delivery = delivers ? (settings["shutdown_delivery_seconds"] as? Int ?? 20) : 0
        #expect(
            unit.contains("TimeoutStopSec=\(grace + delivery + 5)\n"),
            "TimeoutStopSec = shutdown grace \(grace) s + delivery \(delivery) s + 5 s")
        #expect(!unit.contains("ExecReload"), "the receiver does not reload; no ExecReload that would kill it")

        let analyze = ["/usr/bin/systemd-analyze", "/bin/systemd-analyze"].first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
        let tool = try #require(analyze, "systemd-analyze not found: `scripts/setup --test` installs it (Debian package systemd)")
        // verify checks that ExecStart exists: point it at the binary just built.
        let directory = NSTemporaryDirectory() + "postback-unit-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/postback.service"
        try unit.replacingOccurrences(of: "/usr/local/bin/postback", with: PostbackBinaryTests.binary.path)
            .write(toFile: path, atomically: true, encoding: .utf8)
        let (status, message) = try Self.runTool(tool, ["verify", path])
        #expect(status == 0, "\(message)")
        // Unknown or misspelt directives are only warnings to systemd: any output is a failure here.
        #expect(message.isEmpty, "\(message)")
    }

    /// The package's postrm on purge (run here on a scratch root through DPKG_ROOT, as dpkg --root
    /// runs it): after dpkg removed the conffile, the signing keys and secrets an operator put in
    /// /etc/postback stay, and so do the stored postbacks; an /etc/postback with nothing else in it goes.
    @Test func purgeKeepsKeysAndSecrets() throws {
        let scratch = TemporaryDirectory("postrm")
        try scratch.write("-----BEGIN PRIVATE KEY-----\n", to: "etc/postback/keys/network.pem")
        try scratch.write("token\n", to: "etc/postback/secrets/s3")
        try scratch.write("{}\n", to: "var/lib/postback/raw/postbacks/kept.jsonl")
        let kept = try Self.runPostrm(["purge"], root: scratch.path)
        #expect(kept.status == 0, "\(kept.output)")
        #expect(scratch.exists("etc/postback/keys/network.pem") && scratch.exists("etc/postback/secrets/s3"))
        #expect(scratch.exists("var/lib/postback/raw/postbacks/kept.jsonl"))
        #expect(
            kept.output.contains("/etc/postback is kept: it holds files the package did not install (keys secrets)"),
            "\(kept.output)")

        try FileManager.default.removeItem(atPath: scratch.path + "/etc/postback/keys")
        try FileManager.default.removeItem(atPath: scratch.path + "/etc/postback/secrets")
        let removed = try Self.runPostrm(["purge"], root: scratch.path)
        #expect(removed.status == 0, "\(removed.output)")
        #expect(!scratch.exists("etc/postback"))
        #expect(scratch.exists("var/lib/postback/raw/postbacks/kept.jsonl"))
    }

    static func runPostrm(_ arguments: [String], root: String) throws -> (status: Int32, output: String) {
        try runTool(
            "/bin/sh", [Self.root.appendingPathComponent("deploy/debian/postrm").path] + arguments,
            environment: ["DPKG_ROOT": root, "PATH": "/usr/bin:/bin"])
    }

    /// A tool's exit status and its standard output and error together.
    static func runTool(_ tool: String, _ arguments: [String], environment: [String: String]? = nil) throws -> (
        status: Int32, output: String
    ) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        if let environment { process.environment = environment }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, text)
    }
}
