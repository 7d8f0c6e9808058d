#if canImport(Glibc)
    import Glibc
#endif

/// One column chunk: the rows of one row group of one column, as an optional dictionary page and one
/// v1 data page, each preceded by its Thrift `PageHeader`.
enum ChunkEncoder {
    /// Writes `column`'s `rows` to `out`. `firstValue` is the index of the first non-null value of
    /// these rows, advanced past them.
    static func write(
        _ column: ParquetColumn, rows: Range<Int>, firstValue: inout Int, to out: inout [UInt8], compressor: Zstd.Compressor
    ) throws -> ChunkMeta {
        var present = 0
        if column.nullable {
            for row in rows where column.isPresent(row) { present += 1 }
        } else {
            present = rows.count
        }
        let values = firstValue..<(firstValue + present)
        firstValue += present
        let dictionary = Dictionary(column, values)
        // The extremes of a dictionary-encoded chunk are among its distinct values.
        let extremes = if let dictionary { extremes(column, dictionary.entryValues) } else { extremes(column, values) }
        let statistics = ChunkStatistics(
            nullCount: rows.count - present, min: extremes.map { statisticsValue(column, $0.min) },
            max: extremes.map { statisticsValue(column, $0.max) })

        // Definition levels: 4-byte length, then the hybrid encoding (width 1).
        var levels: [UInt8] = []
        if column.nullable {
            var encoded: [UInt8] = []
            if present == rows.count && rows.count >= 8 {
                // No null: the one run `encode` would write, without building a level per row.
                RLEHybridEncoder.appendRun(1, count: rows.count, bitWidth: 1, into: &encoded)
            } else {
                RLEHybridEncoder.encode(rows.map { column.isPresent($0) ? 1 : 0 }, bitWidth: 1, into: &encoded)
            }
            ParquetBytes.appendLittleEndian(UInt32(encoded.count), to: &levels)
            levels.append(contentsOf: encoded)
        }

        var data = levels
        if let dictionary {
            data.append(UInt8(dictionary.bitWidth))
            RLEHybridEncoder.encode(dictionary.indices, bitWidth: dictionary.bitWidth, into: &data)
        } else {
            appendPlain(column, values, to: &data)
        }
        // zstd for the chunk's pages, unless that makes them no smaller (a tiny or random chunk):
        // the codec is the chunk's, so then every page is stored as it is.
        let dictionaryPage = dictionary.map { ($0.plain, compressor.compress($0.plain)) }
        let dataPage = (data, compressor.compress(data))
        let compresses =
            (dictionaryPage?.1.count ?? 0) + dataPage.1.count < (dictionaryPage?.0.count ?? 0) + dataPage.0.count

        let startOffset = out.count
        var uncompressedTotal = 0
        var dictionaryOffset: Int?
        if let dictionary, let (plain, compressed) = dictionaryPage {
            dictionaryOffset = out.count
            uncompressedTotal += try writePage(
                plain, compresses ? compressed : plain, to: &out,
                header: { w, uncompressed, compressed in
                    w.field(1, i32: 2)  // DICTIONARY_PAGE
                    w.field(2, i32: uncompressed)
                    w.field(3, i32: compressed)
                    w.field(7) {
                        $0.field(1, i32: Int32(dictionary.count))
                        $0.field(2, i32: Encoding.plain)
                    }
                })
        }
        let dataOffset = out.count
        let encoding = dictionary == nil ? Encoding.plain : Encoding.rleDictionary
        uncompressedTotal += try writePage(
            dataPage.0, compresses ? dataPage.1 : dataPage.0, to: &out,
            header: { w, uncompressed, compressed in
                w.field(1, i32: 0)  // DATA_PAGE
                w.field(2, i32: uncompressed)
                w.field(3, i32: compressed)
                w.field(5) {
                    $0.field(1, i32: Int32(rows.count))
                    $0.field(2, i32: encoding)
                    $0.field(3, i32: Encoding.rle)  // definition levels
                    $0.field(4, i32: Encoding.rle)  // repetition levels (none: no repeated fields)
                }
            })
        return ChunkMeta(
            rows: rows.count, startOffset: startOffset, dictionaryOffset: dictionaryOffset, dataOffset: dataOffset,
            uncompressedSize: uncompressedTotal, compressedSize: out.count - startOffset, compressed: compresses,
            statistics: statistics)
    }

    /// Appends a page's header and its `stored` body (`body` compressed, or `body`); returns the
    /// header's size plus the body's uncompressed size (what `total_uncompressed_size` counts).
    private static func writePage(
        _ body: [UInt8], _ compressed: [UInt8], to out: inout [UInt8],
        header: (inout ThriftCompactWriter, _ uncompressed: Int32, _ compressed: Int32) -> Void
    ) throws -> Int {
        guard body.count <= Int(Int32.max), compressed.count <= Int(Int32.max) else { throw ParquetError.tooLarge("a page") }
        var w = ThriftCompactWriter()
        w.structure { header(&$0, Int32(body.count), Int32(compressed.count)) }
        out.append(contentsOf: w.bytes)
        out.append(contentsOf: compressed)
        return w.bytes.count + body.count
    }

    // MARK: PLAIN

    static func appendPlain(_ column: ParquetColumn, _ values: Range<Int>, to out: inout [UInt8]) {
        switch column.type {
        case .boolean:
            RLEHybridEncoder.appendBitPacked(values.map { UInt32(column.integers[$0]) }, bitWidth: 1, into: &out)
        default:
            for index in values { appendPlainValue(column, index, to: &out) }
        }
    }

    /// One value as PLAIN writes it (a string with its 4-byte length); not for booleans.
    static func appendPlainValue(_ column: ParquetColumn, _ index: Int, to out: inout [UInt8]) {
        switch column.type {
        case .int32, .date:
            ParquetBytes.appendLittleEndian(UInt32(bitPattern: Int32(truncatingIfNeeded: column.integers[index])), to: &out)
        case .int64, .double:
            ParquetBytes.appendLittleEndian(UInt64(bitPattern: column.integers[index]), to: &out)
        case .decimal:
            ParquetBytes.appendBigEndian(column.decimals[index], to: &out)
        case .string:
            let bytes = column.string(index)
            ParquetBytes.appendLittleEndian(UInt32(bytes.count), to: &out)
            out.append(contentsOf: bytes)
        case .boolean:
            preconditionFailure("booleans are bit-packed")
        }
    }

    // MARK: Statistics

    /// The smallest and largest of `values` (value indexes) in the column's order, one pass per type.
    private static func extremes(_ column: ParquetColumn, _ values: some Collection<Int>) -> (min: Int, max: Int)? {
        guard var low = values.first else { return nil }
        var high = low
        switch column.type {
        case .string:
            for index in values.dropFirst() {
                if column.stringPrecedes(index, low) { low = index } else if column.stringPrecedes(high, index) { high = index }
            }
        case .decimal:
            let decimals = column.decimals
            for index in values.dropFirst() {
                if decimals[index] < decimals[low] { low = index } else if decimals[index] > decimals[high] { high = index }
            }
        case .double:
            let doubles = column.integers.map { Double(bitPattern: UInt64(bitPattern: $0)) }
            for index in values.dropFirst() {
                if doubles[index] < doubles[low] { low = index } else if doubles[index] > doubles[high] { high = index }
            }
        default:
            let integers = column.integers
            for index in values.dropFirst() {
                if integers[index] < integers[low] { low = index } else if integers[index] > integers[high] { high = index }
            }
        }
        return (low, high)
    }

    /// Value `index` as statistics store it (PLAIN, strings without their length).
    private static func statisticsValue(_ column: ParquetColumn, _ index: Int) -> [UInt8] {
        var out: [UInt8] = []
        switch column.type {
        case .string: out.append(contentsOf: column.string(index))
        case .boolean: out.append(UInt8(column.integers[index]))
        default: appendPlainValue(column, index, to: &out)
        }
        return out
    }

    // MARK: Dictionary

    /// A chunk's dictionary (distinct values in order of first appearance, PLAIN) and each value's
    /// index, when that is smaller than PLAIN.
    struct Dictionary {
        var plain: [UInt8] = []
        var count = 0
        var indices: [UInt32] = []
        var bitWidth = 0
        /// Per dictionary entry: the index of the value it was made from.
        var entryValues: [Int] = []

        init?(_ column: ParquetColumn, _ values: Range<Int>) {
            if case .boolean = column.type { return nil }
            guard !values.isEmpty else { return nil }
            indices.reserveCapacity(values.count)
            let plainSize: Int
            let complete: Bool
            switch column.type {
            case .string:
                plainSize = 4 * values.count + column.stringStarts[values.upperBound] - column.stringStarts[values.lowerBound]
                complete = collectStrings(column, values)
            case .decimal:
                plainSize = 16 * values.count
                let decimals = column.decimals
                complete = intern(
                    column, values,
                    hash: { Self.mix(UInt64(truncatingIfNeeded: decimals[$0]) ^ UInt64(truncatingIfNeeded: decimals[$0] >> 64)) },
                    same: { decimals[$0] == decimals[$1] })
            default:
                plainSize = (column.type == .int64 || column.type == .double ? 8 : 4) * values.count
                let integers = column.integers
                complete = intern(
                    column, values, hash: { Self.mix(UInt64(bitPattern: integers[$0])) }, same: { integers[$0] == integers[$1] })
            }
            guard complete else { return nil }
            bitWidth = max(1, RLEHybridEncoder.bitWidth(forMaximum: count - 1))
            // Pays when the dictionary and the packed indices are smaller than the values themselves.
            guard plain.count + (values.count * bitWidth + 7) / 8 < plainSize else { return nil }
        }

        /// A 64-bit finalizer (SplitMix64's): every input bit reaches the low bits the table uses.
        static func mix(_ value: UInt64) -> UInt64 {
            var z = value &+ 0x9E37_79B9_7F4A_7C15
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }

        /// Interns every string value by a 64-bit hash of its bytes, compared with memcmp (Swift's
        /// Dictionary hashes an ArraySlice byte by byte).
        private mutating func collectStrings(_ column: ParquetColumn, _ values: Range<Int>) -> Bool {
            let starts = column.stringStarts
            return column.stringBytes.withUnsafeBufferPointer { bytes -> Bool in
                let base = UnsafeRawPointer(bytes.baseAddress)
                return intern(
                    column, values,
                    hash: { index in
                        var h: UInt64 = 0x9E37_79B9_7F4A_7C15 ^ UInt64(starts[index + 1] - starts[index])
                        var position = starts[index]
                        let end = starts[index + 1]
                        while position + 8 <= end {
                            h = (h ^ base!.loadUnaligned(fromByteOffset: position, as: UInt64.self)) &* 0xBF58_476D_1CE4_E5B9
                            h ^= h >> 29
                            position += 8
                        }
                        while position < end {
                            h = (h ^ UInt64(bytes[position])) &* 0x94D0_49BB_1331_11EB
                            position += 1
                        }
                        return h ^ (h >> 32)
                    },
                    same: { a, b in
                        let length = starts[a + 1] - starts[a]
                        return length == starts[b + 1] - starts[b]
                            && (length == 0 || memcmp(base! + starts[a], base! + starts[b], length) == 0)
                    })
            }
        }

        /// The values' dictionary indices, interned in an open-addressing table (linear probing) of
        /// dictionary entries by `hash`, `same` comparing two values by index; false when the
        /// dictionary outgrows `dictionaryLimit`.
        private mutating func intern(
            _ column: ParquetColumn, _ values: Range<Int>, hash: (Int) -> UInt64, same: (Int, Int) -> Bool
        ) -> Bool {
            var slots = [Int32](repeating: -1, count: 64)
            var hashes: [UInt64] = []
            var mask = slots.count - 1
            var previous: (index: Int, entry: UInt32)? = nil
            for index in values {
                // Rows are sorted, so a value often repeats the one before.
                if let (last, entry) = previous, same(last, index) {
                    indices.append(entry)
                    continue
                }
                let h = hash(index)
                var slot = Int(truncatingIfNeeded: h) & mask
                var found: Int32 = -1
                while slots[slot] >= 0 {
                    let entry = Int(slots[slot])
                    if hashes[entry] == h, same(entryValues[entry], index) {
                        found = Int32(entry)
                        break
                    }
                    slot = (slot + 1) & mask
                }
                if found < 0 {
                    found = Int32(count)
                    slots[slot] = found
                    entryValues.append(index)
                    hashes.append(h)
                    count += 1
                    ChunkEncoder.appendPlainValue(column, index, to: &plain)
                    if plain.count > ParquetWriter.dictionaryLimit { return false }
                    if count * 2 > slots.count {  // grow: place every entry again
                        slots = [Int32](repeating: -1, count: slots.count * 2)
                        mask = slots.count - 1
                        for (entry, h) in hashes.enumerated() {
                            var slot = Int(truncatingIfNeeded: h) & mask
                            while slots[slot] >= 0 { slot = (slot + 1) & mask }
                            slots[slot] = Int32(entry)
                        }
                    }
                }
                indices.append(UInt32(found))
                previous = (index, UInt32(found))
            }
            return true
        }
    }
}
