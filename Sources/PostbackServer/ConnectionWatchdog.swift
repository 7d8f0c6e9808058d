import Basics
import CMicroHTTPDShim
import Dispatch
import Foundation
import Locking
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
        /// `new`: accepted, no request line yet (the first request's headers share its deadline).
        /// `replying`: a reply is queued and being sent; the client must read it within the body
        /// timeout (then `idle`, with the idle timeout).
        case idle = 1
        case headers, body, processing, new, replying

        var name: String {
            switch self {
            case .new: return "new"
            case .replying: return "replying"
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
        /// The peer, one spelling per client (`IPAddress.client`): silent connections are shed from
        /// the client holding the most.
        let client: String
        /// The socket peer's address as libmicrohttpd gives it, read once when the connection opened.
        let peerAddress: String
        let openedAt = DispatchTime.now().uptimeNanoseconds
        private let deadline = Atomic<UInt64>(0)
        private let phaseValue = Atomic<UInt8>(Phase.idle.rawValue)
        /// When the current phase was entered (`enter`; `continueAs` keeps it).
        private let phaseStart = Atomic<UInt64>(DispatchTime.now().uptimeNanoseconds)

        init(descriptor: Int32, client: String = "", peerAddress: String = "unknown") {
            self.descriptor = descriptor
            self.client = client
            self.peerAddress = peerAddress
        }

        /// Moves to `phase` under the current deadline (the first request line of a new connection).
        func continueAs(_ phase: Phase) { phaseValue.store(phase.rawValue, ordering: .relaxed) }

        private let refusing = Atomic<Bool>(false)
        /// Set after libmicrohttpd itself answered an error: its framing may differ from the client's,
        /// so nothing more is read as a request from this connection.
        var refusesRequests: Bool { refusing.load(ordering: .relaxed) }
        func refuseFurtherRequests() {
            refusing.store(true, ordering: .relaxed)
            shutdown(descriptor, Int32(SHUT_RD))
        }

        var phase: Phase { Phase(rawValue: phaseValue.load(ordering: .relaxed)) ?? .idle }

        /// Starts `phase`; it must end within `seconds` (nil: no deadline).
        func enter(_ phase: Phase, seconds: Double?) {
            phaseValue.store(phase.rawValue, ordering: .relaxed)
            phaseStart.store(DispatchTime.now().uptimeNanoseconds, ordering: .relaxed)
            deadline.store(seconds.map { DispatchTime.now().uptimeNanoseconds + UInt64($0 * 1e9) } ?? 0, ordering: .relaxed)
        }

        /// Since when the socket's send queue has not been empty, as the watchdog last saw it (0: empty).
        private let backloggedSince = Atomic<UInt64>(0)

        /// The watchdog's look at the send queue: bytes the client has not taken.
        fileprivate func sampleSendQueue(now: UInt64) {
            if postback_socket_unsent_bytes(descriptor) > 0 {
                if backloggedSince.load(ordering: .relaxed) == 0 { backloggedSince.store(now, ordering: .relaxed) }
            } else {
                backloggedSince.store(0, ordering: .relaxed)
            }
        }

        /// A slow reader: a reply queued more than `seconds` ago and not sent yet, or bytes waiting in
        /// the socket for the client all that time (across pipelined replies a trickling client lets
        /// complete one by one).
        fileprivate func isSlowReader(now: UInt64, seconds: Double) -> Bool {
            let limit = UInt64(seconds * 1e9)
            let backlogged = backloggedSince.load(ordering: .relaxed)
            return (phase == .replying && now > phaseStart.load(ordering: .relaxed) + limit)
                || (backlogged != 0 && now > backlogged + limit)
        }

        fileprivate var phaseStartedAt: UInt64 { phaseStart.load(ordering: .relaxed) }

        fileprivate func isOverdue(now: UInt64) -> Bool {
            let due = deadline.load(ordering: .relaxed)
            return due != 0 && now > due
        }

        fileprivate func disarm() { deadline.store(0, ordering: .relaxed) }

        private let shed = Atomic<Bool>(false)
        fileprivate var isShed: Bool { shed.load(ordering: .relaxed) }
        fileprivate func markShed() {
            shed.store(true, ordering: .relaxed)
            disarm()
        }
    }

    private let tracks = Locked<[Int32: Track]>([:])
    private let stopSignal = DispatchSemaphore(value: 0)
    private let stopped = DispatchSemaphore(value: 0)
    private let interval: Double
    private let onTimeout: @Sendable (Phase) -> Void
    private let onTick: @Sendable () -> Void

    /// - Parameter interval: how often deadlines are checked (a fraction of the shortest timeout).
    /// - Parameter onTick: called on every check (the log sampler's report).
    init(interval: Double, onTick: @escaping @Sendable () -> Void = {}, onTimeout: @escaping @Sendable (Phase) -> Void) {
        self.interval = interval
        self.onTick = onTick
        self.onTimeout = onTimeout
        let thread = Thread { [self] in run() }
        thread.name = "connection-watchdog"
        thread.start()
    }

    var openConnections: Int { tracks.withLock { $0.count } }

    func register(_ track: Track) {
        tracks.withLock { $0[track.descriptor] = track }
    }

    /// Why a connection was closed to keep the open connections within the limit.
    enum Refusal: String, ClosedMetricLabel {
        /// The oldest connection that has sent no request (new, or idle between requests) made room.
        case silentShed = "silent-shed"
        /// No silent connection, but one whose reply has waited for the client to read it for over
        /// `ConnectionWatchdog.slowReaderSeconds` (the longest-waiting one) made room.
        case slowReaderShed = "slow-reader-shed"
        /// Every other connection is busy with a request: the new one is closed at once.
        case overLimit = "over-limit"
    }

    /// A reply not yet taken by its client this long after it was queued marks a slow reader, shed
    /// at the connection limit like a silent connection. Replies are small (a few KiB; `/metrics`
    /// tens of KiB) and leave at once to a client that reads.
    static let slowReaderSeconds = 1.0

    /// Registers `track`; past `limit` open connections, closes a silent one (never sent a request
    /// line, or idle keep-alive: the oldest of the client holding the most), else the slow reader whose reply has waited longest
    /// (`slowReaderSeconds`), or else the new one. So connections that send nothing, or do not read
    /// what they asked for, cannot hold every slot while real ones wait in the listen queue: a new
    /// connection is served or refused at once. `shutdown(2)` only; libmicrohttpd closes and cleans
    /// up as usual.
    func admit(_ track: Track, limit: Int) -> Refusal? {
        tracks.withLock { tracks in
            tracks[track.descriptor] = track
            // Connections already shed are on their way out: they do not count.
            guard tracks.count > limit, tracks.values.lazy.filter({ !$0.isShed }).count > limit else { return nil }
            // Silent connections by client: the client holding the most loses its oldest (a new one
            // before an idle one), so a flood of empty connections from one address cannot push out
            // another client's slow but genuine one.
            var silent: [String: (count: Int, oldest: Track)] = [:]
            for candidate in tracks.values where candidate !== track && !candidate.isShed {
                let phase = candidate.phase
                guard phase == .new || phase == .idle else { continue }
                if let entry = silent[candidate.client] {
                    let older = Self.shedsBefore(candidate, entry.oldest) ? candidate : entry.oldest
                    silent[candidate.client] = (entry.count + 1, older)
                } else {
                    silent[candidate.client] = (1, candidate)
                }
            }
            var victim = silent.values.max { first, second in
                first.count != second.count ? first.count < second.count : Self.shedsBefore(second.oldest, first.oldest)
            }?.oldest
            var reason = Refusal.silentShed
            if victim == nil {
                let now = DispatchTime.now().uptimeNanoseconds
                for candidate in tracks.values
                where candidate !== track && !candidate.isShed
                    && candidate.isSlowReader(now: now, seconds: Self.slowReaderSeconds)
                {
                    if victim == nil || candidate.phaseStartedAt < victim!.phaseStartedAt { victim = candidate }
                }
                reason = .slowReaderShed
            }
            let closing = victim ?? track
            closing.markShed()
            shutdown(closing.descriptor, Int32(SHUT_RDWR))
            return victim == nil ? .overLimit : reason
        }
    }

    /// Of one client's silent connections, which goes first: a new one before an idle one, then the oldest.
    private static func shedsBefore(_ first: Track, _ second: Track) -> Bool {
        let (firstNew, secondNew) = (first.phase == .new, second.phase == .new)
        return firstNew != secondNew ? firstNew : first.openedAt < second.openedAt
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
            onTick()
            let now = DispatchTime.now().uptimeNanoseconds
            let expired = tracks.withLock { tracks in
                for track in tracks.values { track.sampleSendQueue(now: now) }
                return tracks.values.filter { $0.isOverdue(now: now) }.map { track in
                    track.disarm()
                    return track
                }
            }
            guard !expired.isEmpty else { continue }
            // Counted before the close, so whoever sees the close also sees the count.
            for track in expired { onTimeout(track.phase) }
            tracks.withLock { tracks in
                for track in expired where tracks[track.descriptor] === track { shutdown(track.descriptor, Int32(SHUT_RDWR)) }
            }
        }
        stopped.signal()
    }
}
