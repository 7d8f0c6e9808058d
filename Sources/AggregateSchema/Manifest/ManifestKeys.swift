package import Basics

/// A member name of the published manifests (docs/aggregate.md, "The manifest"; "When cohorts are
/// rebuilt"): each object's members are one enum, declared once here. The writers (`ManifestWriter`,
/// `CohortDay`) write them and every reader (the report's `DayManifest` and `CohortManifest`, the
/// cohort pass, the rerun check) reads them through `ManifestObject`.
package protocol ManifestKey: RawRepresentable<String>, Sendable {}

/// The day manifest's top-level members (`agg/_manifests/dt=D.json`), in written order.
package enum DayManifestKey: String, ManifestKey, CaseIterable {
    case format, dt, tool
    case lookbackDays = "lookback_days"
    case spoolSegments = "spool_segments"
    case partial, inputs
    case lookbackInputs = "lookback_inputs"
    case schemas, outputs, model, totals
    case appsWithoutSchema = "apps_without_schema"
    case rejectedByStatus = "rejected_by_status"
    case rejectedReasons = "rejected_reasons"
    case quarantined
    case quarantineUnreadableLines = "quarantine_unreadable_lines"
    case conflictingCopies = "conflicting_copies"
    case conflicts
    case conflictsUnreadableLines = "conflicts_unreadable_lines"
    case problems
}

/// The cohort manifest's top-level members (`agg/_cohort_manifests/dt=INSTALL_DAY.json`), in written order.
package enum CohortManifestKey: String, ManifestKey, CaseIterable {
    case format, dt, tool
    case cohortStatus = "cohort_status"
    case completeThrough = "complete_through"
    case inputs
    case fxRates = "fx_rates"
    case outputs, totals
}

/// An input file: a day's spool segments (`inputs`, `lookback_inputs`), a cohort's sources and spend files.
package enum ManifestInputKey: String, ManifestKey, CaseIterable {
    case path, spool, bytes, sha256, lines, postbacks, rejected
    case corruptLines = "corrupt_lines"
    case tornTail = "torn_tail"
}

/// A published file (`outputs`): the day's and the cohort's manifests list them alike.
package enum ManifestOutputKey: String, ManifestKey, CaseIterable {
    case table, path, rows, bytes, sha256
}

/// A conversion schema a day decoded with (`schemas`).
package enum ManifestSchemaKey: String, ManifestKey, CaseIterable {
    case schemaID = "schema_id"
    case file, sha256
}

/// The rates file of a cohort (`fx_rates`).
package enum ManifestFXKey: String, ManifestKey, CaseIterable {
    case file, bytes, sha256
}

/// The null-value model's parameters (`model`, docs/modeling.md).
package enum ManifestModelKey: String, ManifestKey, CaseIterable {
    case name
    case poolingDays = "pooling_days"
    case minMeasured = "min_measured"
    case interval
    case priorPostbacks = "prior_postbacks"
}

/// `totals` of a day's manifest and of a cohort's.
package enum ManifestTotalsKey: String, ManifestKey, CaseIterable {
    case postbacks, installs, redownloads, reengagements, losses
    case nullValuePostbacks = "null_cv_postbacks"
    case decodedPostbacks = "decoded_postbacks"
    case revenueEstByCurrency = "revenue_est_by_currency"
    case developmentPostbacks = "development_postbacks"
    case rejectedPostbacks = "rejected_postbacks"
    case duplicatesSameDay = "duplicates_same_day"
    case duplicatesOfEarlierDays = "duplicates_of_earlier_days"
    case corruptLines = "corrupt_lines"
    case tornTails = "torn_tails"
    case spendByCurrency = "spend_by_currency"
}

/// An app counted without a schema (`apps_without_schema`).
package enum ManifestAppKey: String, ManifestKey, CaseIterable {
    case appID = "app_id"
    case postbacks
}

/// A rejection reason and its count (`rejected_reasons`).
package enum ManifestReasonKey: String, ManifestKey, CaseIterable {
    case reason, count
}

/// Quarantined postbacks of one kind (`quarantined`).
package enum ManifestQuarantinedKey: String, ManifestKey, CaseIterable {
    case quarantine
    case postbackProtocol = "protocol"
    case version, environment, field, raw, postbacks
}

/// Copies that disagreed on one field (`conflicts`).
package enum ManifestConflictKey: String, ManifestKey, CaseIterable {
    case appID = "app_id"
    case adNetworkID = "ad_network_id"
    case field, copies
}

/// A damaged line of an input (`problems`).
package enum ManifestProblemKey: String, ManifestKey, CaseIterable {
    case path, line, reason
}

extension JSONWriter {
    package mutating func key(_ key: some ManifestKey) { self.key(key.rawValue) }
    package mutating func field(_ key: some ManifestKey, _ string: String?) { field(key.rawValue, string) }
    package mutating func field(_ key: some ManifestKey, _ number: Int64?) { field(key.rawValue, number) }
    package mutating func field(_ key: some ManifestKey, _ number: Int?) { field(key.rawValue, number) }
    package mutating func field(_ key: some ManifestKey, _ flag: Bool?) { field(key.rawValue, flag) }
}
