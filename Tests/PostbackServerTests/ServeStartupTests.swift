import Basics
import Foundation
import PostbackServer
import TestSupport
import Testing

@testable import PostbackCLI

/// `postback serve` before it serves: start-up errors in the form the reader can use (plain text on
/// a terminal, JSON lines for a log collector or with --log-format json), naming the remedy.
@Suite struct ServeStartupTests {
    private func start(_ words: [String], terminal: Bool) -> (status: PostbackCLI.ExitStatus, errors: String) {
        let errors = MemorySink(isTerminal: terminal)
        let status = ServeCommand.run(words, io: CommandIO(standardOutput: MemorySink(), standardError: errors)) { _ in "test" }
        return (status, errors.text)
    }

    @Test func startupErrorsArePlainTextOnATerminalAndJSONOtherwise() throws {
        let words = ["--listen", ":8093", "--data", TestServer.temporaryDirectory()]
        let onTerminal = start(words, terminal: true)
        #expect(onTerminal.status == .usageOrIOError)
        #expect(
            onTerminal.errors.hasPrefix("postback serve: cannot start: listen address \":8093\" has no host: use 127.0.0.1:8093"),
            "\(onTerminal.errors)")

        let toCollector = start(words, terminal: false)
        #expect(toCollector.status == .usageOrIOError)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(toCollector.errors.utf8)) as? [String: Any])
        #expect(object["level"] as? String == "error")
        #expect((object["detail"] as? String)?.contains("has no host") == true)

        let forced = start(words + ["--log-format", "json"], terminal: true)
        #expect(forced.errors.hasPrefix("{"), "--log-format json: JSON even on a terminal")
        #expect(start(words + ["--log-format", "yaml"], terminal: true).errors.contains("--log-format must be auto or json"))
    }

    @Test func flagErrorsTalkAboutFlags() {
        let result = start(["--trust-key", "k.pem"], terminal: true)
        #expect(result.status == .usageOrIOError)
        #expect(result.errors.contains("--trust-key keys are test keys; add --allow-dev"), "\(result.errors)")
    }

    @Test func aSecondReceiverOnTheStoreIsToldAboutWriterID() throws {
        let directory = TestServer.temporaryDirectory()
        let server = try TestServer(dataDirectory: directory, writerID: "same")
        defer { server.stop() }
        let result = start(["--listen", "127.0.0.1:0", "--data", directory, "--writer-id", "same"], terminal: true)
        #expect(result.status == .usageOrIOError)
        #expect(result.errors.contains("give each receiver sharing a store its own --writer-id"), "\(result.errors)")
        #expect(!result.errors.hasPrefix("{"))
    }

    @Test func aTakenPortIsASystemCallErrorNamingTheAddress() throws {
        let server = try TestServer()
        defer { server.stop() }
        let address = "127.0.0.1:\(server.server.port)"
        var configuration = ServerConfiguration()
        configuration.listen = address
        configuration.dataDirectory = TestServer.temporaryDirectory()
        do {
            let second = try PostbackServer.start(configuration: configuration, log: ServerLog { _ in })
            second.shutdown()
            Issue.record("a second server bound \(address)")
        } catch {
            #expect(error.systemCall == SystemCallError(operation: "bind", path: address, errorNumber: EADDRINUSE))
            #expect(error.description.hasPrefix("cannot listen on \(address): bind failed: "), "\(error)")
        }
    }

    /// The address and the data directory are checked before anything is created: a taken port
    /// leaves no data directory behind, and each problem says what to do.
    @Test func theAddressAndTheDataDirectoryAreCheckedFirstWithTheRemedy() throws {
        let server = try TestServer()
        defer { server.stop() }
        let data = TestServer.temporaryDirectory() + "/new-data"
        let taken = start(["--listen", "127.0.0.1:\(server.server.port)", "--data", data], terminal: true)
        #expect(taken.status == .usageOrIOError)
        #expect(
            taken.errors.contains("the address is in use (another receiver?); stop it, or choose another address with --listen"),
            "\(taken.errors)")
        #expect(!FileManager.default.fileExists(atPath: data), "nothing was created")

        let file = TestServer.temporaryDirectory() + "/a-file"
        FileManager.default.createFile(atPath: file, contents: Data("x".utf8))
        let notDirectory = start(["--listen", "127.0.0.1:0", "--data", file], terminal: true)
        #expect(notDirectory.status == .usageOrIOError)
        #expect(
            notDirectory.errors.contains("the data directory \(file) is not a directory; choose another with --data"),
            "\(notDirectory.errors)")
    }

    @Test func configPathsAreRelativeToTheConfigFile() throws {
        let configuration = try ServerConfiguration.parse(
            Array(#"{"data_dir": "data", "trust_keys": ["k.pem"], "allow_development": true}"#.utf8),
            relativeTo: "/etc/postback")
        #expect(configuration.dataDirectory == "/etc/postback/data")
        #expect(configuration.trustKeyPaths == ["/etc/postback/k.pem"])
        let absolute = try ServerConfiguration.parse(
            Array(#"{"data_dir": "/var/lib/postback"}"#.utf8), relativeTo: "/etc/postback")
        #expect(absolute.dataDirectory == "/var/lib/postback")
    }

    @Test func everyKnownConfigKeyIsReadByTheParser() {
        // A key in the "did you mean" list that the parser does not read would be suggested, then refused.
        for key in ServerConfiguration.knownKeys {
            do {
                _ = try ServerConfiguration.parse(Array(#"{"\#(key)": {"wrong": "type"}}"#.utf8))
                Issue.record("\(key): an object is the wrong type for every key")
            } catch {
                #expect(!error.description.contains("unknown key"), "\(key): \(error)")
                #expect(error.description.contains(key), "the error names the key: \(error)")
            }
        }
    }

    @Test func mistypedConfigKeysGetDidYouMean() {
        #expect(throws: (any Error).self) { try ServerConfiguration.parse(Array(#"{"data_directory": "x"}"#.utf8)) }
        do {
            _ = try ServerConfiguration.parse(Array(#"{"writerid": "x"}"#.utf8))
            Issue.record("an unknown key must be an error")
        } catch {
            #expect(error.description.contains(#"unknown key "writerid" (did you mean "writer_id"?)"#), "\(error)")
            #expect(error.description.contains("known keys: listen, data_dir"))
        }
    }
}
