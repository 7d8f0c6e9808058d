package import Basics
import Foundation
import Postbacks

#if canImport(Glibc)
    import Glibc
#endif

/// Debian's Chromium, headless, driven over the DevTools protocol on a pipe
/// (`--remote-debugging-pipe`: JSON messages ended by a NUL byte, commands on the browser's file
/// descriptor 3, replies and events on 4). No WebSocket client, no Python and no TCP port needed.
package final class HeadlessChromium {
    package struct Failure: Error, CustomStringConvertible {
        package let description: String

        package init(description: String) { self.description = description }
    }

    /// `$CHROMIUM`, or the first of Debian's and Google's names on `PATH`.
    package static func locate() -> String? {
        let environment = ProcessInfo.processInfo.environment
        if let path = environment["CHROMIUM"], !path.isEmpty { return access(path, X_OK) == 0 ? path : nil }
        let directories = (environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
        for name in ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"] {
            for directory in directories where access("\(directory)/\(name)", X_OK) == 0 { return "\(directory)/\(name)" }
        }
        return nil
    }

    private let pid: pid_t
    private let commands: Int32
    private let replies: Int32
    private var pending: [UInt8] = []
    private var nextID = 1
    private var exited = false
    /// Every event received so far, in order: `method` and `params`.
    package private(set) var events: [(method: String, params: JSONObject)] = []

    /// Starts the browser with a fresh profile in `profileDirectory`; its own output goes to `logPath`.
    /// - Parameter extraArguments: more of Chromium's switches (`--ignore-certificate-errors` for a
    ///   test certificate).
    package init(
        executable: String, profileDirectory: String, logPath: String, windowWidth: Int, windowHeight: Int,
        extraArguments: [String] = []
    ) throws {
        var toBrowser: [Int32] = [-1, -1]
        var fromBrowser: [Int32] = [-1, -1]
        guard pipe(&toBrowser) == 0, pipe(&fromBrowser) == 0 else { throw Failure(description: "pipe failed") }
        for descriptor in toBrowser + fromBrowser { _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC) }
        // Above 10, so that placing them at 3 and 4 in the child cannot overwrite one with the other.
        let commandEnd = fcntl(toBrowser[0], F_DUPFD_CLOEXEC, 10)
        let replyEnd = fcntl(fromBrowser[1], F_DUPFD_CLOEXEC, 10)
        Glibc.close(toBrowser[0])
        Glibc.close(fromBrowser[1])
        commands = toBrowser[1]
        replies = fromBrowser[0]

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, logPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        posix_spawn_file_actions_adddup2(&actions, commandEnd, 3)
        posix_spawn_file_actions_adddup2(&actions, replyEnd, 4)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // Its own process group, so that cleanup can end the browser's helper processes with it.
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP))
        posix_spawnattr_setpgroup(&attributes, 0)

        let arguments =
            [
                executable, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
                "--user-data-dir=\(profileDirectory)",
                "--no-first-run", "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage", "--hide-scrollbars", "--mute-audio",
                "--force-device-scale-factor=1", "--window-size=\(windowWidth),\(windowHeight)",
            ] + extraArguments + ["about:blank"]
        let argv = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var child: pid_t = 0
        let status = posix_spawn(&child, executable, &actions, &attributes, argv, environ)
        Glibc.close(commandEnd)
        Glibc.close(replyEnd)
        guard status == 0 else {
            Glibc.close(commands)
            Glibc.close(replies)
            throw Failure(description: "could not start \(executable): \(String(cString: strerror(status)))")
        }
        pid = child
    }

    deinit {
        if !exited {
            kill(-pid, SIGKILL)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
        }
        Glibc.close(commands)
        Glibc.close(replies)
    }

    /// Sends a command and waits for its reply; returns its `result`.
    /// - Throws: `Failure` on a protocol error, a browser that went away, or no reply in `timeout` seconds.
    @discardableResult
    package func call(
        _ method: String, session: String? = nil, timeout: Double = 30,
        _ params: (inout JSONWriter) -> Void = { _ in }
    ) throws -> JSONObject {
        let id = nextID
        nextID += 1
        var json = JSONWriter()
        json.beginObject()
        json.field("id", id)
        json.field("method", method)
        if let session { json.field("sessionId", session) }
        json.key("params")
        json.beginObject()
        params(&json)
        json.endObject()
        json.endObject()
        var bytes = json.bytes
        bytes.append(0)
        try send(bytes)
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let message = try receive(until: deadline, waitingFor: method)
            guard case .number(let number)? = message["id"], number.int64Value == Int64(id) else { continue }
            if case .object(let error)? = message["error"] {
                throw Failure(description: "\(method): \(error.string("message") ?? "error")")
            }
            return message.object("result") ?? JSONObject(members: [])
        }
    }

    /// Waits until an event named `method` has arrived (it may have already, among the events from
    /// index `after` on); returns its params.
    package func waitForEvent(_ method: String, after: Int = 0, timeout: Double = 30) throws -> JSONObject {
        let deadline = Date().addingTimeInterval(timeout)
        var seen = after
        while true {
            if let event = events[seen...].first(where: { $0.method == method }) { return event.params }
            seen = events.count
            _ = try receive(until: deadline, waitingFor: method)
        }
    }

    /// Asks the browser to close, and waits for it (ending its process group if it does not go).
    package func shutDown(timeout: Double = 10) {
        _ = try? send(Array(#"{"id":999999,"method":"Browser.close","params":{}}"#.utf8) + [0])
        let deadline = Date().addingTimeInterval(timeout)
        var status: Int32 = 0
        while Date() < deadline {
            if waitpid(pid, &status, WNOHANG) == pid {
                exited = true
                return
            }
            usleep(50_000)
        }
        kill(-pid, SIGKILL)
        waitpid(pid, &status, 0)
        exited = true
    }

    private func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { write(commands, $0.baseAddress! + offset, $0.count - offset) }
            if written < 0 {
                if errno == EINTR { continue }
                throw Failure(description: "the browser stopped reading commands: \(String(cString: strerror(errno)))")
            }
            offset += written
        }
    }

    /// The next message; events are also kept in `events`.
    private func receive(until deadline: Date, waitingFor what: String) throws -> JSONObject {
        while true {
            if let end = pending.firstIndex(of: 0) {
                let bytes = Array(pending[..<end])
                pending.removeSubrange(...end)
                guard case .object(let message) = try StrictJSONParser.parse(bytes, maximumDepth: 64) else {
                    throw Failure(description: "a DevTools message is not a JSON object")
                }
                if let method = message.string("method") {
                    events.append((method, message.object("params") ?? JSONObject(members: [])))
                }
                return message
            }
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else { throw Failure(description: "no reply from the browser in time (waiting for \(what))") }
            var descriptor = pollfd(fd: replies, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, Int32(min(remaining, 1) * 1000))
            if ready < 0, errno != EINTR { throw Failure(description: "poll failed: \(String(cString: strerror(errno)))") }
            guard ready > 0 else { continue }
            var chunk = [UInt8](repeating: 0, count: 1 << 16)
            let count = chunk.withUnsafeMutableBytes { read(replies, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { throw Failure(description: "the browser closed its DevTools pipe (waiting for \(what))") }
            pending.append(contentsOf: chunk[..<count])
        }
    }
}

extension JSONObject {
    package func string(_ key: String) -> String? {
        if case .string(let text)? = self[key] { return text }
        return nil
    }

    package func object(_ key: String) -> JSONObject? {
        if case .object(let object)? = self[key] { return object }
        return nil
    }

    package func number(_ key: String) -> Double? {
        if case .number(let number)? = self[key] { return Double(number.text) }
        return nil
    }
}
