import Basics
internal import Postbacks

#if canImport(Glibc)
    import Glibc
#endif

/// What aggregation needs from one verified spool line. Filled in place (it is a few hundred
/// bytes, and copying it per postback showed up as memcpy in profiles).
package struct SpoolLineSummary {
    package var receivedAtMicros: Int64 = 0
    package var isProduction = false
    /// The record has flags (values not taken as sent); only the full parser reads those.
    package var isFlagged = false
    package var dedupKey: ByteSlice? = nil
    package var hasFields = false
    package var fields = PostbackFields()

    package init() {}

    package init(
        receivedAtMicros: Int64, isProduction: Bool, isFlagged: Bool = false, dedupKey: ByteSlice?, hasFields: Bool,
        fields: PostbackFields
    ) {
        self.receivedAtMicros = receivedAtMicros
        self.isProduction = isProduction
        self.isFlagged = isFlagged
        self.dedupKey = dedupKey
        self.hasFields = hasFields
        self.fields = fields
    }

    package mutating func reset() {
        receivedAtMicros = 0
        isProduction = false
        isFlagged = false
        dedupKey = nil
        hasFields = false
        fields.clear()
    }
}

/// Reads the common case of a spool line, a verified record as `SpoolRecord.encoded()` writes it,
/// without building a `JSONValue` tree or any `String`: the fields are byte slices into the line,
/// and the large `body` string is only scanned for its end, eight bytes at a time, never copied.
///
/// Keys are matched against the order the encoder writes them in (one memcmp each), with a general
/// key lookup when a key is not the expected one, so a reordered or extended record still takes
/// the fast path when it can.
///
/// It gives up (returns nil) on anything unusual: an escape or a non-ASCII byte in a field it reads,
/// a key it does not know, a repeated key, whitespace, a `\u` escape or non-ASCII text in the body,
/// a rejected record, a record with flags. The caller then parses the line with `SpoolRecord(line:)`, which is the
/// definition of a valid line; the fast path only accepts lines that one accepts too, with the same
/// values (tests check this on generated and mutated lines).
package struct FastSpoolLineParser {
    private let base: UnsafePointer<UInt8>
    private let end: Int
    private var index = 0
    // The literal tables, as pointers (no reference counting per line); `SpoolLiterals.shared` lives forever.
    private let recordKeys: UnsafePointer<SpoolLiterals.Literal>
    private let attributionKeys: UnsafePointer<SpoolLiterals.Literal>
    private let values: UnsafePointer<SpoolLiterals.Literal>
    private let choices: UnsafePointer<SpoolLiterals.Literal>
    private let fieldReadings: UnsafePointer<SpoolLiterals.FieldReading>
    private let recordKeyCount: Int
    private let attributionKeyCount: Int
    private let requiredAttributionKeys: Int
    private let fieldsWithValueWhenAbsent: UInt32

    private init(line: UnsafeRawBufferPointer, literals: SpoolLiterals) {
        base = line.baseAddress!.assumingMemoryBound(to: UInt8.self)
        end = line.count
        recordKeys = UnsafePointer(literals.recordKeys)
        attributionKeys = UnsafePointer(literals.attributionKeys)
        values = UnsafePointer(literals.values)
        choices = UnsafePointer(literals.choices)
        fieldReadings = UnsafePointer(literals.fieldReadings)
        recordKeyCount = literals.recordKeyCount
        attributionKeyCount = literals.attributionKeyCount
        requiredAttributionKeys = literals.requiredAttributionKeys
        fieldsWithValueWhenAbsent = literals.fieldsWithValueWhenAbsent
    }

    /// Fills `summary` (reset first) and returns true, or returns false to leave the line to the full parser.
    package static func parse(
        _ line: UnsafeRawBufferPointer, into summary: inout SpoolLineSummary, literals: SpoolLiterals = .shared
    ) -> Bool {
        summary.reset()
        guard line.count > 2 else { return false }
        var parser = FastSpoolLineParser(line: line, literals: literals)
        return parser.parseRecord(into: &summary)
    }

    package static func parse(_ line: UnsafeRawBufferPointer) -> SpoolLineSummary? {
        var summary = SpoolLineSummary()
        return parse(line, into: &summary) ? summary : nil
    }

    // MARK: The record

    private mutating func parseRecord(into summary: inout SpoolLineSummary) -> Bool {
        guard take(UInt8(ascii: "{")) else { return false }
        var keys = KeyCursor(recordKeys, count: recordKeyCount)
        while true {
            guard let position = nextKey(&keys), let key = RecordKey(rawValue: position) else { return false }
            switch key {
            case .format:
                // Format 1 (no key) and 2 read alike here; anything newer is the full parser's to refuse.
                guard let value = integer(), value == 2 else { return false }
            case .flags, .quarantine:
                // Flagged postbacks are few: the full parser reads them (and counts their flags).
                return false
            case .client, .bodyKept, .bodySHA256, .bodyBytes, .bodyBase64:
                // Only rejected records or bodies that are not UTF-8 have these: the full parser's.
                return false
            case .receivedAt:
                guard let text = simpleString(),
                    let micros = UTCTimestamp.microseconds(iso8601: base + text.start, count: text.count)
                else { return false }
                summary.receivedAtMicros = micros
            case .status:
                guard let text = simpleString(), equals(text, .verified) else { return false }
            case .environment:
                if takeNull() { break }
                guard let text = simpleString() else { return false }
                summary.isProduction = equals(text, .production)
            case .dedupKey:
                if takeNull() { break }
                guard let text = simpleString() else { return false }
                summary.dedupKey = text
            case .attribution:
                if takeNull() { break }
                guard parseAttribution(into: &summary.fields) else { return false }
                summary.hasFields = true
            case .body:
                guard skipBody() else { return false }
            case .writer, .route, .postbackProtocol, .version, .key, .reason:
                if !takeNull() { guard simpleString() != nil else { return false } }
            }
            guard index < end else { return false }
            if base[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            guard base[index] == UInt8(ascii: "}"), index + 1 == end else { return false }
            let required = 1 << RecordKey.receivedAt.rawValue | 1 << RecordKey.status.rawValue | 1 << RecordKey.body.rawValue
            return keys.seen & required == required
        }
    }

    // MARK: The attribution object (`Attribution.writeSpoolJSON(to:)`)

    /// Each member is read as its declaration says (`SpoolLiterals.FieldReading`): a string as a
    /// slice of the line, an integer, a boolean, or a choice as its index among the declared choices.
    private mutating func parseAttribution(into fields: inout PostbackFields) -> Bool {
        guard take(UInt8(ascii: "{")) else { return false }
        var keys = KeyCursor(attributionKeys, count: attributionKeyCount)
        let requiredKeys = requiredAttributionKeys
        while true {
            guard let position = nextKey(&keys) else { return false }
            if takeNull() {
                // Required members: let the full parser produce the error.
                if requiredKeys & 1 &<< position != 0 { return false }
            } else {
                let reading = fieldReadings[position]
                let field = reading.field
                switch reading.storage {
                case .slice:
                    guard let text = simpleString() else { return false }
                    fields.set(field, text)
                case .integer:
                    guard let value = integer() else { return false }
                    fields.set(field, value)
                case .boolean:
                    guard let flag = boolean() else { return false }
                    fields.set(field, flag)
                case .choice:
                    // A value outside the declared choices is the full parser's to refuse.
                    guard let text = simpleString(), let index = choiceIndex(text, reading) else { return false }
                    fields.setChoice(field, index)
                }
            }
            guard index < end else { return false }
            if base[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            guard base[index] == UInt8(ascii: "}") else { return false }
            index += 1
            guard keys.seen & requiredKeys == requiredKeys else { return false }
            // `fillValuesWhenAbsent`'s own test, without its `swift_once`: most lines have every such field.
            if fields.present & fieldsWithValueWhenAbsent != fieldsWithValueWhenAbsent { fields.fillValuesWhenAbsent() }
            return true
        }
    }

    /// The position of `text` among the field's declared choices.
    @inline(__always)
    private func choiceIndex(_ text: ByteSlice, _ reading: SpoolLiterals.FieldReading) -> Int? {
        for offset in 0..<reading.choiceCount {
            let literal = choices[reading.firstChoice &+ offset]
            if text.count == literal.count, Self.bytesEqual(base + text.start, literal.pointer, literal.count) { return offset }
        }
        return nil
    }

    /// Where key matching stands in one object: the key expected next (the encoder's order) and
    /// the keys seen so far (a repeated key gives up: the strict parser rejects duplicates).
    private struct KeyCursor {
        let keys: UnsafePointer<SpoolLiterals.Literal>
        let count: Int
        var expected = 0
        var seen = 0

        init(_ keys: UnsafePointer<SpoolLiterals.Literal>, count: Int) {
            self.keys = keys
            self.count = count
        }
    }

    /// Takes the next `"key":` and returns its position, trying the expected key first.
    @inline(__always)
    private mutating func nextKey(_ cursor: inout KeyCursor) -> Int? {
        let expected = cursor.expected
        guard expected < cursor.count, takeLiteral(cursor.keys[expected]) else { return otherKey(&cursor) }
        // Masking shifts here and below: key positions are below the 64 bits of `seen` (the
        // checked shift tests the amount per key).
        let bit = 1 &<< expected
        guard cursor.seen & bit == 0 else { return nil }
        cursor.seen |= bit
        cursor.expected = expected + 1
        return expected
    }

    /// Not the expected key (an optional key was left out, or the order differs): try all the others.
    @inline(never)
    private mutating func otherKey(_ cursor: inout KeyCursor) -> Int? {
        for offset in 1...cursor.count {
            let position = (cursor.expected + offset) % cursor.count
            guard takeLiteral(cursor.keys[position]) else { continue }
            guard cursor.seen & (1 &<< position) == 0 else { return nil }
            cursor.seen |= 1 &<< position
            cursor.expected = position + 1
            return position
        }
        return nil
    }

    // MARK: Tokens

    @inline(__always)
    private mutating func take(_ byte: UInt8) -> Bool {
        guard index < end, base[index] == byte else { return false }
        index += 1
        return true
    }

    @inline(__always)
    private mutating func takeLiteral(_ literal: SpoolLiterals.Literal) -> Bool {
        guard index &+ literal.count <= end, Self.bytesEqual(base + index, literal.pointer, literal.count) else { return false }
        index += literal.count
        return true
    }

    /// memcmp for the short strings here (keys and enumeration words), inlined: a call to memcmp
    /// per key was a tenth of the parse.
    @inline(__always)
    package static func bytesEqual(_ a: UnsafePointer<UInt8>, _ b: UnsafePointer<UInt8>, _ count: Int) -> Bool {
        let x = UnsafeRawPointer(a)
        let y = UnsafeRawPointer(b)
        if count >= 8 {
            var offset = 0
            // Unchecked arithmetic: offsets stay below `count`.
            while offset &+ 8 <= count {
                if x.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                    != y.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                {
                    return false
                }
                offset &+= 8
            }
            // The last word overlaps the previous one when the length is not a multiple of eight.
            return offset == count
                || x.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)
                    == y.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)
        }
        if count >= 4 {
            return x.loadUnaligned(as: UInt32.self) == y.loadUnaligned(as: UInt32.self)
                && x.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self)
                    == y.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self)
        }
        for offset in 0..<count where a[offset] != b[offset] { return false }
        return true
    }

    @inline(__always)
    private mutating func takeNull() -> Bool {
        guard index < end, base[index] == UInt8(ascii: "n") else { return false }
        return takeLiteral(values[SpoolLiterals.Value.null.rawValue])
    }

    private mutating func boolean() -> Bool? {
        if takeLiteral(values[SpoolLiterals.Value.true.rawValue]) { return true }
        if takeLiteral(values[SpoolLiterals.Value.false.rawValue]) { return false }
        return nil
    }

    /// A JSON integer (`-?(0|[1-9][0-9]*)`) that fits Int64 and is not followed by a fraction or exponent.
    private mutating func integer() -> Int64? {
        var position = index
        let negative = position < end && base[position] == UInt8(ascii: "-")
        if negative { position += 1 }
        let digitsStart = position
        var magnitude: UInt64 = 0
        while position < end, base[position] &- UInt8(ascii: "0") < 10 {
            let (times10, overflow1) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(UInt64(base[position] &- UInt8(ascii: "0")))
            guard !overflow1, !overflow2 else { return nil }
            magnitude = sum
            position += 1
        }
        let digitCount = position - digitsStart
        guard digitCount > 0, !(digitCount > 1 && base[digitsStart] == UInt8(ascii: "0")) else { return nil }
        if position < end,
            base[position] == UInt8(ascii: ".") || base[position] == UInt8(ascii: "e") || base[position] == UInt8(ascii: "E")
        {
            return nil
        }
        let value: Int64
        if negative {
            guard magnitude <= UInt64(Int64.max) + 1 else { return nil }
            value = magnitude == UInt64(Int64.max) + 1 ? Int64.min : -Int64(magnitude)
        } else {
            guard magnitude <= UInt64(Int64.max) else { return nil }
            value = Int64(magnitude)
        }
        index = position
        return value
    }

    /// A string of printable ASCII without escapes; nil (give up) for anything else.
    @inline(__always)
    private mutating func simpleString() -> ByteSlice? {
        guard take(UInt8(ascii: "\"")) else { return nil }
        let start = index
        guard let stop = nextSpecialByte(), base[stop] == UInt8(ascii: "\"") else { return nil }
        index = stop + 1
        return ByteSlice(start: start, count: stop - start)
    }

    /// The position of the first `"`, `\`, control or non-ASCII byte from `index`, nil if none.
    @inline(__always)
    private func nextSpecialByte() -> Int? {
        let position = ByteScan.firstStringSpecial(base, from: index, end: end)
        return position < end ? position : nil
    }

    /// Skips the `body` string, checking what the strict parser would: no raw control characters and
    /// valid escapes. `\u` escapes and non-ASCII bytes go to the full parser, which validates UTF-8
    /// and surrogates.
    private mutating func skipBody() -> Bool {
        guard take(UInt8(ascii: "\"")) else { return false }
        while true {
            guard let stop = nextSpecialByte() else { return false }
            switch base[stop] {
            case UInt8(ascii: "\""):
                index = stop + 1
                return true
            case UInt8(ascii: "\\"):
                guard stop + 1 < end else { return false }
                switch base[stop + 1] {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                    UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                    index = stop + 2
                default:
                    return false
                }
            default:
                return false
            }
        }
    }

    @inline(__always)
    private func equals(_ slice: ByteSlice, _ value: SpoolLiterals.Value) -> Bool {
        let literal = values[value.rawValue]
        return slice.count == literal.count && Self.bytesEqual(base + slice.start, literal.pointer, slice.count)
    }
}
