import Foundation
import PostbackServer
import TestSupport
import Testing

/// `SERVE_OPTIONS` in scripts/reliability_harness.py: the reliability scripts run the receiver in
/// another mode (e.g. a thread per connection) only if the config they write is one the receiver
/// reads with that mode set, and a script's own setting still wins over it.
@Suite struct ReliabilityHarnessTests {
    /// Writes a config with the harness under `options`; returns the exit status, the file, stderr.
    private func writeConfig(options: String, overrides: String) throws -> (status: Int32, config: [UInt8], stderr: String) {
        let directory = TemporaryDirectory("harness")
        let path = directory.path + "/config.json"
        let script = """
            import json, os, sys
            sys.path.insert(0, sys.argv[1])
            os.environ["SERVE_OPTIONS"] = sys.argv[2]
            import reliability_harness as harness
            harness.write_config(sys.argv[3], "data", "key.pem", **json.loads(sys.argv[4]))
            """
        let scripts = Fixtures.root.appendingPathComponent("scripts").path
        let result = try VenvPython.run(script: script, arguments: [scripts, options, path, overrides])
        let config = FileManager.default.contents(atPath: path).map { [UInt8]($0) } ?? []
        return (result.status, config, result.stderr)
    }

    @Test func serveOptionsReachTheReceiversConfig() throws {
        let written = try writeConfig(options: #""commit_gather_ms": 2, "threads": 3,"#, overrides: "{}")
        #expect(written.status == 0, "\(written.stderr)")
        let configuration = try ServerConfiguration.parse(written.config)
        #expect(configuration.commitGatherSeconds == 0.002)
        #expect(configuration.threads == 3)
        #expect(configuration.allowsDevelopment, "the harness's own settings stay")
    }

    @Test func aScriptsOwnSettingWins() throws {
        let written = try writeConfig(
            options: #""connection_limit": 5000, "threads": 3"#, overrides: #"{"connection_limit": 64}"#)
        #expect(written.status == 0, "\(written.stderr)")
        let configuration = try ServerConfiguration.parse(written.config)
        #expect(configuration.connectionLimit == 64, "slow-clients checks the limit it set")
        #expect(configuration.threads == 3)
    }

    @Test func noOptionsLeaveTheDefaultMode() throws {
        let written = try writeConfig(options: "", overrides: "{}")
        #expect(written.status == 0, "\(written.stderr)")
        let configuration = try ServerConfiguration.parse(written.config)
        #expect(configuration.commitGatherSeconds == ServerConfiguration().commitGatherSeconds)
    }

    @Test func aMalformedFragmentStopsWithTheRemedy() throws {
        let written = try writeConfig(options: "threads: 3", overrides: "{}")
        #expect(written.status != 0)
        #expect(written.stderr.contains("SERVE_OPTIONS is not JSON object members"))
        #expect(written.stderr.contains(#"'"threads": 3,'"#), "names the form to write")
        #expect(!written.stderr.contains("Traceback"))
        #expect(written.config.isEmpty, "no config written")
    }
}
