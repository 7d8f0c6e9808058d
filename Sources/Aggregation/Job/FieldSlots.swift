import PostbackStore

/// `PostbackFields` read through a pointer, for the per-postback and per-row loops.
///
/// Swift 6.3 does not inline `@inlinable package` functions across modules, so each of
/// `PostbackFields`' accessors was a call here, and indexing the slots of a struct passed by value
/// copies all of them; together that made the declaration-driven row key and renderer slower than
/// the hand-written ones. These reads are Aggregation's own (inlined), over slots copied once.
struct FieldSlots {
    let present: UInt32
    let slots: UnsafePointer<Int64>

    /// Calls `body` with `fields`' slots; the pointer is valid only inside it.
    @inline(__always)
    static func reading<Result>(_ fields: PostbackFields, _ body: (FieldSlots) -> Result) -> Result {
        var slots = fields.slots
        return withUnsafePointer(to: &slots) {
            // The array's own count is a constant here; `PostbackFields.capacity` would be a call.
            $0.withMemoryRebound(to: Int64.self, capacity: fields.slots.count) {
                body(FieldSlots(present: fields.present, slots: $0))
            }
        }
    }

    /// The value in `slot` (an `AttributionField.rawValue`), nil when the field has none.
    @inline(__always)
    func value(_ slot: Int) -> Int64? {
        // A masking shift: `slot` is below 32 by construction, and the checked one traps-tests it per read.
        present &>> UInt32(truncatingIfNeeded: slot) & 1 != 0 ? slots[slot] : nil
    }

    /// A string field's bytes in the line, unpacked here as `ByteSlice(slot:)` does (start in the low
    /// half, count in the high): that initializer and `ByteSlice`'s accessors are calls from this module.
    @inline(__always)
    func range(_ slot: Int) -> (start: Int, count: Int)? {
        value(slot).map { (Int(Int32(truncatingIfNeeded: $0)), Int(Int32(truncatingIfNeeded: $0 >> 32))) }
    }

    @inline(__always)
    func integer(_ field: AttributionField) -> Int? { value(field.rawValue).map { Int(truncatingIfNeeded: $0) } }

    @inline(__always)
    func boolean(_ field: AttributionField) -> Bool? { value(field.rawValue).map { $0 != 0 } }
}
