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

/// A Thrift compact-protocol value as read: structs by field id, lists, integers (every width),
/// binaries and booleans (doubles, sets and maps are skipped as `other`).
enum ThriftValue {
    case integer(Int64)
    case binary([UInt8])
    case boolean(Bool)
    case list([ThriftValue])
    case structure(ThriftStruct)
    case other

    func structure() throws -> ThriftStruct {
        guard case .structure(let value) = self else { throw ParquetError.unsupported("a Thrift value that is not a struct") }
        return value
    }
}

struct ThriftStruct {
    var fields: [Int16: ThriftValue] = [:]

    func int(_ id: Int16) throws -> Int64 {
        guard case .integer(let value)? = fields[id] else {
            throw ParquetError.unsupported("Thrift field \(id) missing or not an integer")
        }
        return value
    }

    func string(_ id: Int16) throws -> String {
        guard case .binary(let value)? = fields[id] else {
            throw ParquetError.unsupported("Thrift field \(id) missing or not a string")
        }
        return String(decoding: value, as: UTF8.self)
    }

    func list(_ id: Int16) throws -> [ThriftValue] {
        guard case .list(let value)? = fields[id] else {
            throw ParquetError.unsupported("Thrift field \(id) missing or not a list")
        }
        return value
    }

    func structure(_ id: Int16) throws -> ThriftStruct {
        guard let value = fields[id] else { throw ParquetError.unsupported("Thrift field \(id) missing") }
        return try value.structure()
    }
}

/// Reads the compact protocol: a struct starting at `position`, which it leaves after the struct.
struct ThriftCompactReader {
    let bytes: [UInt8]
    var position: Int
    private var depth = 0

    init(_ bytes: [UInt8], at position: Int) {
        self.bytes = bytes
        self.position = position
    }

    mutating func structure() throws -> ThriftStruct {
        depth += 1
        defer { depth -= 1 }
        guard depth < 32 else { throw ParquetError.unsupported("Thrift structs nested too deep") }
        var result = ThriftStruct()
        var last: Int16 = 0
        while true {
            let header = try byte()
            if header == 0 { return result }
            let type = header & 0x0F
            let delta = Int16(header >> 4)
            let id = delta == 0 ? Int16(truncatingIfNeeded: unzigzag(try varint())) : last + delta
            last = id
            switch type {
            case 1: result.fields[id] = .boolean(true)
            case 2: result.fields[id] = .boolean(false)
            default: result.fields[id] = try value(type)
            }
        }
    }

    private mutating func value(_ type: UInt8) throws -> ThriftValue {
        switch type {
        case 1, 2: return .boolean(try byte() == 1)  // a boolean list element
        case 3: return .integer(Int64(Int8(bitPattern: try byte())))
        case 4, 5, 6: return .integer(unzigzag(try varint()))
        case 7:
            position += 8
            return .other
        case 8:
            let length = Int(try varint())
            guard length >= 0, position + length <= bytes.count else {
                throw ParquetError.unsupported("a Thrift binary past the end")
            }
            defer { position += length }
            return .binary(Array(bytes[position..<(position + length)]))
        case 9, 10:
            let header = try byte()
            let count = header >> 4 == 15 ? Int(try varint()) : Int(header >> 4)
            guard count <= bytes.count - position else { throw ParquetError.unsupported("a Thrift list longer than the file") }
            var elements: [ThriftValue] = []
            for _ in 0..<count { elements.append(try value(header & 0x0F)) }
            return .list(elements)
        case 11:
            let count = Int(try varint())
            guard count <= bytes.count - position else { throw ParquetError.unsupported("a Thrift map longer than the file") }
            if count > 0 {
                let types = try byte()
                for _ in 0..<count {
                    _ = try value(types >> 4)
                    _ = try value(types & 0x0F)
                }
            }
            return .other
        case 12: return .structure(try structure())
        default: throw ParquetError.unsupported("Thrift type \(type)")
        }
    }

    private mutating func byte() throws -> UInt8 {
        guard position < bytes.count else { throw ParquetError.unsupported("Thrift data past the end") }
        defer { position += 1 }
        return bytes[position]
    }

    private mutating func varint() throws -> UInt64 {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let next = try byte()
            value |= UInt64(next & 0x7F) << shift
            if next & 0x80 == 0 { return value }
            shift += 7
            guard shift < 64 else { throw ParquetError.unsupported("an over-long Thrift varint") }
        }
    }

    private func unzigzag(_ value: UInt64) -> Int64 { Int64(bitPattern: value >> 1) ^ -Int64(bitPattern: value & 1) }
}
