extension SpoolRecovery {
    /// The dedup key one complete spool line adds to the index, read exactly as recovery reads it
    /// (the fast path, else the full parser): a verified record's key; nil for any other line
    /// (a rejected or unverifiable status, a line that does not parse).
    ///
    /// For segments that are not on local disk: a receiver reads the keys other receivers shipped to
    /// a shared bucket (`SharedDedupKeys`), so the live index covers them too.
    package static func dedupKey(ofLine line: [UInt8]) -> String? {
        if let verdict = SegmentScan.fastVerdict(line) { return verdict.status == .verified ? verdict.dedupKey : nil }
        guard let record = try? SpoolRecord(line: line), record.status == .verified else { return nil }
        return record.dedupKey
    }
}
