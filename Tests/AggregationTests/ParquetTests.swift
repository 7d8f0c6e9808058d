import AggregateSchema
import Basics
import Foundation
import PostbackCrypto
import PostbackStore
import PostbackTesting
import TestSupport
import Testing

@testable import Aggregation
@testable import Parquet

/// The Parquet writer, read back by pyarrow and DuckDB (`scripts/parquet_check.py` in `.build/venv`)
/// and by `ParquetReader`:
/// the encoders' bytes for known inputs, edge-case files, random tables (a property test of levels,
/// dictionaries, statistics and the Thrift footer), and `aggregate --format both` on a synthetic spool.
@Suite struct ParquetTests {
    // MARK: Encoders, byte for byte

    @Test func thriftCompactFieldsAndLists() {
        var w = ThriftCompactWriter()
        w.structure {
            $0.field(1, i32: 2)  // delta 1, type i32, zigzag 4
            $0.field(3, string: "ab")  // delta 2, binary
            $0.field(20, i64: -1)  // delta 17: full header, zigzag id 40, zigzag value 1
            $0.field(21, bool: true)  // delta 1, type true
            $0.field(22, i32s: Array(repeating: 1, count: 15))  // a list of 15: long form
            $0.field(23) { $0.field(1, bool: false) }  // a nested struct starts again at id 0
        }
        #expect(
            w.bytes
                == [0x15, 0x04, 0x28, 0x02, 0x61, 0x62, 0x06, 0x28, 0x01, 0x11, 0x19, 0xF5, 0x0F]
                + Array(repeating: 0x02, count: 15) + [0x1C, 0x12, 0x00, 0x00])
    }

    @Test func hybridEncoderRunsAndGroups() {
        var out: [UInt8] = []
        // Ten 1s: one RLE run.
        RLEHybridEncoder.encode(Array(repeating: 1, count: 10), bitWidth: 1, into: &out)
        #expect(out == [0x14, 0x01])
        // 1, 0, 1 then nine 0s: the literal group is completed from the run (8 values), then an RLE
        // run of the 4 left is too short and joins the literals: 12 values, 2 groups, padded.
        out = []
        RLEHybridEncoder.encode([1, 0, 1] + Array(repeating: 0, count: 9), bitWidth: 1, into: &out)
        #expect(out == [0x05, 0b0000_0101, 0x00])
        // 3 literals, then 20 × 2 (5 complete the group, 15 stay a run), width 2.
        out = []
        RLEHybridEncoder.encode([0, 1, 3] + Array(repeating: 2, count: 20), bitWidth: 2, into: &out)
        #expect(out == [0x03, 0b1011_0100, 0b1010_1010, 0x1E, 0x02])
        #expect(RLEHybridEncoder.bitWidth(forMaximum: 0) == 0 && RLEHybridEncoder.bitWidth(forMaximum: 255) == 8)
    }

    // MARK: Files read by pyarrow and DuckDB

    /// An empty table, an all-null column, one row, every type's limits, strings with every byte that
    /// needs escaping somewhere (and multi-byte UTF-8), and a table over several row groups.
    @Test func edgeCasesReadByPyarrowAndDuckDB() throws {
        let directory = TemporaryDirectory.create("parquet-edges")
        let escapes =
            (0..<128).map { TestColumn.Value.string([UInt8($0)]) } + [
                .string(Array("\"quoted\", with comma\r\nand\\backslash".utf8)), .string(Array("é€😀 \u{2028}".utf8)),
                .string([]),
            ]
        let decimalLimit = Int128(10).power(38) - 1
        let files: [TestFile] = [
            TestFile(name: "empty", rowGroupRows: 10, columns: TestColumn.allTypes(rows: 0) { _, _ in nil }),
            TestFile(name: "all-null", rowGroupRows: 4, columns: TestColumn.allTypes(rows: 9) { _, _ in nil }),
            TestFile(
                name: "one-row", rowGroupRows: 1,
                columns: TestColumn.allTypes(rows: 1) { type, _ in TestColumn.Value.sample(type, 7) }),
            TestFile(
                name: "limits", rowGroupRows: 100,
                columns: [
                    TestColumn("i64", .int64, false, [.integer(.min), .integer(.max), .integer(0), .integer(-1)]),
                    TestColumn("i32", .int32, true, [.integer(Int64(Int32.min)), .integer(Int64(Int32.max)), nil, .integer(0)]),
                    TestColumn(
                        "amount", .decimal(precision: 38, scale: 6), true,
                        [.decimal(decimalLimit), .decimal(-decimalLimit), .decimal(1), nil]),
                    TestColumn(
                        "day", .date, false,
                        [.integer(-719_162), .integer(2_932_896), .integer(0), .integer(20_516)]),  // 0001-01-01 … 9999-12-31
                    TestColumn("flag", .boolean, true, [.integer(1), nil, .integer(0), .integer(1)]),
                ]),
            TestFile(name: "escapes", rowGroupRows: 50, columns: [TestColumn("text", .string, true, escapes + [nil])]),
            TestFile(
                name: "row-groups", rowGroupRows: 7,
                columns: TestColumn.allTypes(rows: 50) { type, row in
                    row % 5 == 3 ? nil : TestColumn.Value.sample(type, row / 3)
                }),
        ]
        try check(files, in: directory)
    }

    /// Random tables from a fixed seed: column types, nullability and null rates, value distributions
    /// (one value, a few, all distinct, long runs: RLE runs, bit-packed groups, dictionaries of every
    /// index width and PLAIN), row counts and row-group sizes. Each file must read back exactly.
    @Test func randomTablesReadBackExactly() throws {
        let directory = TemporaryDirectory.create("parquet-random")
        var random = SeededRandom(seed: 0x5041_5251_4554)
        var files: [TestFile] = []
        for number in 0..<40 {
            let rows = random.below(4) == 0 ? random.below(3) : random.below(700)
            var columns: [TestColumn] = []
            for index in 0..<(1 + random.below(6)) {
                let type = TestColumn.types[random.below(TestColumn.types.count)]
                let nullable = random.below(3) > 0
                let nullRate = nullable ? [0, 0.1, 0.5, 0.97, 1][random.below(5)] : 0
                let distinct = [1, 2, 3, 17, 300, 100_000][random.below(6)]
                let runLength = [1, 1, 9, 40][random.below(4)]
                var values: [TestColumn.Value?] = []
                var current = random.below(distinct)
                for row in 0..<rows {
                    if row % runLength == 0 { current = random.below(distinct) }
                    values.append(random.unit() < nullRate ? nil : TestColumn.Value.sample(type, current))
                }
                columns.append(TestColumn("c\(index)", type, nullable, values))
            }
            files.append(TestFile(name: "random-\(number)", rowGroupRows: 1 + random.below(300), columns: columns))
        }
        try check(files, in: directory)
    }

    /// Writes `files`, then has `scripts/parquet_check.py files` read each with pyarrow and DuckDB.
    private func check(_ files: [TestFile], in directory: String) throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: VenvPython.path), "no \(VenvPython.path): run scripts/setup --test")
        var described: [[String: Any]] = []
        for file in files {
            let path = directory + "/" + file.name + ".parquet"
            let bytes = try ParquetWriter.write(try file.columns.map { try $0.parquet() }, rowGroupRows: file.rowGroupRows)
            #expect(try ParquetWriter.write(try file.columns.map { try $0.parquet() }, rowGroupRows: file.rowGroupRows) == bytes)
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            // ParquetReader (what the report reads) gives back every value too.
            let read = try ParquetReader.read(bytes)
            #expect(read.map(\.name) == file.columns.map(\.name), "\(file.name)")
            for (column, expected) in zip(read, file.columns) {
                #expect(column.type == expected.type && column.nullable == expected.nullable, "\(file.name)")
                #expect(column.values == expected.values.map { $0?.parquetValue }, "\(file.name).\(column.name)")
            }
            described.append([
                "path": path, "row_group_rows": file.rowGroupRows, "columns": file.columns.map(\.described),
            ])
        }
        let spec = directory + "/spec.json"
        try JSONSerialization.data(withJSONObject: ["files": described, "created_by": ParquetWriter.createdBy])
            .write(to: URL(fileURLWithPath: spec))
        let result = try VenvPython.run(script: Self.checker, arguments: ["files", spec])
        let answer = try #require(
            try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any],
            "scripts/parquet_check.py failed (scripts/setup --test installs pyarrow and duckdb): \(result.stderr)")
        #expect(answer["problems"] as? [String] == [], "\(answer)")
        #expect(result.status == 0)
    }

    /// Runs scripts/parquet_check.py as a program (its arguments follow).
    static let checker = """
        import runpy, sys
        path = \(String(reflecting: Fixtures.root.path + "/scripts/parquet_check.py"))
        sys.argv = [path] + sys.argv[1:]
        runpy.run_path(path, run_name="__main__")
        """

    // MARK: The job's tables

    @Test func anUnknownFormatIsAUsageError() {
        let root = TemporaryDirectory.create("parquet-format")
        let result = TestSupport.run([
            "aggregate", "--data", root, "--schemas", Fixtures.sampleSchemas, "--date", "2026-03-01", "--format", "orc",
        ])
        #expect(result.status == .usageOrIOError)
        #expect(result.stderr.contains("--format orc: expected csv, parquet or both"), "\(result.stderr)")
    }

    /// `aggregate` with `--format both` on a synthetic spool: every table's Parquet file reads, in both
    /// readers, as the same rows and values as its CSV, each column of its declared type; the manifest
    /// lists both files; a rerun writes the same bytes; a rerun with `--format csv` removes the Parquet
    /// files and lists only the CSV; the CSV is the same whatever the format; and the report of the days
    /// published as Parquet only is the same page as from the CSV.
    @Test func aggregateWritesEveryTableAsTypedParquet() throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: VenvPython.path), "no \(VenvPython.path): run scripts/setup --test")
        let root = TemporaryDirectory.create("parquet-aggregate")
        var spool = SyntheticSpool()
        spool.postbacksPerDay = 3000
        spool.developmentRate = 0.05
        spool.rejectedRate = 0.02
        spool.duplicateRate = 0.05
        _ = try spool.write(to: StoreLayout(root: root), first: day("2026-03-01"), days: 2)
        let catalog = try SchemaCatalog.load(directory: Fixtures.sampleSchemas)
        func aggregate(_ format: AggregateFormat, rowGroupRows: Int = ParquetWriter.defaultRowGroupRows) throws {
            var request = AggregationRequest(
                dataDirectory: root, from: day("2026-03-01"), to: day("2026-03-02"), workers: 2, toolVersion: "postback test")
            request.format = format
            request.parquetRowGroupRows = rowGroupRows
            request.force = true
            _ = try AggregationJob(request: request, catalog: catalog).run()
        }
        func files() throws -> [String: Data] {
            var found: [String: Data] = [:]
            for table in AggregateTables.all + ["_manifests"] {
                let directory = root + "/agg/" + table
                for path in FileManager.default.enumerator(atPath: directory)?.compactMap({ $0 as? String }) ?? [] {
                    let full = directory + "/" + path
                    var isDirectory: ObjCBool = false
                    if FileManager.default.fileExists(atPath: full, isDirectory: &isDirectory), !isDirectory.boolValue {
                        found["\(table)/\(path)"] = try Data(contentsOf: URL(fileURLWithPath: full))
                    }
                }
            }
            return found
        }

        try aggregate(.csv)
        let csvOnly = try files()
        // Small row groups: the detail table spans several.
        try aggregate(.both, rowGroupRows: 500)
        let both = try files()
        let result = try VenvPython.run(script: Self.checker, arguments: ["tables", root])
        let answer = try #require(
            try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "\(result.stderr)")
        #expect(answer["problems"] as? [String] == [], "\(answer)")
        let checked = try #require(answer["checked"] as? [String: Int])
        #expect(checked["files"] == 2 * AggregateTables.all.count && checked["rows"]! > 1000)
        #expect(checked["leading_zero_identifiers"]! > 0, "no source identifier with a leading zero to check")

        for (path, bytes) in csvOnly where path.hasSuffix(".csv") { #expect(both[path] == bytes, "\(path)") }
        let manifest = String(decoding: try #require(both["_manifests/dt=2026-03-02.json"]), as: UTF8.self)
        for table in AggregateTables.all {
            for kind in ["csv", "parquet"] {
                #expect(manifest.contains("\"path\":\"agg/\(table)/dt=2026-03-02/part-00000.\(kind)\""), "\(table) \(kind)")
            }
            let parquet = try #require(both["\(table)/dt=2026-03-02/part-00000.parquet"])
            #expect(manifest.contains("\"bytes\":\(parquet.count),\"sha256\":\"\(SHA256.hash(Array(parquet)).description)\""))
        }
        // Read back here too (what the report reads): every field as the CSV has it.
        for (path, bytes) in both where path.hasSuffix(".parquet") {
            let decoded = try PublishedParquet.textRows(parquet: Array(bytes))
            var csv = RenderedCSV(Array(try #require(both[String(path.dropLast(".parquet".count)) + ".csv"])))
            #expect(csv.nextRecord()?.map { $0.map { String(decoding: $0, as: UTF8.self) } } == decoded.header, "\(path)")
            var rows: [[String?]] = []
            while let record = csv.nextRecord() { rows.append(record.map { $0.map { String(decoding: $0, as: UTF8.self) } }) }
            #expect(rows == decoded.rows, "\(path)")
        }
        try aggregate(.both, rowGroupRows: 500)
        #expect(try files() == both, "a rerun writes the same bytes")
        try aggregate(.csv)
        #expect(try files() == csvOnly, "--format csv removes the Parquet files and their manifest entries")

        // The report of a store published as Parquet only is the report of the CSV store.
        func report(_ environment: String) -> CommandRun {
            TestSupport.run([
                "report", "--data", root, "--from", "2026-03-01", "--to", "2026-03-02", "--environment", environment, "--out",
                "-",
            ])
        }
        let csvPages = [report("production"), report("development")]
        try aggregate(.parquet)
        #expect(try files().keys.filter { $0.hasSuffix(".csv") }.isEmpty)
        for (csvPage, parquetPage) in zip(csvPages, [report("production"), report("development")]) {
            #expect(csvPage.status == .success && parquetPage.status == .success, "\(parquetPage.stderr)")
            #expect(parquetPage.stdout == csvPage.stdout && csvPage.stdout.count > 10_000)
        }
    }
}

// MARK: Test tables

struct TestFile {
    let name: String
    let rowGroupRows: Int
    let columns: [TestColumn]
}

struct TestColumn {
    enum Value {
        case integer(Int64)
        case decimal(Int128)
        case string([UInt8])

        /// A value of `type` numbered `n` (distinct n, distinct values), strings mixing ASCII, quotes,
        /// control bytes and multi-byte characters.
        static func sample(_ type: ParquetType, _ n: Int) -> Value {
            switch type {
            case .string: return .string(Array("v\(n)\(["", "\"", ",\n", "é", "\u{1}", "😀"][n % 6])".utf8))
            case .int32: return .integer(Int64(n % 2 == 0 ? n : -n) * 1009)
            case .int64: return .integer(Int64(n % 2 == 0 ? n : -n) * 1_000_000_007)
            case .date: return .integer(Int64(20_000 + n % 5000 - 2500))
            case .boolean: return .integer(Int64(n % 2))
            case .decimal: return .decimal(Int128(n % 2 == 0 ? n : -n) * 1_000_003)
            case .double:
                let value = Double(n % 2 == 0 ? n : -n) * 1.000_001e-3 + (n % 7 == 0 ? 1e300 : 0)
                return .integer(Int64(bitPattern: value.bitPattern))
            }
        }

        var parquetValue: ParquetValue {
            switch self {
            case .integer(let number): return .integer(number)
            case .decimal(let unscaled): return .decimal(unscaled)
            case .string(let bytes): return .string(bytes[...])
            }
        }
    }

    static let types: [ParquetType] = [
        .string, .int32, .int64, .date, .boolean, .decimal(precision: 38, scale: 6), .double,
    ]

    let name: String
    let type: ParquetType
    let nullable: Bool
    let values: [Value?]

    init(_ name: String, _ type: ParquetType, _ nullable: Bool, _ values: [Value?]) {
        self.name = name
        self.type = type
        self.nullable = nullable
        self.values = values
    }

    /// One nullable column of every type.
    static func allTypes(rows: Int, _ value: (ParquetType, Int) -> Value?) -> [TestColumn] {
        types.enumerated().map { index, type in TestColumn("c\(index)", type, true, (0..<rows).map { value(type, $0) }) }
    }

    func parquet() throws -> ParquetColumn {
        var column = ParquetColumn(name: name, type: type, nullable: nullable)
        for value in values {
            switch value {
            case nil: try column.appendNull()
            case .integer(let number): column.append(number)
            case .decimal(let unscaled): column.append(decimal: unscaled)
            case .string(let bytes): column.append(string: bytes[...])
            }
        }
        return column
    }

    /// As `scripts/parquet_check.py files` reads it: strings in hex, numbers as text (exact).
    var described: [String: Any] {
        let kind: String
        switch type {
        case .string: kind = "string"
        case .int32: kind = "int32"
        case .int64: kind = "int64"
        case .date: kind = "date"
        case .boolean: kind = "boolean"
        case .decimal: kind = "decimal"
        case .double: kind = "double"
        }
        return [
            "name": name, "type": kind, "nullable": nullable,
            "values": values.map { value -> Any in
                switch value {
                case nil: return NSNull()
                case .integer(let number) where type == .double:
                    return String(Double(bitPattern: UInt64(bitPattern: number)))
                case .integer(let number): return type == .boolean ? (number == 1) as Any : String(number)
                case .decimal(let unscaled): return String(unscaled)
                case .string(let bytes): return bytes.map { String(format: "%02x", $0) }.joined()
                }
            },
        ]
    }
}

/// SplitMix64: the same tables on every run.
struct SeededRandom {
    var state: UInt64
    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
    mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }
}

extension Int128 {
    fileprivate func power(_ exponent: Int) -> Int128 { (0..<exponent).reduce(1) { result, _ in result * self } }
}

/// Values given as text (`ParquetColumn.append(text:)`, what the job's CSV-to-Parquet pass calls)
/// make the same file as the same values given typed; text a column's type cannot hold is refused
/// and named, and so is a rendered line that does not fit its table.
@Suite struct ParquetTextValueTests {
    @Test func textValuesMakeTheSameFileAsTypedValues() throws {
        var random = SeededRandom(seed: 0x7465_7874)
        for _ in 0..<60 {
            let rows = random.below(500)
            var typed: [ParquetColumn] = []
            var fromText: [ParquetColumn] = []
            for index in 0..<TestColumn.types.count {
                let type = TestColumn.types[index]
                let distinct = [1, 5, 300, 100_000][random.below(4)]
                let values: [TestColumn.Value?] = (0..<rows).map { _ in
                    random.below(5) == 0 ? nil : TestColumn.Value.sample(type, random.below(distinct))
                }
                let column = TestColumn("c\(index)", type, true, values)
                typed.append(try column.parquet())
                var parsed = ParquetColumn(name: column.name, type: type, nullable: true)
                for value in values {
                    let text = value.map { Self.text($0, type) }
                    let problem =
                        text.map { bytes in bytes.withUnsafeBufferPointer { parsed.append(text: $0) } }
                        ?? parsed.append(text: nil)
                    #expect(problem == nil, "\(type) \(String(describing: value))")
                }
                fromText.append(parsed)
            }
            #expect(try ParquetWriter.write(fromText) == ParquetWriter.write(typed))
        }
    }

    @Test func textTheTypeCannotHoldIsRefused() {
        let refused: [(ParquetType, String)] = [
            (.int64, "12a"), (.int64, "-"), (.int64, "9223372036854775808"), (.int64, "1.5"),
            (.int32, "2147483648"), (.boolean, "TRUE"), (.boolean, "1"),
            (.date, "2026-13-01"), (.date, "2026-02-00"), (.date, "2026/02/01"), (.date, "26-02-01"),
            (.decimal(precision: 38, scale: 6), "1.0000001"), (.decimal(precision: 38, scale: 6), "1.2.3"),
            (.decimal(precision: 38, scale: 6), "."), (.decimal(precision: 38, scale: 6), "1e5"),
        ]
        for (type, text) in refused {
            var column = ParquetColumn(name: "c", type: type, nullable: true)
            let problem = Array(text.utf8).withUnsafeBufferPointer { column.append(text: $0) }
            #expect(problem == .invalidValue(text), "\(type) \(text)")
            #expect(column.rows == 0, "a refused value adds no row")
        }
        var required = ParquetColumn(name: "postbacks", type: .int64, nullable: false)
        #expect(required.append(text: nil) == .nullInRequiredColumn("postbacks", row: 0))
        // And the limits a type holds.
        var limits = ParquetColumn(name: "c", type: .int64, nullable: false)
        for text in ["9223372036854775807", "-9223372036854775808", "0"] {
            #expect(Array(text.utf8).withUnsafeBufferPointer { limits.append(text: $0) } == nil, "\(text)")
        }
    }

    @Test func whatCannotBeWrittenOrReadIsNamedByCode() throws {
        var first = ParquetColumn(name: "a", type: .int64, nullable: false)
        first.append(1)
        first.append(2)
        var second = ParquetColumn(name: "b", type: .int64, nullable: false)
        second.append(1)
        let differ = #expect(throws: ParquetError.self) { try ParquetWriter.write([first, second]) }
        #expect(differ?.code == .rowCountsDiffer && differ?.column == "b" && differ?.row == 1 && differ?.expected == 2)
        let good = try ParquetWriter.write([first])
        for (name, bytes) in [
            ("not Parquet", Array("a,b\n1,2\n".utf8)), ("cut short", Array(good.dropLast(9))),
            ("a damaged footer", Array(good.prefix(4)) + [UInt8](repeating: 0xFF, count: good.count - 8) + good.suffix(4)),
        ] {
            let error = #expect(throws: ParquetError.self, "\(name)") { try ParquetReader.read(bytes) }
            #expect(error?.code == .unsupported, "\(name): \(String(describing: error))")
        }
        let null = #expect(throws: ParquetError.self) { try first.appendNull() }
        #expect(null?.code == .nullInRequiredColumn && null?.column == "a" && null?.row == 2)
    }

    @Test func aRenderedLineThatDoesNotFitItsTableIsNamed() throws {
        let (table, columns) = AggregateTables.columnsByTable[0]
        let header = columns.map(\.name).joined(separator: ",")
        let good = try ParquetTable.encode(csv: Array("\(header)\n".utf8), table: table, columns: columns)
        #expect(try ParquetReader.read(good).first?.rows == 0)

        let count = try #require(columns.firstIndex { $0.isPostbackCount })
        var fields = columns.map { $0.isPostbackCount ? "1" : "" }
        #expect(Self.refusal(Array("\(header)\n\(fields.joined(separator: ","))\n".utf8), table, columns) == nil)
        let short = Array("\(header)\n\(fields.dropLast().joined(separator: ","))\n".utf8)
        #expect(Self.refusal(short, table, columns) == "\(table): line 2: not \(columns.count) fields")
        fields[count] = "12x"
        #expect(
            Self.refusal(Array("\(header)\n\(fields.joined(separator: ","))\n".utf8), table, columns)
                == "\(table): line 2, \(columns[count].name): not a value of the column's type: 12x")
        fields[count] = "1"
        fields[0] = "\"open"
        #expect(
            Self.refusal(Array("\(header)\n\(fields.joined(separator: ","))\n".utf8), table, columns)
                == "\(table): line 2, \(columns[0].name): an unterminated quote")
    }

    /// The job's pass over a rendered table (`CSVColumnReader`: blocks of rows, then column by
    /// column) makes the same file as the same values given typed: across block boundaries, with
    /// quoted fields, nulls, and decimals of up to 33 digits; a bad field in a later block is named by
    /// its own line.
    @Test func renderedCSVMakesTheSameFileAsTypedValues() throws {
        var random = SeededRandom(seed: 0x6373_7662)
        for rows in [0, 1, 511, 512, 513, 1500] {
            var typed: [ParquetColumn] = []
            var texts: [[[UInt8]?]] = []
            for (index, type) in TestColumn.types.enumerated() {
                let values: [TestColumn.Value?] = (0..<rows).map { row in
                    if random.below(5) == 0 { return nil }
                    if case .decimal = type, random.below(4) == 0 {
                        return .decimal(Int128(random.below(1_000_000_007)) * Int128(10).power(24) + Int128(row))
                    }
                    return TestColumn.Value.sample(type, random.below(300))
                }
                typed.append(try TestColumn("c\(index)", type, true, values).parquet())
                texts.append(values.map { $0.map { Self.text($0, type) } })
            }
            var csv = Array((TestColumn.types.indices.map { "c\($0)" }.joined(separator: ",") + "\n").utf8)
            let headerEnd = csv.count
            for row in 0..<rows {
                for column in texts.indices {
                    if column > 0 { csv.append(UInt8(ascii: ",")) }
                    if let text = texts[column][row] { csv += Self.csvField(text) }
                }
                csv.append(0x0A)
            }
            var columns = TestColumn.types.indices.map {
                ParquetColumn(name: "c\($0)", type: TestColumn.types[$0], nullable: true)
            }
            let failure = csv.withUnsafeBufferPointer { bytes in
                columns.withUnsafeMutableBufferPointer { CSVColumnReader.appendRows(of: bytes, from: headerEnd, to: $0) }
            }
            #expect(failure == nil, "\(rows) rows: \(failure?.problem ?? "")")
            #expect(try ParquetWriter.write(columns) == ParquetWriter.write(typed), "\(rows) rows")
        }

        var lines = Array(repeating: "1", count: 1200)
        lines[1000] = "x"  // line 1002 of the file, in the second block
        let csv = Array(("c\n" + lines.joined(separator: "\n") + "\n").utf8)
        var columns = [ParquetColumn(name: "c", type: .int64, nullable: false)]
        let failure = csv.withUnsafeBufferPointer { bytes in
            columns.withUnsafeMutableBufferPointer { CSVColumnReader.appendRows(of: bytes, from: 2, to: $0) }
        }
        #expect(failure?.line == 1002 && failure?.column == 0)
        #expect(failure?.problem == "not a value of the column's type: x")
    }

    /// A field as `CSVLine` writes it: quoted (quotes doubled) when empty or holding `,`, `"` or a line end.
    static func csvField(_ text: [UInt8]) -> [UInt8] {
        guard text.isEmpty || text.contains(where: { [0x2C, 0x22, 0x0A, 0x0D].contains($0) }) else { return text }
        return [0x22] + text.flatMap { $0 == 0x22 ? [0x22, 0x22] : [$0] } + [0x22]
    }

    /// What `ParquetTable.encode` says of `csv`, or nil when it takes it.
    static func refusal(_ csv: [UInt8], _ table: String, _ columns: [AggregateColumn]) -> String? {
        do {
            _ = try ParquetTable.encode(csv: csv, table: table, columns: columns)
            return nil
        } catch {
            return "\(error)"
        }
    }

    /// A value as the CSV writes it (without the quoting, which the caller removes).
    static func text(_ value: TestColumn.Value, _ type: ParquetType) -> [UInt8] {
        switch (value, type) {
        case (.string(let bytes), _): return bytes
        case (.integer(let number), .boolean): return Array((number == 1 ? "true" : "false").utf8)
        case (.integer(let days), .date): return Array(UTCDay(daysSinceEpoch: Int(days)).description.utf8)
        case (.integer(let bits), .double): return Array(Double(bitPattern: UInt64(bitPattern: bits)).description.utf8)
        case (.integer(let number), _): return Array(String(number).utf8)
        case (.decimal(let unscaled), _):
            let magnitude = unscaled.magnitude
            let fraction = String(magnitude % 1_000_000)
            return Array(
                "\(unscaled < 0 ? "-" : "")\(magnitude / 1_000_000).\(String(repeating: "0", count: 6 - fraction.count))\(fraction)"
                    .utf8)
        }
    }
}
