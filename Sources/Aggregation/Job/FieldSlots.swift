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
            $0.withMemoryRebound(to: Int64.self, capacity: PostbackFields.capacity) {
                body(FieldSlots(present: fields.present, slots: $0))
            }
        }
    }

    /// The value in `slot` (an `AttributionField.rawValue`), nil when the field has none.
    @inline(__always)
    func value(_ slot: Int) -> Int64? {
        present & 1 << UInt32(slot) != 0 ? slots[slot] : nil
    }

    @inline(__always)
    func slice(_ slot: Int) -> ByteSlice? { value(slot).map(ByteSlice.init(slot:)) }

    @inline(__always)
    func integer(_ field: AttributionField) -> Int? { value(field.rawValue).map { Int(truncatingIfNeeded: $0) } }

    @inline(__always)
    func boolean(_ field: AttributionField) -> Bool? { value(field.rawValue).map { $0 != 0 } }
}
