import AggregateSchema
import Parquet
import PostbackStore
import Testing

@testable import Aggregation

/// The published contract (`AggregateSchema`) against the record's declaration it shows and the
/// engines' type names: these fail when one drifts from the other.
@Suite struct AggregateSchemaTests {
    /// Every column that shows a stored field is named as the record declares the field's column
    /// (`AttributionField.column`), and every field with a column has one.
    @Test func recordColumnsAreNamedAsTheRecordDeclares() {
        for column in RecordColumn.allCases { #expect(column.field.column == column.rawValue, "\(column)") }
        let shown = Set(RecordColumn.allCases.map(\.field))
        for field in AttributionField.allCases where field.column != nil { #expect(shown.contains(field), "\(field)") }
    }

    /// A field's column has the kind of type the record stores it as.
    @Test func recordColumnTypesFollowTheStoredTypes() {
        for column in RecordColumn.allCases {
            switch column.field.valueType {
            case .integer: #expect(column.type == .int32 || column.type == .int64, "\(column)")
            case .boolean: #expect(column.type == .bool, "\(column)")
            case .string: #expect(column.type == .string, "\(column)")
            case .object, .array: Issue.record("\(column) shows a field that is not a scalar")
            }
        }
    }

    /// The type names, written from docs/aggregate.md ("Column types") and Spark SQL's names, not from
    /// the switches that make them.
    @Test func typeNamesAreTheDocumentedOnes() {
        let expected: [(ColumnType, sql: String, spark: String, parquet: ParquetType)] = [
            (.string, "VARCHAR", "string", .string), (.int32, "INTEGER", "int", .int32), (.int64, "BIGINT", "bigint", .int64),
            (.bool, "BOOLEAN", "boolean", .boolean), (.date, "DATE", "date", .date), (.double, "DOUBLE", "double", .double),
            (.decimal(precision: 38, scale: 6), "DECIMAL(38, 6)", "decimal(38,6)", .decimal(precision: 38, scale: 6)),
        ]
        for (type, sql, spark, parquet) in expected {
            #expect(type.sql == sql)
            #expect(type.spark == spark)
            #expect(type.parquet == parquet)
        }
        #expect(ColumnType.amount == .decimal(precision: 38, scale: 6))
    }

    /// Only the postback counts are never empty; the rollups sum exactly the counts and the amounts.
    @Test func rolesDecideNullabilityAndSums() {
        let detail = AggregateTables.detailInOrder
        #expect(
            detail.filter { !$0.isNullable }.map(\.name) == [
                "postbacks", "installs", "redownloads", "reengagements", "losses", "null_cv_postbacks",
                "development_postbacks", "rejected_postbacks", "duplicates_dropped", "flagged_postbacks", "conflicting_copies",
            ])
        #expect(
            detail.filter(\.isMeasure).map(\.name) == [
                "postbacks", "installs", "redownloads", "reengagements", "losses", "null_cv_postbacks", "revenue_min_sum",
                "revenue_max_sum", "revenue_est_sum", "development_postbacks", "rejected_postbacks", "duplicates_dropped",
                "flagged_postbacks", "conflicting_copies",
            ])
        // The cohort tables' counts are never empty either (0 on a row with spend only).
        #expect(
            AggregateTables.cohortColumns.filter { !$0.isNullable }.map(\.name) == [
                "installs", "redownloads", "reengagements", "postbacks_w1", "postbacks_w2", "postbacks_w3",
                "winning_postbacks", "null_cv_postbacks",
            ])
    }
}
