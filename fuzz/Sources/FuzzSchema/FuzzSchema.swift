import Aggregation
import Postbacks

/// Any bytes as a conversion schema file: strict JSON and every validation rule; then, for a schema
/// that loads, every fine and coarse value of every window, its source-identifier maps and the flat
/// decode-table export. A file either loads or says why; nothing may crash, hang or trip ASan.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSchema(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let schema: ConversionSchema
    do {
        schema = try ConversionSchema(json: bytes, file: "fuzz.json")
    } catch let error as AggregationError {
        precondition(!error.problems.isEmpty && error.problems.allSatisfy { !$0.isEmpty }, "a rejected schema must say why")
        return 0
    } catch {
        preconditionFailure("a rejected schema must throw an AggregationError: \(error)")
    }
    for window in 0...2 {
        for value in 0...63 { _ = schema.decode(fine: value, window: window) }
        for coarse in CoarseConversionValue.allCases { _ = schema.decode(coarse: coarse, window: window) }
    }
    for map in schema.sourceIdentifierMaps {
        for identifier in ["39", "239", "5239", "0000", "9999", "1"] { _ = map.dimensions(sourceIdentifier: identifier) }
        for campaign: Int64 in [0, 1, 42, 100] { _ = map.dimensions(campaignID: campaign) }
    }
    // A schema that loads alone also loads as a catalog of one, and exports.
    let catalog: SchemaCatalog
    do {
        catalog = try SchemaCatalog(schemas: [schema])
    } catch {
        preconditionFailure("a valid schema is not a valid catalog of one: \(error)")
    }
    for table in DecodeTable.Table.allCases { _ = DecodeTable.csv(catalog, table: table) }
    return 0
}
