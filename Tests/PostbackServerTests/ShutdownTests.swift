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
    /// After MHD_quiesce_daemon the listening socket must stay open until the daemon has stopped: a
    /// worker thread removes it from its epoll set when it next wakes, and libmicrohttpd aborts the
    /// process ("Failed to remove listen FD from epoll set") if it was closed first. scripts/disk-faults
    /// caught that abort on SIGTERM under strace. While a request in flight holds the shutdown, the
    /// port must therefore still take TCP connections (into the backlog), and refuse them once stopped.
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
