import Basics

/// An exclusive `flock` on `DATA/agg/.lock`, so two aggregation runs never write the same
/// partitions or clear each other's work directory. Released when the object goes away (or the
/// process dies: the kernel drops flocks with the descriptor).
final class StoreLock {
    private let lock: FileLock

    init(path: String) throws(AggregationError) {
        do throws(FileLock.Failure) {
            lock = try FileLock(path: path)
        } catch {
            switch error {
            case .heldElsewhere: throw .locked(path: path)
            case .system(let failure): throw .system(failure)
            }
        }
    }
}
