import Foundation
import PostbackServer
import TestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// nginx with `deploy/nginx.conf` in front of an API on loopback, as scripts/nginx-front runs it: a
/// self-signed certificate made with openssl, the file's "test:" lines rewritten by nginx-front's own
/// `test_config` (a temporary prefix, free ports, the API's address), nginx in the foreground. Stopped
/// when the value goes.
final class NginxFront {
    let port: Int
    var base: String { "https://127.0.0.1:\(port)" }
    private let process = Process()
    private let directory = TemporaryDirectory("nginx-front")

    init(apiPort: Int) throws {
        let prefix = directory.path
        try Self.execute(
            "/usr/bin/openssl",
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1", "-subj",
                "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", prefix + "/key.pem", "-out",
                prefix + "/cert.pem",
            ])
        port = try Self.freePort()
        let script = """
            import importlib.machinery, importlib.util, sys
            root, prefix, port, internal, api = sys.argv[1:6]
            sys.path.insert(0, root + "/scripts")
            loader = importlib.machinery.SourceFileLoader("nginx_front", root + "/scripts/nginx-front")
            module = importlib.util.module_from_spec(importlib.util.spec_from_loader("nginx_front", loader))
            loader.exec_module(module)
            with open(root + "/deploy/nginx.conf") as source, open(prefix + "/nginx.conf", "w") as target:
                target.write(module.test_config(source.read(), prefix, int(port), "127.0.0.1:9", "10s", prefix + "/cert.pem",
                                                prefix + "/key.pem", internal_port=int(internal), api=api))
            """
        let written = try VenvPython.run(
            script: script,
            arguments: [Fixtures.root.path, prefix, String(port), String(try Self.freePort()), "127.0.0.1:\(apiPort)"])
        guard written.status == 0 else { throw HeadlessChromium.Failure(description: "nginx config: \(written.stderr)") }
        let nginx = ["/usr/sbin/nginx", "/usr/bin/nginx"].first { FileManager.default.isExecutableFile(atPath: $0) } ?? "nginx"
        try Self.execute(nginx, ["-t", "-q", "-p", prefix, "-c", prefix + "/nginx.conf"])
        process.executableURL = URL(fileURLWithPath: nginx)
        process.arguments = ["-p", prefix, "-c", prefix + "/nginx.conf", "-g", "daemon off;"]
        process.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try process.run()
        let listening = eventually(10) {
            let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(socket) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            return withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
                }
            }
        }
        guard listening else { throw HeadlessChromium.Failure(description: "nginx did not listen on \(port)") }
    }

    deinit {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }

    private static func freePort() throws -> Int {
        let socket = try ListenAddress(host: "127.0.0.1", port: 0).bind()
        close(socket.descriptor)
        return socket.port
    }

    private static func execute(_ executable: String, _ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
        process.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw HeadlessChromium.Failure(description: "\(executable) \(arguments.joined(separator: " ")) failed")
        }
    }
}
