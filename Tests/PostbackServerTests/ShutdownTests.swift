import Dispatch
import Foundation
import PostbackClient
import PostbackServer
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Graceful stop and libmicrohttpd's rules for it.
@Suite struct ShutdownTests {
    /// The listening socket stays open until the daemon has stopped: libmicrohttpd aborts the process
    /// ("Failed to remove listen FD from epoll set") when a worker finds it closed, or when
    /// MHD_quiesce_daemon races a worker removing it (scripts/disk-faults caught both on SIGTERM under
    /// strace), so shutdown refuses new connections by its accept policy instead. While a request in
    /// flight holds the shutdown, the port must therefore still take TCP connections, and refuse them
    /// once stopped.
    @Test func theListeningSocketIsClosedOnlyAfterTheDaemonStops() throws {
        let storage = FaultyStorage()
        let server = try TestServer(storage: storage)
        let port = server.server.port
        let body = TestPostbacks.body(0, seed: 31)
        let held = HeldPostback(body, to: server.skadnetworkURL, storage: storage)
        let stopped = server.stopInBackground()
        let deadline = Date().addingTimeInterval(10)
        while !server.logs.contains("shutting down"), Date() < deadline { usleep(1000) }
        // The shutdown is now waiting for the request in flight, after quiescing the daemon.
        var refused = 0
        for _ in 0..<40 {
            if (try? RawConnection(port: port)) == nil { refused += 1 }
            usleep(5000)
        }
        #expect(refused == 0, "the listening socket was closed while the daemon still ran")
        storage.releaseHeldSyncs()
        #expect(held.status() == 200)
        #expect(stopped.wait(timeout: .now() + 10) == .success)
        #expect((try? RawConnection(port: port)) == nil, "once stopped, the port refuses connections")
    }
}
