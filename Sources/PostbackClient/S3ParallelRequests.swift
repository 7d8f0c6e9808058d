import Dispatch
import Locking

extension S3Client {
    /// Runs `body` once for every key, on `connections` clients of this location at once (one request
    /// at a time leaves a loopback or LAN link mostly idle). The first error stops the remaining keys
    /// and is thrown once every running `body` has returned.
    package func forEachKey(_ keys: [String], connections: Int = 4, _ body: @Sendable (S3Client, String) throws -> Void) throws {
        let location = location
        let settings = settings
        let failure = Locked<(any Error)?>(nil)
        let next = Locked(0)
        DispatchQueue.concurrentPerform(iterations: min(max(1, connections), max(1, keys.count))) { _ in
            guard !keys.isEmpty else { return }
            let client: S3Client
            do { client = try S3Client(location: location, settings: settings) } catch {
                failure.withLock { $0 = $0 ?? error }
                return
            }
            while true {
                let position = next.withLock { value -> Int in
                    defer { value += 1 }
                    return value
                }
                guard position < keys.count, failure.withLock({ $0 == nil }) else { return }
                do { try body(client, keys[position]) } catch { failure.withLock { $0 = $0 ?? error } }
            }
        }
        if let error = failure.withLock({ $0 }) { throw error }
    }
}
