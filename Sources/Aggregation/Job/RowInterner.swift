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
    /// Everything in one value, so the probe loop reads the object's state with a single access
    /// (each read of a class's stored `var` is checked for exclusivity).
    private struct Storage {
        var arena: GrowableBuffer<UInt8>
        var starts: GrowableBuffer<Int>
        var lengths: GrowableBuffer<Int32>
        var hashes: GrowableBuffer<UInt64>
        var slots: UnsafeMutablePointer<Int32>
        var slotCount: Int
    }

    private var storage: Storage

    init(capacity: Int = 1024) {
        var size = 16
        while size < capacity * 2 { size <<= 1 }
        let slots = UnsafeMutablePointer<Int32>.allocate(capacity: size)
        slots.initialize(repeating: -1, count: size)
        storage = Storage(
            arena: GrowableBuffer(capacity: capacity * 96), starts: GrowableBuffer(capacity: capacity),
            lengths: GrowableBuffer(capacity: capacity), hashes: GrowableBuffer(capacity: capacity), slots: slots, slotCount: size
        )
    }

    deinit {
        storage.slots.deallocate()
        storage.arena.free()
        storage.starts.free()
        storage.lengths.free()
        storage.hashes.free()
    }

    var count: Int { storage.starts.count }

    /// The id of `key`, adding it if new.
    func intern(_ key: UnsafeRawBufferPointer) -> UInt32 {
        let hash = Hash128.of(key).low
        var state = storage
        let mask = state.slotCount - 1
        var slot = Int(truncatingIfNeeded: hash) & mask
        while true {
            let id = Int(state.slots[slot])
            if id < 0 { break }
            if state.hashes[id] == hash && Int(state.lengths[id]) == key.count
                && (key.count == 0 || memcmp(state.arena.base + state.starts[id], key.baseAddress!, key.count) == 0)
            {
                return UInt32(id)
            }
            slot = (slot + 1) & mask
        }
        let id = state.starts.count
        state.starts.append(state.arena.count)
        state.lengths.append(Int32(key.count))
        state.hashes.append(hash)
        state.arena.append(key)
        state.slots[slot] = Int32(id)
        if state.starts.count * 2 > state.slotCount { Self.grow(&state) }
        storage = state
        return UInt32(id)
    }

    func intern(_ key: [UInt8]) -> UInt32 { key.withUnsafeBytes { intern($0) } }

    /// The bytes of row `id`, valid until the next `intern`.
    func key(_ id: Int) -> UnsafeRawBufferPointer {
        let state = storage
        return UnsafeRawBufferPointer(start: state.arena.base + state.starts[id], count: Int(state.lengths[id]))
    }

    private static func grow(_ state: inout Storage) {
        let size = state.slotCount * 2
        let fresh = UnsafeMutablePointer<Int32>.allocate(capacity: size)
        fresh.initialize(repeating: -1, count: size)
        let mask = size - 1
        for id in 0..<state.starts.count {
            var slot = Int(truncatingIfNeeded: state.hashes[id]) & mask
            while fresh[slot] >= 0 { slot = (slot + 1) & mask }
            fresh[slot] = Int32(id)
        }
        state.slots.deallocate()
        state.slots = fresh
        state.slotCount = size
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
        if bytes.count > 0 {
            (base + count).update(from: bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), count: bytes.count)
        }
        count += bytes.count
    }

    /// Appends the low `count` (at most 8) bytes of `value`, little-endian, with one store: the
    /// row key writes a few bytes per integer, and a copy call per integer showed in profiles.
    mutating func appendLowBytes(of value: UInt64, count byteCount: Int) where Element == UInt8 {
        // Room for all 8: the store may write past `count`, into capacity that stays unused.
        if count + 8 > capacity { reserve(count + 8) }
        UnsafeMutableRawPointer(base + count).storeBytes(of: value.littleEndian, as: UInt64.self)
        count += byteCount
    }

    /// Appends `byteCount` bytes from `source`, eight at a time, each word passed through
    /// `transform`, which must map each byte on its own (the last word may overlap the one before).
    /// The fields of a row key are short: a call to memcpy per field showed in profiles.
    @inline(__always)
    mutating func appendWords(from source: UnsafeRawPointer, count byteCount: Int, _ transform: (UInt64) -> UInt64)
    where Element == UInt8 {
        if count + byteCount > capacity { reserve(count + byteCount) }
        let target = UnsafeMutableRawPointer(base + count)
        if byteCount >= 8 {
            var offset = 0
            while offset + 8 <= byteCount {
                target.storeBytes(
                    of: transform(source.loadUnaligned(fromByteOffset: offset, as: UInt64.self)), toByteOffset: offset,
                    as: UInt64.self)
                offset += 8
            }
            if offset < byteCount {
                let last = byteCount - 8
                target.storeBytes(
                    of: transform(source.loadUnaligned(fromByteOffset: last, as: UInt64.self)), toByteOffset: last,
                    as: UInt64.self)
            }
        } else {
            for offset in 0..<byteCount {
                let byte = UInt64(source.load(fromByteOffset: offset, as: UInt8.self))
                target.storeBytes(of: UInt8(truncatingIfNeeded: transform(byte)), toByteOffset: offset, as: UInt8.self)
            }
        }
        count += byteCount
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
