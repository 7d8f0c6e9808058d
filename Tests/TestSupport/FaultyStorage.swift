package import Dispatch
package import PostbackStore
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Storage that fails on demand: the fault-injection seam for the 500-then-recover path.
package final class FaultyStorage: SpoolStorage {
    package enum Fault: Sendable { case none, failWrites, failSyncs }

    package init() {}

    private let real = POSIXSpoolStorage()
    private let fault = Mutex(Fault.none)
    /// When set, `sync` waits for `releaseSync` (to hold a request in flight).
    private let holdSyncs = Atomic<Bool>(false)
    package let syncEntered = DispatchSemaphore(value: 0)
    package let syncRelease = DispatchSemaphore(value: 0)

    package func inject(_ newFault: Fault) { fault.withLock { $0 = newFault } }
    package func holdNextSyncs(_ hold: Bool) { holdSyncs.store(hold, ordering: .relaxed) }

    private var current: Fault { fault.withLock { $0 } }

    package func makeDirectories(_ directory: String) throws(StorageError) { try real.makeDirectories(directory) }
    package func createSegment(_ path: String) throws(StorageError) -> Int32 { try real.createSegment(path) }

    package func append(_ bytes: [UInt8], to descriptor: Int32, path: String) throws(StorageError) {
        if current == .failWrites { throw StorageError(operation: "write", path: path, errorNumber: ENOSPC) }
        try real.append(bytes, to: descriptor, path: path)
    }

    package func sync(_ descriptor: Int32, path: String) throws(StorageError) {
        if holdSyncs.load(ordering: .relaxed) {
            syncEntered.signal()
            syncRelease.wait()
        }
        if current == .failSyncs { throw StorageError(operation: "fdatasync", path: path, errorNumber: EIO) }
        try real.sync(descriptor, path: path)
    }

    package func syncDirectory(_ directory: String) throws(StorageError) { try real.syncDirectory(directory) }
    package func truncate(_ descriptor: Int32, to length: Int) { real.truncate(descriptor, to: length) }
    package func close(_ descriptor: Int32) { real.close(descriptor) }

    package func probe(_ directory: String) throws(StorageError) {
        if current != .none { throw StorageError(operation: "probe", path: directory, errorNumber: EIO) }
        try real.probe(directory)
    }
}
