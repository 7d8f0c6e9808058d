import AggregateSchema
import Aggregation
import Basics
import Dispatch
import Foundation
import Locking
import PostbackClient
import PostbackCrypto
import PostbackStore
import Postbacks

#if canImport(Glibc)
    import Glibc
#endif

/// `aggregate --data s3://…` and `report --data s3://…`: the local job, run against the bucket, then
/// the outputs published back: data files first, each day's manifest last (the commit record
/// readers trust), unchanged objects left alone.
///
/// `aggregate` streams the spool: the job lists each day's segments in the bucket and downloads them
/// on `parallelDownloads` connections ahead of its scanners, a bounded number in memory
/// (`SegmentPrefetch`), never on disk. Only the range's existing `agg/` partitions (small; the rerun
/// rules compare against them) are staged into a private work directory, which also receives the new
/// outputs and is removed afterwards. `report` stages the range's `agg/` partitions. The job's result
/// depends only on the segments' names and bytes, so a run from the bucket is byte-identical to a run
/// over the same segments on disk (tested).
///
/// Object stores have no `flock`: `aggregate` takes a lease object, `agg/_lease.json`, by conditional
/// create (`If-None-Match: *`). A second job finds it and stops with an error naming the holder; a
/// lease older than `leaseSeconds` (a job that died) is taken over.
enum ObjectStoreJobs {
    static let leaseKey = "agg/_lease.json"
    static let leaseSeconds = 6 * 3600.0

    struct Staged {
        let client: S3Client
        let root: String
        /// Relative path → SHA-256 (base64) of what was downloaded.
        var downloaded: [String: String] = [:]
    }

    static func client(_ url: String, environment: [String: String]? = nil) throws -> S3Client {
        let client = try S3Client(location: S3Location(url: url), settings: S3Settings.fromEnvironment(environment))
        try client.checkAccess()
        return client
    }

    /// Runs the nightly job against the bucket; `body` runs it on the staged directory.
    static func aggregate(
        url: String, from: UTCDay, to: UTCDay, lookbackDays: Int, environment: [String: String]? = nil,
        body: (_ stagedRoot: String, _ segments: any SegmentSource) throws -> Void
    ) throws {
        let client = try client(url, environment: environment)
        // As for a local store: a mistyped URL must not publish empty days over good ones.
        guard try !client.list(relativePrefix: "raw/postbacks/", pageSize: 1, firstPageOnly: true).isEmpty else {
            throw CommandError.usage(
                "--data \(client.location) holds no spool (no raw/postbacks/ objects): is it where the receivers ship to?")
        }
        let lease = try Lease.acquire(client: client)
        defer { lease.release() }
        var staged = try Staged(client: client, root: makeWorkDirectory())
        defer { try? FileManager.default.removeItem(atPath: staged.root) }
        try stageAggregates(from: from, to: to, into: &staged)
        try stageCohortInputs(from: from, to: to, into: &staged)
        // The local job checks that the store has a spool; its segments come from the bucket.
        try FileManager.default.createDirectory(atPath: staged.root + "/raw/postbacks", withIntermediateDirectories: true)
        try body(staged.root, ObjectStoreSegments(location: client.location, settings: client.settings))
        var day = from
        while day <= to {
            let manifest = PublishedLayout.dayManifest(day)
            let outputs = try localFiles(under: staged.root, relative: "agg").filter {
                $0.contains("/dt=\(day)/") && !$0.hasPrefix("agg/_")
            }
            for path in outputs.sorted() + [manifest] { try publish(path, from: staged) }
            // A table file the job removed (a rerun with another --format) goes from the bucket too,
            // after the manifest that no longer lists it.
            for key in staged.downloaded.keys.sorted()
            where key.contains("/dt=\(day)/") && !key.hasPrefix("agg/_")
                && !FileManager.default.fileExists(atPath: staged.root + "/" + key)
            {
                try staged.client.delete(relativeKey: key)
            }
            day = day.adding(days: 1)
        }
        // Then the cohorts the job rebuilt: tables first, each cohort's manifest last.
        let cohortFiles = try AggregateTables.cohortTables.flatMap {
            try localFiles(under: staged.root, relative: "agg/\($0.table)")
        }
        for path in cohortFiles.sorted() { try publish(path, from: staged) }
        for path in try localFiles(under: staged.root, relative: PublishedLayout.cohortManifests).sorted() {
            try publish(path, from: staged)
        }
        // A cohort file the pass removed (a rerun with another --format) goes from the bucket too.
        for key in staged.downloaded.keys.sorted()
        where AggregateTables.cohortTables.contains(where: { key.hasPrefix("agg/\($0.table)/") })
            && !FileManager.default.fileExists(atPath: staged.root + "/" + key)
        {
            try staged.client.delete(relativeKey: key)
        }
    }

    /// What the cohort pass reads besides the run's own days: the manifests and `campaign_daily`
    /// partitions of the received days its cohorts reach, the published cohorts, and the stored spend.
    private static func stageCohortInputs(from: UTCDay, to: UTCDay, into staged: inout Staged) throws {
        let reach = CohortStatus.lastDayOffsets.window3
        var keys: [String] = []
        var day = from.adding(days: -reach)
        while day <= to.adding(days: reach) {
            if day < from || day > to {
                keys += try staged.client.list(relativePrefix: "agg/_manifests/dt=\(day).json").map(\.relativeKey)
                for (_, source) in AggregateTables.cohortTables {
                    keys += try staged.client.list(relativePrefix: "agg/\(source)/dt=\(day)/").map(\.relativeKey)
                }
                if day < from { keys += try cohortKeys(staged.client, day: day) }
            }
            day = day.adding(days: 1)
        }
        keys += try staged.client.list(relativePrefix: "spend/dt=").map(\.relativeKey)
        keys += try staged.client.list(relativePrefix: "agg/_cohort_manifests/").map(\.relativeKey).filter { !keys.contains($0) }
        try download(Array(Set(keys)).sorted(), into: &staged)
    }

    /// The keys of an install date's published cohort: its manifest and both tables' partitions.
    private static func cohortKeys(_ client: S3Client, day: UTCDay) throws -> [String] {
        var keys = try client.list(relativePrefix: "agg/_cohort_manifests/dt=\(day).json").map(\.relativeKey)
        for (table, _) in AggregateTables.cohortTables {
            keys += try client.list(relativePrefix: "agg/\(table)/dt=\(day)/").map(\.relativeKey)
        }
        return keys
    }

    /// `spend import --data s3://…`: the bucket's stored spend is staged, `body` imports into the
    /// staged store, and the day files that changed and the import's record are uploaded (each
    /// object replaced whole: an interrupted import leaves some days new, the others old).
    static func importSpend(
        url: String, environment: [String: String]? = nil, body: (String) throws -> SpendStore.ImportResult
    ) throws -> SpendStore.ImportResult {
        var staged = try Staged(client: client(url, environment: environment), root: makeWorkDirectory())
        defer { try? FileManager.default.removeItem(atPath: staged.root) }
        try download(try staged.client.list(relativePrefix: "spend/dt=").map(\.relativeKey), into: &staged)
        let result = try body(staged.root)
        for path in try localFiles(under: staged.root, relative: "spend").sorted() where !path.hasPrefix("spend/_") {
            try publish(path, from: staged)
        }
        try publish(String(result.recordPath.dropFirst(staged.root.count + 1)), from: staged)
        return result
    }

    /// Runs the report against the bucket; `body` runs it on the staged directory.
    static func report(url: String, from: UTCDay, to: UTCDay, environment: [String: String]? = nil, body: (String) throws -> Void)
        throws
    {
        var staged = try Staged(client: client(url, environment: environment), root: makeWorkDirectory())
        defer { try? FileManager.default.removeItem(atPath: staged.root) }
        try stageAggregates(from: from, to: to, into: &staged)
        do {
            try body(staged.root)
        } catch {
            throw CommandError.inBucket(error, stagedRoot: staged.root, url: url)
        }
    }

    /// Brings `root/agg/` up to date with the bucket's published aggregates, for `postback api
    /// --data s3://…`, which serves the copy. A manifest (day, cohort) or check file is fetched every
    /// time; a table's file only when it is missing here, its size differs, or its day's manifest
    /// changed; manifests are put in place after their tables, so a reader never meets a new manifest
    /// over old tables (old manifest over new tables fails its checksum and leaves the day out until
    /// the next pass, never answers wrong rows). Files gone from the bucket are left alone. Returns
    /// how many objects were fetched.
    @discardableResult
    static func mirrorPublished(url: String, into root: String, environment: [String: String]? = nil) throws -> Int {
        let client = try client(url, environment: environment)
        let objects = try client.list(relativePrefix: "agg/").filter {
            !$0.relativeKey.hasSuffix("/") && !$0.relativeKey.split(separator: "/").contains { $0 == ".." || $0 == "." }
                && $0.relativeKey != leaseKey
        }
        func isManifest(_ key: String) -> Bool { key.hasSuffix(".json") }
        func day(_ key: String) -> Substring? {
            key.split(separator: "/").first { $0.hasPrefix("dt=") }.map { $0.dropFirst(3).prefix(10) }
        }
        // The work directory is beside the copy, so each file is put in place by a rename.
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        var staged = Staged(client: client, root: try makeWorkDirectory(in: root + "/.postback-mirror-"))
        defer { try? FileManager.default.removeItem(atPath: staged.root) }
        // Every manifest to the work directory first: the days whose manifest changed are refetched.
        try download(objects.map(\.relativeKey).filter(isManifest), into: &staged)
        var changedDays = Set<Substring>()
        for key in staged.downloaded.keys {
            let fresh = try? FileBytes.read(path: staged.root + "/" + key, limit: 1 << 30)
            let current = try? FileBytes.read(path: root + "/" + key, limit: 1 << 30)
            if fresh != current, let day = day(key) { changedDays.insert(day) }
        }
        let tables = objects.filter { object in
            guard !isManifest(object.relativeKey) else { return false }
            let here = (try? FileManager.default.attributesOfItem(atPath: root + "/" + object.relativeKey))?[.size] as? Int
            return here != object.size || day(object.relativeKey).map(changedDays.contains) ?? true
        }
        try download(tables.map(\.relativeKey), into: &staged)
        // Into place: the tables, then the manifests, each by rename (a reader sees old or new bytes).
        let order = staged.downloaded.keys.sorted { (isManifest($0) ? 1 : 0, $0) < (isManifest($1) ? 1 : 0, $1) }
        for key in order {
            let target = root + "/" + key
            try FileManager.default.createDirectory(
                atPath: String(target[..<target.lastIndex(of: "/")!]), withIntermediateDirectories: true)
            guard rename(staged.root + "/" + key, target) == 0 else {
                throw CommandError.usage(
                    "mirroring \(url): \(SystemCallError(operation: "rename", path: target, errorNumber: errno))")
            }
        }
        return staged.downloaded.count
    }

    /// Downloads the range's published aggregates (manifests and every table's partitions: small)
    /// into the staging directory.
    private static func stageAggregates(from: UTCDay, to: UTCDay, into staged: inout Staged) throws {
        var keys: [String] = []
        var day = from
        while day <= to {
            keys += try aggregateKeys(staged.client, day: day)
            day = day.adding(days: 1)
        }
        try download(keys, into: &staged)
    }

    /// The keys of a day's published aggregates: its manifest and every table's partition.
    private static func aggregateKeys(_ client: S3Client, day: UTCDay) throws -> [String] {
        var keys = try client.list(relativePrefix: "agg/_manifests/dt=\(day).json").map(\.relativeKey)
        for table in AggregateTables.all {
            keys += try client.list(relativePrefix: "agg/\(table)/dt=\(day)/").map(\.relativeKey)
        }
        return keys + (try cohortKeys(client, day: day))
    }

    /// Downloads `keys`, each streamed to its file under the staging root, on `parallelDownloads`
    /// connections (one store request at a time leaves a loopback or LAN link mostly idle).
    static let parallelDownloads = 4

    private static func download(_ keys: [String], into staged: inout Staged) throws {
        let root = staged.root
        let checksums = Locked<[String: String]>([:])
        try staged.client.forEachKey(keys, connections: parallelDownloads) { client, key in
            let checksum = try downloadOne(key, root: root, client: client)
            checksums.withLock { $0[key] = checksum }
        }
        staged.downloaded.merge(checksums.withLock { $0 }) { $1 }
    }

    /// One object to its file; returns its SHA-256 (base64).
    private static func downloadOne(_ key: String, root: String, client: S3Client) throws -> String? {
        // Keys are store paths; nothing may climb out of the staging directory.
        guard !key.split(separator: "/").contains(where: { $0 == ".." || $0 == "." }), !key.hasSuffix("/") else { return nil }
        let path = root + "/" + key
        try FileManager.default.createDirectory(
            atPath: String(path[..<path.lastIndex(of: "/")!]), withIntermediateDirectories: true)
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode_t(DurableFile.dataFileMode))
        guard fd >= 0 else {
            throw CommandError.usage(
                "staging a copy from the bucket: \(SystemCallError(operation: "create", path: path, errorNumber: errno))")
        }
        defer { close(fd) }
        let hasher = SHA256Hasher()
        var writeError: SystemCallError? = nil
        var received: Result<Bool, any Error> = .success(true)
        received = Result { () throws -> Bool in
            try client.get(relativeKey: key) { chunk in
                hasher.update(chunk)
                do throws(SystemCallError) { try FileDescriptorIO.writeAll(chunk, to: fd, path: path) } catch {
                    writeError = error
                    return false
                }
                return true
            }
        }
        if let writeError {
            throw CommandError.usage("staging a copy from the bucket: \(writeError)")
        }
        _ = try received.get()
        return Data(hasher.finalize().bytes).base64EncodedString()
    }

    /// Uploads one local output unless the bucket already holds the same bytes.
    private static func publish(_ relativePath: String, from staged: Staged) throws {
        let path = staged.root + "/" + relativePath
        guard let bytes = try? FileBytes.read(path: path, limit: 1 << 34) else { return }
        let checksum = Data(SHA256.hash(bytes).bytes).base64EncodedString()
        if staged.downloaded[relativePath] == checksum { return }
        try staged.client.putBytes(
            relativeKey: relativePath, bytes: bytes, checksumSHA256: checksum,
            contentType: relativePath.hasSuffix(".json")
                ? "application/json" : relativePath.hasSuffix(".parquet") ? "application/vnd.apache.parquet" : "text/csv")
    }

    private static func localFiles(under root: String, relative: String) throws -> [String] {
        guard let enumerator = FileManager.default.enumerator(atPath: root + "/" + relative) else { return [] }
        var files: [String] = []
        while let next = enumerator.nextObject() as? String {
            var isDirectory: ObjCBool = false
            let full = root + "/" + relative + "/" + next
            if FileManager.default.fileExists(atPath: full, isDirectory: &isDirectory), !isDirectory.boolValue,
                !next.split(separator: "/").last!.hasPrefix(".")
            {
                files.append(relative + "/" + next)
            }
        }
        return files
    }

    private static func makeWorkDirectory(in prefix: String = NSTemporaryDirectory() + "postback-s3-") throws -> String {
        let directory = String(prefix[..<(prefix.lastIndex(of: "/") ?? prefix.startIndex)])
        var template = Array((prefix + "XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else {
            throw CommandError.usage(
                "cannot create a work directory (set TMPDIR to another directory): "
                    + "\(SystemCallError(operation: "mkdtemp", path: directory, errorNumber: errno))")
        }
        return String(cString: made)
    }

    /// The publishing lease: `agg/_lease.json`, created only if absent.
    final class Lease {
        let client: S3Client
        let bytes: [UInt8]
        private var held = true

        private init(client: S3Client, bytes: [UInt8]) {
            self.client = client
            self.bytes = bytes
        }

        static func acquire(client: S3Client, now: Double = Date().timeIntervalSince1970) throws -> Lease {
            var host = [CChar](repeating: 0, count: 256)
            gethostname(&host, host.count)
            let holder = String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) + ":\(getpid())"
            let bytes = Array(
                "{\"holder\":\"\(holder)\",\"acquired\":\(Int(now)),\"expires\":\(Int(now + ObjectStoreJobs.leaseSeconds))}\n"
                    .utf8)
            let checksum = Data(SHA256.hash(bytes).bytes).base64EncodedString()
            for attempt in 0..<2 {
                do {
                    try client.putBytes(
                        relativeKey: ObjectStoreJobs.leaseKey, bytes: bytes, checksumSHA256: checksum, createOnly: true,
                        contentType: "application/json")
                    return Lease(client: client, bytes: bytes)
                } catch {
                    guard (error as? ClientError)?.code == .alreadyExists else { throw error }
                    let existing = try client.getBytes(relativeKey: ObjectStoreJobs.leaseKey) ?? []
                    let text = String(decoding: existing, as: UTF8.self)
                    let expires =
                        text.range(of: "\"expires\":").flatMap { Double(text[$0.upperBound...].prefix { $0.isNumber }) } ?? 0
                    guard attempt == 0, expires < now else {
                        throw CommandError.usage(
                            "another aggregate job holds \(client.location.key(ObjectStoreJobs.leaseKey)) (\(text.trimmingCharacters(in: .whitespacesAndNewlines))); "
                                + "wait for it, or delete that object if no job is running")
                    }
                    // Expired: its job died. Take it over (the conditional create still decides between two takers).
                    try client.delete(relativeKey: ObjectStoreJobs.leaseKey)
                }
            }
            throw CommandError.usage("could not take \(client.location.key(ObjectStoreJobs.leaseKey))")
        }

        /// Deletes the lease if it is still this job's.
        func release() {
            guard held else { return }
            held = false
            if (try? client.getBytes(relativeKey: ObjectStoreJobs.leaseKey)) == bytes {
                try? client.delete(relativeKey: ObjectStoreJobs.leaseKey)
            }
        }

        deinit { release() }
    }
}

/// The bucket's spool segments for the job: listed per partition, fetched whole on one connection
/// per download thread.
struct ObjectStoreSegments: SegmentSource {
    let location: S3Location
    let settings: S3Settings
    var connections: Int { ObjectStoreJobs.parallelDownloads }

    func segments(_ spool: StoreLayout.Spool, day: UTCDay) throws(AggregationError) -> [(fileName: String, size: Int)] {
        let prefix = "raw/\(spool.rawValue)/dt=\(day)/"
        do {
            let client = try S3Client(location: location, settings: settings)
            return try client.list(relativePrefix: prefix).compactMap { object in
                let fileName = object.relativeKey.dropFirst(prefix.count)
                return fileName.contains("/") ? nil : (String(fileName), object.size)
            }
        } catch {
            throw .usage("\(location)\(prefix): cannot list the spool: \(error)")
        }
    }

    func makeFetcher() throws(AggregationError) -> any SegmentFetcher {
        do { return Fetcher(client: try S3Client(location: location, settings: settings)) } catch {
            throw .usage("\(location): \(error)")
        }
    }

    final class Fetcher: SegmentFetcher {
        let client: S3Client
        init(client: S3Client) { self.client = client }

        func fetch(_ name: String, size: Int, receive: @escaping (UnsafeRawBufferPointer) -> Void) throws(AggregationError) {
            let found: Bool
            do {
                found = try client.get(relativeKey: name) { chunk in
                    receive(chunk)
                    return true
                }
            } catch {
                throw .usage("\(client.location)\(name): cannot download the segment: \(error)")
            }
            // Listed a moment ago: only someone deleting the spool makes it vanish.
            guard found else { throw .usage("\(client.location)\(name): the segment vanished while the job ran; run it again") }
        }
    }
}
