import AggregateSchema
import Basics
import PostbackStore
import Postbacks

/// The grain of an aggregate row as a compact byte string: what the interner hashes and compares,
/// and what the output stage reads back as a `RowView`.
///
/// Everything that decides a row's columns is in it; what the schema derives (label, revenue,
/// campaign/geo/placement) is not, because it follows from these fields and is computed once per row
/// at the end. Layout: kind, est-install day, then the stored fields of `grain` in that order, each
/// as its declared kind (`AttributionField.storage`): a string as a 16-bit length (0xFFFF = absent)
/// and its bytes (the ad network id lower-cased); an integer as its byte count (0 = absent) and that
/// many little-endian bytes; a boolean or a choice as one byte (0 = absent).
final class RowKeyEncoder {
    /// The stored fields that place a postback in a row, in key order (`RowView` reads them back in
    /// it): every field a column of `postback_detail_daily` shows, in column order. A field is in the grain
    /// exactly when a table shows it, so a row never splits on a value no column shows.
    static let grain: [AttributionField] = AggregateTables.detailInOrder.compactMap {
        if case .field(let field) = $0 { return field.field } else { return nil }
    }

    /// `grain` with each field's kind, as a table the per-postback loop (and `RowView`, per row)
    /// reads without reference counting; written once here and only read afterwards, so threads
    /// share it safely.
    nonisolated(unsafe) static let grainSteps: UnsafeMutableBufferPointer<Step> = {
        let steps = UnsafeMutableBufferPointer<Step>.allocate(capacity: grain.count)
        _ = steps.initialize(
            from: grain.map { Step(field: $0, slot: $0.rawValue, storage: $0.storage, lowercased: $0 == .adNetworkID) })
        return steps
    }()

    struct Step {
        let field: AttributionField
        /// `field.rawValue`: its slot. The enum's `rawValue` is a call from this module.
        let slot: Int
        let storage: AttributionField.Storage
        /// Ad network ids group case-insensitively: Apple's own examples differ in case.
        let lowercased: Bool
    }

    /// What a rejected record's row keeps of `grain`: what the record claims to be. The rest is absent.
    static let rejectedFields: Set<AttributionField> = [.appID, .postbackProtocol, .version, .adNetworkID]

    enum Kind: UInt8 {
        /// A verified postback's row.
        case postback = 0
        /// A rejected record, counted by what it claims to be (app, protocol, version, network).
        case rejected = 1
    }

    /// Manually managed: encoding runs once per postback, and appending to an array held by a class
    /// pays a uniqueness and an exclusivity check per byte.
    private var buffer = GrowableBuffer<UInt8>(capacity: 256)
    /// The text of a rejected record's fields, for `encodeRejected`.
    private var scratch: [UInt8] = []

    deinit { buffer.free() }

    /// The last encoded key, valid until the next encode.
    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: buffer.base, count: buffer.count) }

    /// Encodes a verified postback's fields; strings are read from `base`.
    func encodePostback(_ fields: FieldSlots, installDay: UTCDay, base: UnsafeRawBufferPointer) {
        encode(.postback, installDay: Int32(truncatingIfNeeded: installDay.daysSinceEpoch), fields, base: base)
    }

    /// Encodes a rejected record's row: only what it claims to identify, the rest absent.
    func encodeRejected(appID: Int64?, postbackProtocol: PostbackProtocol?, version: String?, adNetworkID: String?) {
        scratch.removeAll(keepingCapacity: true)
        var fields = PostbackFields()
        fields.set(.appID, appID)
        fields.setChoice(.postbackProtocol, postbackProtocol.flatMap { PostbackProtocol.allCases.firstIndex(of: $0) })
        fields.set(.version, ByteSlice.appending(version, to: &scratch))
        fields.set(.adNetworkID, ByteSlice.appending(adNetworkID, to: &scratch))
        FieldSlots.reading(fields) { slots in
            scratch.withUnsafeBytes { encode(.rejected, installDay: Int32.min, slots, base: $0) }
        }
    }

    private func encode(_ kind: Kind, installDay: Int32, _ slots: FieldSlots, base: UnsafeRawBufferPointer) {
        var out = buffer
        out.removeAll()
        out.append(kind.rawValue)
        Self.appendInt32(installDay, to: &out)
        for step in UnsafeBufferPointer(Self.grainSteps) {
            switch step.storage {
            case .slice: Self.appendString(slots.range(step.slot), base: base, lowercased: step.lowercased, to: &out)
            case .integer: Self.appendOptional(slots.value(step.slot), to: &out)
            case .boolean: out.append(slots.value(step.slot).map { $0 != 0 ? 2 : 1 } ?? 0)
            case .choice: out.append(slots.value(step.slot).map { UInt8(truncatingIfNeeded: $0 + 1) } ?? 0)
            }
        }
        buffer = out
    }

    @inline(__always)
    private static func appendInt32(_ value: Int32, to out: inout GrowableBuffer<UInt8>) {
        withUnsafeBytes(of: value.littleEndian) { out.append($0) }
    }

    /// The byte count of `value` (1–8, so that small numbers take few bytes), then its low bytes.
    @inline(__always)
    private static func appendOptional(_ value: Int64?, to out: inout GrowableBuffer<UInt8>) {
        guard let value else {
            out.append(0)
            return
        }
        let count = max(1, 8 - UInt64(bitPattern: value).leadingZeroBitCount / 8)
        out.append(UInt8(count))
        out.appendLowBytes(of: UInt64(bitPattern: value), count: count)
    }

    @inline(__always)
    private static func appendString(
        _ range: (start: Int, count: Int)?, base: UnsafeRawBufferPointer, lowercased: Bool = false,
        to out: inout GrowableBuffer<UInt8>
    ) {
        guard let range else {
            out.append(0xFF)
            out.append(0xFF)
            return
        }
        let count = min(range.count, 0xFFFE)
        out.append(UInt8(count & 0xFF))
        out.append(UInt8(count >> 8))
        precondition(range.start >= 0 && range.start + count <= base.count, "a field outside its line")
        let source = base.baseAddress! + range.start
        if lowercased {
            out.appendWords(from: source, count: count, Self.asciiLowercased)
        } else {
            out.appendWords(from: source, count: count) { $0 }
        }
    }

    /// Each byte of `word` lower-cased if it is an ASCII capital, eight at a time; other bytes
    /// (UTF-8 included) unchanged. A byte loop over the ad network id was a third of the encoding.
    @inline(__always)
    static func asciiLowercased(_ word: UInt64) -> UInt64 {
        let high: UInt64 = 0x8080_8080_8080_8080
        let ones: UInt64 = 0x0101_0101_0101_0101
        let sevenBits = word & ~high
        // High bit of each byte: its low seven bits are at least "A", and above "Z" (no carries: ≤ 0xBE).
        let atLeastA = sevenBits &+ (0x80 - 0x41) &* ones
        let aboveZ = sevenBits &+ (0x80 - 0x5B) &* ones
        let capitals = atLeastA & ~aboveZ & ~word & high
        return word | capitals &>> 2
    }
}
