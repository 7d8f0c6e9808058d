/// Apache Thrift's compact protocol, the encoding of Parquet's footer (`FileMetaData`) and page
/// headers (`PageHeader`): only what writing those structs needs. Fields are written in increasing
/// id order inside `structure`; a field's header holds the id's delta from the previous field of the
/// same struct (or the full id when the delta is not 1…15), so each nested struct starts again at 0.
struct ThriftCompactWriter {
    /// The compact protocol's type codes.
    enum FieldType: UInt8 {
        case booleanTrue = 1
        case booleanFalse = 2
        case byte = 3
        case i16 = 4
        case i32 = 5
        case i64 = 6
        case double = 7
        case binary = 8
        case list = 9
        case set = 10
        case map = 11
        case structure = 12
    }

    private(set) var bytes: [UInt8] = []
    private var lastFieldID: [Int16] = [0]

    init() {}

    // MARK: Fields

    mutating func field(_ id: Int16, i32 value: Int32) {
        fieldHeader(id, .i32)
        varint(zigzag(Int64(value)))
    }

    mutating func field(_ id: Int16, i16 value: Int16) {
        fieldHeader(id, .i16)
        varint(zigzag(Int64(value)))
    }

    mutating func field(_ id: Int16, i64 value: Int64) {
        fieldHeader(id, .i64)
        varint(zigzag(value))
    }

    mutating func field(_ id: Int16, bool value: Bool) {
        fieldHeader(id, value ? .booleanTrue : .booleanFalse)
    }

    mutating func field(_ id: Int16, binary value: [UInt8]) {
        fieldHeader(id, .binary)
        varint(UInt64(value.count))
        bytes.append(contentsOf: value)
    }

    mutating func field(_ id: Int16, string value: String) { field(id, binary: Array(value.utf8)) }

    /// A nested struct: `body` writes its fields.
    mutating func field(_ id: Int16, structure body: (inout ThriftCompactWriter) -> Void) {
        fieldHeader(id, .structure)
        structure(body)
    }

    /// A list of structs.
    mutating func field<Element>(
        _ id: Int16, structs elements: [Element], _ body: (inout ThriftCompactWriter, Element) -> Void
    ) {
        fieldHeader(id, .list)
        listHeader(count: elements.count, .structure)
        for element in elements { structure { body(&$0, element) } }
    }

    mutating func field(_ id: Int16, i32s elements: [Int32]) {
        fieldHeader(id, .list)
        listHeader(count: elements.count, .i32)
        for element in elements { varint(zigzag(Int64(element))) }
    }

    mutating func field(_ id: Int16, strings elements: [String]) {
        fieldHeader(id, .list)
        listHeader(count: elements.count, .binary)
        for element in elements {
            let utf8 = Array(element.utf8)
            varint(UInt64(utf8.count))
            bytes.append(contentsOf: utf8)
        }
    }

    /// A struct (the top level, a list element or a field's value): its fields, then the stop byte.
    mutating func structure(_ body: (inout ThriftCompactWriter) -> Void) {
        lastFieldID.append(0)
        body(&self)
        bytes.append(0)  // STOP
        lastFieldID.removeLast()
    }

    // MARK: Encoding

    private mutating func fieldHeader(_ id: Int16, _ type: FieldType) {
        let last = lastFieldID[lastFieldID.count - 1]
        precondition(id > last, "Thrift fields are written in increasing id order")
        let delta = id - last
        if delta <= 15 {
            bytes.append(UInt8(delta) << 4 | type.rawValue)
        } else {
            bytes.append(type.rawValue)
            varint(zigzag(Int64(id)))
        }
        lastFieldID[lastFieldID.count - 1] = id
    }

    private mutating func listHeader(count: Int, _ type: FieldType) {
        if count < 15 {
            bytes.append(UInt8(count) << 4 | type.rawValue)
        } else {
            bytes.append(0xF0 | type.rawValue)
            varint(UInt64(count))
        }
    }

    private func zigzag(_ value: Int64) -> UInt64 { UInt64(bitPattern: (value << 1) ^ (value >> 63)) }

    private mutating func varint(_ value: UInt64) { ParquetBytes.appendULEB128(value, to: &bytes) }
}

/// Little-endian and variable-length integers, as Parquet's pages and Thrift write them.
enum ParquetBytes {
    static func appendULEB128(_ value: UInt64, to bytes: inout [UInt8]) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    static func appendLittleEndian(_ value: UInt32, to bytes: inout [UInt8]) {
        bytes.append(UInt8(truncatingIfNeeded: value))
        bytes.append(UInt8(truncatingIfNeeded: value >> 8))
        bytes.append(UInt8(truncatingIfNeeded: value >> 16))
        bytes.append(UInt8(truncatingIfNeeded: value >> 24))
    }

    static func appendLittleEndian(_ value: UInt64, to bytes: inout [UInt8]) {
        appendLittleEndian(UInt32(truncatingIfNeeded: value), to: &bytes)
        appendLittleEndian(UInt32(truncatingIfNeeded: value >> 32), to: &bytes)
    }

    /// A 128-bit two's-complement integer, big-endian: a DECIMAL stored as FIXED_LEN_BYTE_ARRAY(16).
    static func appendBigEndian(_ value: Int128, to bytes: inout [UInt8]) {
        let bits = UInt128(bitPattern: value)
        for shift in stride(from: 120, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: bits >> UInt128(shift))) }
    }
}
