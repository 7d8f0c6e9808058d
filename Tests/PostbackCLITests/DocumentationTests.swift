import BuildStamp
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

    /// README.md and every page of docs/, as a reader opens them.
    static func userDocuments() throws -> [(name: String, text: String)] {
        let pages = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("docs").path)
            .filter { $0.hasSuffix(".md") }.sorted().map { "docs/" + $0 }
        return try (["README.md"] + pages).map {
            ($0, try String(contentsOf: root.appendingPathComponent($0), encoding: .utf8))
        }
    }

    /// Each page's runnable blocks, in order, in a fresh empty directory of their own (a page does not
    /// rely on another's files); README's are run above.
    @Test func docsRunnableBlocksRunAsWrittenInAFreshDirectory() throws {
        guard FileManager.default.isExecutableFile(atPath: Readme.binary.path) else {
            Issue.record("postback binary not found at \(Readme.binary.path); run `swift build` first")
            return
        }
        var run = 0
        for (name, text) in try Self.userDocuments() where name != "README.md" {
            let blocks = Readme.runnableBlocks(in: text)
            guard !blocks.isEmpty else { continue }
            let directory = TemporaryDirectory("postback-docs")
            do {
                try Readme.run(blocks, in: directory.path)
            } catch {
                Issue.record("\(name): \(error)")
            }
            run += blocks.count
        }
        #expect(run >= 3, "docs/aggregate.md and docs/verify.md mark blocks as runnable")
    }

    /// Every shell block of README.md and docs/ either runs in the tests (`<!-- runnable -->`) or says
    /// on its first line what it needs that a test machine does not have (`# needs: a bucket…`); every
    /// fenced block names its language, and no command hides in an indented block.
    @Test func everyShellBlockIsRunOrSaysWhatItNeeds() throws {
        let shells: Set<String> = ["sh", "bash", "shell", "console"]
        for (name, text) in try Self.userDocuments() {
            let lines = text.components(separatedBy: "\n")
            var index = 0
            var previousText = ""
            while index < lines.count {
                let line = lines[index]
                if line.trimmingCharacters(in: .whitespaces).hasPrefix("```") {
                    let language = line.trimmingCharacters(in: .whitespaces).dropFirst(3).trimmingCharacters(in: .whitespaces)
                    #expect(!language.isEmpty, "\(name):\(index + 1): a fenced block without a language (sh, text, json…)")
                    let runnable = previousText.trimmingCharacters(in: .whitespaces) == "<!-- runnable -->"
                    let first = index + 1 < lines.count ? lines[index + 1].trimmingCharacters(in: .whitespaces) : ""
                    if shells.contains(language) {
                        #expect(
                            runnable || first.hasPrefix("# needs: "),
                            "\(name):\(index + 1): a shell block neither marked <!-- runnable --> nor saying '# needs: …'")
                    }
                    index += 1
                    while index < lines.count, !lines[index].trimmingCharacters(in: .whitespaces).hasPrefix("```") { index += 1 }
                    previousText = ""
                    index += 1
                    continue
                }
                // An indented code block at the top level (not a list item's continuation).
                let listLike =
                    ["- ", "* ", "|", "<!--"].contains { previousText.hasPrefix($0) }
                    || previousText.first?.isNumber == true || previousText.hasPrefix(" ")
                if line.hasPrefix("    "), !line.trimmingCharacters(in: .whitespaces).isEmpty, index > 0,
                    lines[index - 1].trimmingCharacters(in: .whitespaces).isEmpty, !previousText.isEmpty, !listLike
                {
                    Issue.record("\(name):\(index + 1): an indented code block; fence it with its language (```sh, ```text)")
                }
                if !line.trimmingCharacters(in: .whitespaces).isEmpty { previousText = line }
                index += 1
            }
        }
    }

    /// User docs speak of the product, not of the team's tickets: no "issue 12" or "#12".
    @Test func userDocsNameNoIssueNumbers() throws {
        let patterns = try [
            #"(?i)\bissues?\s*#?\d+"#,
            // "#12" as a reference; not a Markdown anchor (#1-conversion-schemas), "PKCS #8" or owner/repo#59.
            #"(?<![\w/(])(?<!PKCS )#\d+(?![\w-])"#,
        ].map { try NSRegularExpression(pattern: $0) }
        func issueReference(in line: String) -> String? {
            for pattern in patterns {
                if let match = pattern.firstMatch(in: line, range: NSRange(line.startIndex..., in: line)),
                    let range = Range(match.range, in: line)
                {
                    return String(line[range])
                }
            }
            return nil
        }
        for (name, text) in try Self.userDocuments() + [
            ("spark/README.md", try String(contentsOf: Self.root.appendingPathComponent("spark/README.md"), encoding: .utf8)),
            ("Samples/README.md", try String(contentsOf: Self.root.appendingPathComponent("Samples/README.md"), encoding: .utf8)),
        ] {
            for (number, line) in text.components(separatedBy: "\n").enumerated() {
                if let reference = issueReference(in: line) {
                    Issue.record("\(name):\(number + 1) names an issue (\(reference)): say what the product does instead")
                }
            }
        }
        // The patterns catch what they are for, and only that.
        #expect(issueReference(in: "(issue 24, issue 25)") == "issue 24")
        #expect(issueReference(in: "fixed in #12.") == "#12")
        #expect(issueReference(in: "[x](#1-conversion-schemas) PKCS #8 openrtb#59, kubernetes/kubernetes#57923") == nil)
    }

    /// docs/aggregate.md's DuckDB queries ("Reading the output"), run as printed (DATA replaced) on a
    /// store whose events table has rows and on one whose events table is only its header.
    @Test func aggregateDocsDuckDBQueriesRunOnPublishedTablesEvenEmptyOnes() throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: VenvPython.path), "no \(VenvPython.path): run scripts/setup --test")
        let page = try String(contentsOf: Self.root.appendingPathComponent("docs/aggregate.md"), encoding: .utf8)
        let section = try #require(page.components(separatedBy: "## 6. Reading the output").dropFirst().first)
            .components(separatedBy: "### Column types")[0]
        let statements = section.components(separatedBy: "```sql\n").dropFirst()
            .flatMap { $0.components(separatedBy: "\n```")[0].components(separatedBy: ";") }
            .map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }.filter { !$0.isEmpty }
        #expect(statements.count == 3, "the Parquet query, the CSV query and the events query")
        let temporary = TemporaryDirectory("docs-duckdb")
        // With events (a purchase decoded), and without (a non-winning postback has no value).
        for (store, sample) in [
            ("events", "skan-4.0_apple-doc_web-ad-tier-high.json"), ("none", "skan-3.0_apple-doc_nonwinning.json"),
        ] {
            let aggregate = TestSupport.run([
                "aggregate", "--input", Self.root.appendingPathComponent("Samples/" + sample).path, "--date", "2026-03-10",
                "--data", temporary.path + "/" + store, "--schemas", Fixtures.sampleSchemas, "--format", "both",
            ])
            #expect(aggregate.status == .success, "\(aggregate.stderr)")
        }
        let events = try String(
            contentsOfFile: temporary.path + "/none/agg/campaign_events_daily/dt=2026-03-10/part-00000.csv", encoding: .utf8)
        #expect(events.split(separator: "\n").count == 1, "the second store's events table is only its header")
        let script = """
            import duckdb, json, sys
            statements = json.loads(sys.argv[1])
            for data in sys.argv[2:]:
                for statement in statements:
                    duckdb.connect().execute(statement.replace("DATA", data)).fetchall()
            """
        let encoded = String(decoding: try JSONSerialization.data(withJSONObject: statements), as: UTF8.self)
        let (status, _, problem) = try VenvPython.run(
            script: script, arguments: [encoded, temporary.path + "/events", temporary.path + "/none"])
        #expect(status == 0, "a documented query fails: \(problem)")
    }

    /// The package's install line, as printed: the real path of the file scripts/package writes, with
    /// this release's version (apt-get takes a local file only as a path with a slash).
    @Test func thePackageInstallLinesNameTheFileScriptsPackageWrites() throws {
        let deb = "./.build/package/postback_\(BuildInfo.version)_amd64.deb"
        for (name, text) in try Self.userDocuments() {
            for line in text.components(separatedBy: "\n") where line.contains("apt-get install") && line.contains(".deb") {
                #expect(line.contains("apt-get install " + deb), "\(name): \(line)")
            }
        }
        let script = try String(contentsOf: Self.root.appendingPathComponent("scripts/package"), encoding: .utf8)
        #expect(script.contains(#"out=${1:-.build/package}"#) && script.contains(#"deb="$out/postback_${version}_amd64.deb""#))
    }

    /// LICENSE is the Apache License 2.0 as Debian ships it, and the package's copyright file says so
    /// in Debian's machine-readable format (lintian checks it when scripts/package runs).
    @Test func theLicenceIsApache2AndThePackageSaysSoInDEP5() throws {
        let licence = try String(contentsOf: Self.root.appendingPathComponent("LICENSE"), encoding: .utf8)
        #expect(licence.contains("Apache License\n                           Version 2.0, January 2004"))
        if let debian = try? String(contentsOfFile: "/usr/share/common-licenses/Apache-2.0", encoding: .utf8) {
            #expect(licence == debian, "LICENSE is Debian's /usr/share/common-licenses/Apache-2.0, word for word")
        }
        let script = try String(contentsOf: Self.root.appendingPathComponent("scripts/package"), encoding: .utf8)
        let start = try #require(script.range(of: "/copyright\" <<'COPYRIGHT'\n"))
        let copyright = String(script[start.upperBound...]).components(separatedBy: "\nCOPYRIGHT\n")[0]
        let paragraphs = copyright.components(separatedBy: "\n\n")
        #expect(
            paragraphs.first?.hasPrefix("Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n") == true)
        #expect(paragraphs.contains { $0.hasPrefix("Files: *\nCopyright: ") && $0.hasSuffix("\nLicense: Apache-2.0") })
        let standalone = try #require(paragraphs.first { $0.hasPrefix("License: Apache-2.0\n") })
        #expect(standalone.contains("\"/usr/share/common-licenses/Apache-2.0\""))
        // DEP-5 continuation lines start with a space; an empty one is " .".
        for line in standalone.split(separator: "\n").dropFirst() {
            #expect(line.hasPrefix(" ") && line != " ", "\(line)")
        }
        #expect(!copyright.lowercased().contains("proprietary") && !copyright.contains("All rights reserved"))
        #expect(Self.readme.contains("[LICENSE](LICENSE)"))
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
        "check", "samples", "spool",
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

        // verify checks that ExecStart exists: point it at the binary just built.
        let message = try Self.systemdAnalyzeVerify([
            "postback.service": unit.replacingOccurrences(of: "/usr/local/bin/postback", with: PostbackBinaryTests.binary.path)
        ])
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

    /// `systemd-analyze verify` over unit files written to a scratch directory; its output (empty
    /// when the units are clean), after expecting its exit status 0.
    static func systemdAnalyzeVerify(_ units: [String: String]) throws -> String {
        let analyze = ["/usr/bin/systemd-analyze", "/bin/systemd-analyze"].first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
        let tool = try #require(analyze, "systemd-analyze not found: `scripts/setup --test` installs it (Debian package systemd)")
        let directory = NSTemporaryDirectory() + "postback-unit-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        for (name, text) in units { try text.write(toFile: directory + "/" + name, atomically: true, encoding: .utf8) }
        let (status, message) = try runTool(tool, ["verify"] + units.keys.sorted().map { directory + "/" + $0 })
        #expect(status == 0, "\(message)")
        return message
    }

    /// The nightly timer and its job pass `systemd-analyze verify`; the job's steps, run as systemd
    /// runs its ExecStart (the unit's `$$` and `%%` unescaped, `sh -c`) with a stand-in `postback`
    /// that logs its calls: the report is written even when the check has findings, and the unit then
    /// fails (exit 1); a failed aggregate stops it before the check.
    @Test func nightlyTimerPassesSystemdAnalyzeAndFailsOnFindingsAfterTheReport() throws {
        let service = try String(contentsOf: Self.root.appendingPathComponent("deploy/postback-nightly.service"), encoding: .utf8)
        let timer = try String(contentsOf: Self.root.appendingPathComponent("deploy/postback-nightly.timer"), encoding: .utf8)
        #expect(timer.contains("OnCalendar=") && timer.contains("Persistent=true"))
        let message = try Self.systemdAnalyzeVerify(["postback-nightly.service": service, "postback-nightly.timer": timer])
        #expect(message.isEmpty, "\(message)")

        // The ExecStart line as systemd hands it to /bin/sh: continuations joined, escapes undone.
        let joined = service.replacingOccurrences(of: "\\\n", with: " ")
        let line = try #require(joined.split(separator: "\n").first { $0.hasPrefix("ExecStart=/bin/sh -c '") })
        let script = String(line.dropFirst("ExecStart=/bin/sh -c '".count).dropLast())
            .replacingOccurrences(of: "$$", with: "$").replacingOccurrences(of: "%%", with: "%")
        let directory = TemporaryDirectory("nightly-unit")
        let stub = directory.path + "/postback"
        try """
        #!/bin/sh
        echo "$1 $*" >> \(directory.path)/calls
        case "$1" in aggregate) exit "${AGGREGATE:-0}";; check) exit "${CHECK:-0}";; report) exit "${REPORT:-0}";; esac
        """.write(toFile: stub, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: stub)
        func runJob(_ environment: [String: String]) throws -> (status: Int32, calls: [String]) {
            try? FileManager.default.removeItem(atPath: directory.path + "/calls")
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", script.replacingOccurrences(of: "/usr/local/bin/postback", with: stub)]
            process.environment = environment
            try process.run()
            process.waitUntilExit()
            let calls = (try? String(contentsOfFile: directory.path + "/calls", encoding: .utf8)) ?? ""
            return (process.terminationStatus, calls.split(separator: "\n").map { String($0.split(separator: " ")[0]) })
        }
        #expect(try runJob([:]) == (0, ["aggregate", "check", "report"]))
        #expect(try runJob(["CHECK": "1"]) == (1, ["aggregate", "check", "report"]), "findings: report written, unit failed")
        #expect(try runJob(["REPORT": "1"]) == (0, ["aggregate", "check", "report"]), "a report with gaps is no failure")
        #expect(try runJob(["AGGREGATE": "2"]) == (2, ["aggregate"]))
        #expect(try runJob(["CHECK": "2"]) == (2, ["aggregate", "check"]))
        let full = try String(contentsOfFile: directory.path + "/calls", encoding: .utf8)
        let yesterday = Date(timeIntervalSinceNow: -86_400)
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withFullDate]
        #expect(full.contains("--date \(formatter.string(from: yesterday))"), "the job checks yesterday (UTC): \(full)")
    }
}
