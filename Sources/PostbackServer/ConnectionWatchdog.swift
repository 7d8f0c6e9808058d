import Locking
import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Closes connections that are too slow, whatever trickle of bytes keeps them "active".
///
/// libmicrohttpd's own timeout is an inactivity timeout: a slowloris client that sends one header
/// byte every few seconds never trips it. So each connection carries an absolute deadline for its
/// current phase (idle keep-alive, headers, body), set when the phase starts; none while the server
/// itself is working on the request. A thread checks the deadlines a few times a second and shuts
/// overdue sockets down. libmicrohttpd then sees the closed socket and cleans up as usual.
///
/// `shutdown(2)` (not `close`) is used, under the registry lock that the connection-closed
/// notification also takes before libmicrohttpd closes the descriptor, so a reused descriptor
/// number can never be hit.
final class ConnectionWatchdog: Sendable {
    enum Phase: UInt8 {
        case idle = 1, headers, body, processing

        var name: String {
            switch self {
            case .idle: return "idle"
            case .headers: return "headers"
            case .body: return "body"
            case .processing: return "processing"
            }
        }
    }

    /// One TCP connection's deadline.
    final class Track: Sendable {
        let descriptor: Int32
        private let deadline = Atomic<UInt64>(0)
        private let phaseValue = Atomic<UInt8>(Phase.idle.rawValue)

        init(descriptor: Int32) { self.descriptor = descriptor }

        var phase: Phase { Phase(rawValue: phaseValue.load(ordering: .relaxed)) ?? .idle }

        /// Starts `phase`; it must end within `seconds` (nil: no deadline).
        func enter(_ phase: Phase, seconds: Double?) {
            phaseValue.store(phase.rawValue, ordering: .relaxed)
            deadline.store(seconds.map { DispatchTime.now().uptimeNanoseconds + UInt64($0 * 1e9) } ?? 0, ordering: .relaxed)
        }

        fileprivate func isOverdue(now: UInt64) -> Bool {
            let due = deadline.load(ordering: .relaxed)
            return due != 0 && now > due
        }

        fileprivate func disarm() { deadline.store(0, ordering: .relaxed) }
    }

    private let tracks = Locked<[Int32: Track]>([:])
    private let stopSignal = DispatchSemaphore(value: 0)
    private let stopped = DispatchSemaphore(value: 0)
    private let interval: Double
    private let onTimeout: @Sendable (Phase) -> Void

    /// - Parameter interval: how often deadlines are checked (a fraction of the shortest timeout).
    init(interval: Double, onTimeout: @escaping @Sendable (Phase) -> Void) {
        self.interval = interval
        self.onTimeout = onTimeout
        let thread = Thread { [self] in run() }
        thread.name = "connection-watchdog"
        thread.start()
    }

    var openConnections: Int { tracks.withLock { $0.count } }

    func register(_ track: Track) {
        tracks.withLock { $0[track.descriptor] = track }
    }

    /// Called from the connection-closed notification, before the descriptor is closed.
    func unregister(_ track: Track) {
        tracks.withLock { tracks in
            if tracks[track.descriptor] === track { tracks[track.descriptor] = nil }
        }
    }

    func stop() {
        stopSignal.signal()
        stopped.wait()
    }

    private func run() {
        while stopSignal.wait(timeout: .now() + interval) == .timedOut {
            let now = DispatchTime.now().uptimeNanoseconds
            var expired: [Phase] = []
            tracks.withLock { tracks in
                for track in tracks.values where track.isOverdue(now: now) {
                    track.disarm()
                    expired.append(track.phase)
                    shutdown(track.descriptor, Int32(SHUT_RDWR))
                }
            }
            for phase in expired { onTimeout(phase) }
        }
        stopped.signal()
    }
}
