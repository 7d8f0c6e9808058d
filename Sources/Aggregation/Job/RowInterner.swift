#if canImport(Glibc)
import Glibc
#endif

/// Gives each distinct row key a dense id, storing every key once in one byte arena.
///
/// Open addressing over a power-of-two table with linear probing; keys are compared with memcmp
/// after their 64-bit hashes match. No per-key allocation: memory is the arena plus 24 bytes a row,
/// which is what bounds the job (rows, not postbacks). Storage is manually managed because this is
/// the hottest structure of the job and Swift arrays in a class pay a dynamic exclusivity check
/// on every access.
final class RowInterner {
    private var arena: GrowableBuffer<UInt8>
    private var starts: GrowableBuffer<Int>
    private var lengths: GrowableBuffer<Int32>
    private var hashes: GrowableBuffer<UInt64>
    private var slots: UnsafeMutablePointer<Int32>
    private var slotCount: Int

    init(capacity: Int = 1024) {
        var size = 16
        while size < capacity * 2 { size <<= 1 }
        slotCount = size
        slots = .allocate(capacity: size)
        slots.initialize(repeating: -1, count: size)
        arena = GrowableBuffer(capacity: capacity * 96)
        starts = GrowableBuffer(capacity: capacity)
        lengths = GrowableBuffer(capacity: capacity)
        hashes = GrowableBuffer(capacity: capacity)
    }

    deinit {
        slots.deallocate()
        arena.free()
        starts.free()
        lengths.free()
        hashes.free()
    }

    var count: Int { starts.count }

    /// The id of `key`, adding it if new.
    func intern(_ key: UnsafeRawBufferPointer) -> UInt32 {
        let hash = Hash128.of(key).low
        // Local copies: reading the class's stored properties in the loop would check exclusivity each time.
        let mask = slotCount - 1
        let slotsPointer = slots, hashes = self.hashes, lengths = self.lengths, starts = self.starts, arena = self.arena.base
        var slot = Int(truncatingIfNeeded: hash) & mask
        while true {
            let id = Int(slotsPointer[slot])
            if id < 0 { break }
            if hashes[id] == hash && Int(lengths[id]) == key.count
                && (key.count == 0 || memcmp(arena + starts[id], key.baseAddress!, key.count) == 0) {
                return UInt32(id)
            }
            slot = (slot + 1) & mask
        }
        let id = starts.count
        self.starts.append(self.arena.count)
        self.lengths.append(Int32(key.count))
        self.hashes.append(hash)
        self.arena.append(key)
        slotsPointer[slot] = Int32(id)
        if starts.count * 2 > slotCount { grow() }
        return UInt32(id)
    }

    func intern(_ key: [UInt8]) -> UInt32 { key.withUnsafeBytes { intern($0) } }

    /// The bytes of row `id`, valid until the next `intern`.
    func key(_ id: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: arena.base + starts[id], count: Int(lengths[id]))
    }

    /// Calls `body` with the bytes of row `id`.
    func withKey<R>(_ id: Int, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R { try body(key(id)) }

    private func grow() {
        let size = slotCount * 2
        let fresh = UnsafeMutablePointer<Int32>.allocate(capacity: size)
        fresh.initialize(repeating: -1, count: size)
        let mask = size - 1
        for id in 0..<starts.count {
            var slot = Int(truncatingIfNeeded: hashes[id]) & mask
            while fresh[slot] >= 0 { slot = (slot + 1) & mask }
            fresh[slot] = Int32(id)
        }
        slots.deallocate()
        slots = fresh
        slotCount = size
    }
}

/// A manually managed growable array of trivial values, for hot paths (no copy-on-write, no
/// exclusivity checks). The owner calls `free()` exactly once.
struct GrowableBuffer<Element: BitwiseCopyable> {
    private(set) var base: UnsafeMutablePointer<Element>
    private(set) var count = 0
    private var capacity: Int

    init(capacity: Int) {
        self.capacity = max(16, capacity)
        base = .allocate(capacity: self.capacity)
    }

    func free() { base.deallocate() }

    @inline(__always)
    subscript(index: Int) -> Element {
        get { base[index] }
        nonmutating set { base[index] = newValue }
    }

    @inline(__always)
    mutating func append(_ element: Element) {
        if count == capacity { reserve(count + 1) }
        base[count] = element
        count += 1
    }

    mutating func append(_ bytes: UnsafeRawBufferPointer) where Element == UInt8 {
        if count + bytes.count > capacity { reserve(count + bytes.count) }
        if bytes.count > 0 { (base + count).update(from: bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), count: bytes.count) }
        count += bytes.count
    }

    mutating func removeAll() { count = 0 }

    private mutating func reserve(_ needed: Int) {
        var size = capacity
        while size < needed { size *= 2 }
        let fresh = UnsafeMutablePointer<Element>.allocate(capacity: size)
        fresh.update(from: base, count: count)
        base.deallocate()
        base = fresh
        capacity = size
    }
}
