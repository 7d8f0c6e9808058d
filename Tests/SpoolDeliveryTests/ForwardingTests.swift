import Basics
import Foundation
import PostbackClient
import PostbackStore
import PostbackTesting
import Postbacks
import TestSupport
import Testing

@testable import PostbackCLI
@testable import PostbackServer
@testable import SpoolDelivery

#if canImport(Glibc)
    import Glibc
#endif

@Suite("serve forwards verified postbacks to partners", .serialized)
struct ForwardingTests {
    /// A second receiver downstream: its dedup makes "exactly once" visible in its spool.
    @Test func downstreamOutageMidLoadDeliversEveryPostbackExactlyOnce() throws {
        var downstream = try TestServer(writerID: "rx-down", forwarding: .init("[]"))
        let downstreamPort = downstream.server.port
        let downstreamURL = "http://127.0.0.1:\(downstreamPort)/.well-known/skadnetwork/report-attribution/"
        let upstream = try TestServer(
            writerID: "rx-forward",
            forwarding: .init(
                """
                [{"name": "downstream", "url": "\(downstreamURL)", "timeout_seconds": 2, "concurrency": 3}]
                """))
        defer { upstream.stop() }
        var acknowledged = 0
        for index in 0..<90 {
            if try upstream.post(TestPostbacks.body(index, seed: 18)).status == 200 { acknowledged += 1 }
            if index == 30 {
                // Some have gone through; then the downstream goes away in the middle of the load.
                #expect(eventually(20) { ((try? verifiedRecords(downstream.dataDirectory).count) ?? 0) > 0 })
                downstream.stop()
            }
        }
        #expect(acknowledged == 90)
        #expect(
            eventually(10) { (upstream.metric("postback_forward_retried_total", destination: "forward-downstream") ?? 0) > 0 })
        #expect(upstream.metric("postback_forward_destination_up", destination: "forward-downstream") == 0)
        // Back on the same port and data directory: the backlog drains.
        downstream = try TestServer(dataDirectory: downstream.dataDirectory, writerID: "rx-down", forwarding: .init("[]")) {
            $0.listen = "127.0.0.1:\(downstreamPort)"
        }
        defer { downstream.stop() }
        let sent = Set(try verifiedRecords(upstream.dataDirectory).compactMap(\.dedupKey))
        #expect(sent.count == 90)
        var received: [String] = []
        let drained = eventually(60) {
            received = ((try? verifiedRecords(downstream.dataDirectory)) ?? []).compactMap(\.dedupKey)
            return Set(received) == sent
        }
        #expect(drained, "downstream holds \(Set(received).count) of \(sent.count)")
        #expect(received.count == sent.count, "stored exactly once downstream")
        #expect(eventually(10) { upstream.metric("postback_forward_queue_segments", destination: "forward-downstream") == 0 })
        #expect(upstream.metric("postback_forward_lag_seconds", destination: "forward-downstream") == 0)
        #expect((upstream.metric("postback_forward_delivered_total", destination: "forward-downstream") ?? 0) >= 90)
        #expect(upstream.metric("postback_forward_dead_lettered_total", destination: "forward-downstream") == 0)
        #expect(upstream.metric("postback_forward_last_success_timestamp_seconds", destination: "forward-downstream") != nil)
        #expect(upstream.logs.lines.withLock { $0.contains { $0.contains("partner available again") } })
    }

    /// 500, a closed connection, a hang past the timeout, 429 with Retry-After, 400: retried with the
    /// same Idempotency-Key until accepted, or a dead letter for the 400; the API key only on the wire.
    @Test func partnerAnswersDriveRetriesRetryAfterAndDeadLetters() throws {
        let partner = try PartnerServer()
        let apiKey = "sk_live_\(UUID().uuidString)"
        let queryKey = "q\(UUID().uuidString.prefix(8))"  // some partners take their key in the URL
        try partner.script(["500", "close", "hang:3", "429:1", "400"])
        let receiver = try TestServer(
            writerID: "rx-forward",
            forwarding: .init(
                """
                [{"name": "mmp", "url": "\(partner.url)?token=\(queryKey)", "timeout_seconds": 1, "concurrency": 1,
                  "headers": {"Authentication": {"env": "MMP_API_KEY"}, "X-Network": "example"}}]
                """, environment: ["MMP_API_KEY": apiKey]))
        defer { receiver.stop() }
        for index in 0..<6 { #expect(try receiver.post(TestPostbacks.body(index, seed: 7)).status == 200) }
        let records = try verifiedRecords(receiver.dataDirectory)
        let keys = Set(records.compactMap(\.dedupKey))
        #expect(keys.count == 6)
        // Five postbacks accepted, one refused (400) and dead-lettered.
        #expect(
            eventually(30) {
                partner.acceptedKeys.count == 5
                    && receiver.metric("postback_forward_dead_lettered_total", destination: "forward-mmp") == 1
            })
        let requests = partner.requests
        #expect(Set(requests.compactMap(\.idempotencyKey)) == keys, "every request carries its postback's dedup key")
        #expect(requests.allSatisfy { $0.headers["authentication"] == apiKey && $0.headers["x-network"] == "example" })
        // Apple's body byte for byte (no enrichment configured).
        let bodies = Dictionary(records.map { ($0.dedupKey!, $0.body) }) { first, _ in first }
        #expect(requests.allSatisfy { bodies[$0.idempotencyKey ?? ""] == $0.body })
        // The 429 asked for 1 s: the next attempt waited at least that long.
        if let throttled = requests.firstIndex(where: { $0.status == 429 }), throttled + 1 < requests.count {
            #expect(requests[throttled + 1].time - requests[throttled].time >= 0.95)
        } else {
            Issue.record("no 429 followed by a retry in \(requests.map(\.status))")
        }
        // 500, the timeout and the 429 (libcurl itself re-sends once on a connection closed without an answer).
        #expect((receiver.metric("postback_forward_retried_total", destination: "forward-mmp") ?? 0) >= 3)
        #expect(Set(requests.map(\.status)).isSuperset(of: [500, 0, 429, 400, 200]))
        // The refused postback is in the dead-letter spool with the partner's status and answer.
        let dead = DeadLetterSpool.unresolved(root: receiver.dataDirectory, destination: "forward-mmp")
        #expect(dead.problems.isEmpty)
        #expect(dead.entries.count == 1)
        #expect(dead.entries.first?.status == 400)
        #expect(dead.entries.first?.answer?.contains("campaign unknown") == true)
        let refusedKey = try #require(dead.entries.first?.idempotencyKey)
        #expect(partner.acceptedKeys[refusedKey] == nil)
        #expect(dead.entries.first?.record.body == bodies[refusedKey])

        // The API key is never in logs or metrics.
        let logText = receiver.logs.lines.withLock { $0.joined() }
        #expect(!logText.isEmpty)
        #expect(!logText.contains(apiKey) && !logText.contains(queryKey))
        let page = try receiver.metricsPage()
        #expect(!page.contains(apiKey) && !page.contains(queryKey))
        #expect(logText.contains("/skan/postbacks?…"))
    }

    /// A partner answering 200 with a 256 MiB body: only a small prefix is ever held, the transfer
    /// is aborted, the delivery counts as failed (retried, logged), and the retry is delivered.
    @Test func aPartnersHugeAnswerIsCutOffAndRetried() throws {
        var residentBytes: Int { Int(ProcessMetrics.sample()?.residentBytes ?? 0) }
        let partner = try PartnerServer()
        try partner.script(["huge:256"])
        let receiver = try TestServer(
            writerID: "rx-forward",
            forwarding: .init(
                """
                [{"name": "huge", "url": "\(partner.url)", "timeout_seconds": 30, "concurrency": 1}]
                """))
        defer { receiver.stop() }
        let before = residentBytes
        #expect(try receiver.post(TestPostbacks.body(0, seed: 25)).status == 200)
        #expect(eventually(30) { receiver.metric("postback_forward_delivered_total", destination: "forward-huge") == 1 })
        let grown = residentBytes - before
        #expect(grown < 64 << 20, "resident memory grew by \(grown >> 20) MiB")
        #expect(receiver.metric("postback_forward_retried_total", destination: "forward-huge") == 1)
        #expect(receiver.logs.lines.withLock { $0.contains { $0.contains("response body over 65536 bytes") } })
        #expect(partner.requests.count == 2)
    }

    /// Only the postbacks the filters pick; enrichment after Apple's fields, Apple's bytes unchanged.
    /// `concurrency` requests are in flight at once (libcurl's multi interface on the delivery
    /// thread), never more: the partner holds each one, so overlapping requests are counted.
    @Test func concurrencyRequestsAreInFlightAtOnce() throws {
        let partner = try PartnerServer()
        try partner.setDefault("hang:0.5")
        let receiver = try TestServer(
            writerID: "rx-forward",
            forwarding: .init(
                """
                [{"name": "slow", "url": "\(partner.url)", "concurrency": 4, "timeout_seconds": 10}]
                """))
        defer { receiver.stop() }
        for index in 0..<12 { #expect(try receiver.post(TestPostbacks.body(index, seed: 9)).status == 200) }
        #expect(eventually(30) { partner.acceptedKeys.count == 12 })
        #expect(try partner.maxInFlight() == 4)
    }

    /// Batch after batch on the same connections: the multi handle lives as long as the sender (one
    /// per batch closed its connections, and every postback opened a new one).
    @Test func forwardingKeepsItsConnectionsAlive() throws {
        let partner = try PartnerServer()
        let receiver = try TestServer(
            writerID: "rx-forward",
            forwarding: .init(
                """
                [{"name": "keep", "url": "\(partner.url)", "concurrency": 2}]
                """))
        defer { receiver.stop() }
        for index in 0..<12 { #expect(try receiver.post(TestPostbacks.body(index, seed: 23)).status == 200) }
        #expect(eventually(30) { partner.acceptedKeys.count == 12 })
        let connections = try partner.connections()
        #expect(connections >= 1 && connections <= 2, "\(connections) connections for 12 postbacks")
    }

    @Test func filtersAndEnrichment() throws {
        let partner = try PartnerServer()
        let receiver = try TestServer(
            writerID: "rx-forward",
            forwarding: .init(
                """
                [{"name": "aak-only", "url": "\(partner.url)", "protocols": ["adattributionkit"], "environments": ["development"],
                  "enrich": {"received_at_field": "partner-received-at", "fields": {"partner-network": "example"},
                             "campaigns": {}}},
                 {"name": "nobody", "url": "\(partner.url)", "app_ids": [1]}]
                """))
        defer { receiver.stop() }
        for index in 0..<12 { #expect(try receiver.post(TestPostbacks.body(index, seed: 3)).status == 200) }
        let records = try verifiedRecords(receiver.dataDirectory)
        let aak = records.filter { $0.postbackProtocol == .adattributionkit }
        #expect(aak.count == 4)
        #expect(eventually(20) { partner.acceptedKeys.count == aak.count })
        #expect(eventually(10) { receiver.metric("postback_forward_filtered_total", destination: "forward-nobody") == 12 })
        #expect(receiver.metric("postback_forward_delivered_total", destination: "forward-nobody") == 0)
        #expect(receiver.metric("postback_forward_filtered_total", destination: "forward-aak-only") == 8)
        let byKey = Dictionary(records.map { ($0.dedupKey!, $0) }) { first, _ in first }
        for request in partner.requests {
            let record = try #require(byKey[request.idempotencyKey ?? ""])
            #expect(record.postbackProtocol == .adattributionkit)
            // Apple's bytes up to their closing brace, unchanged; then ours.
            let close = try #require(record.body.lastIndex(of: UInt8(ascii: "}")))
            #expect(Array(request.body.prefix(close)) == Array(record.body[..<close]))
            guard case .object(let sent) = try StrictJSONParser.parse(request.body),
                case .object(let apple) = try StrictJSONParser.parse(record.body)
            else {
                Issue.record("not a JSON object")
                continue
            }
            #expect(Array(sent.members.prefix(apple.members.count)) == apple.members)
            #expect(sent["partner-network"] == .string("example"))
            #expect(sent["partner-received-at"] == .string(record.receivedAt.description))
        }
    }

    /// Campaign enrichment by source identifier / campaign id, and a field Apple already has is never replaced.
    @Test func campaignEnrichmentNeverReplacesApplesFields() throws {
        var settings = ForwardSettings(name: "x", url: "http://127.0.0.1:9/")
        settings.enrichment.campaigns = ["42": [("partner-campaign-id", "c-42"), ("partner-campaign-name", "Winter \"sale\"")]]
        settings.enrichment.fields = [("ad-network-id", "not Apple's")]
        let sender = try ForwardSender(settings: settings)
        var record = try #require(try verifiedRecordFor(index: 0, seed: 5))
        record.attribution?.sourceIdentifier = "42"
        record.attribution?.campaignID = nil
        let body = sender.body(for: record)
        guard case .object(let sent) = try StrictJSONParser.parse(body),
            case .object(let apple) = try StrictJSONParser.parse(record.body)
        else {
            Issue.record("not a JSON object")
            return
        }
        #expect(sent["partner-campaign-id"] == .string("c-42"))
        #expect(sent["partner-campaign-name"] == .string("Winter \"sale\""))
        #expect(sent["ad-network-id"] == apple["ad-network-id"])
        #expect(sent.members.filter { $0.key == "ad-network-id" }.count == 1)
    }

    /// Whoever posts a genuine postback first may add members to it: enrichment fields replace them
    /// (they are not Apple's), and a byte-order mark in front does not stop the enrichment.
    @Test func enrichmentReplacesMembersApplesBodyDoesNotHaveAndIgnoresABOM() throws {
        let partner = try PartnerServer()
        let receiver = try TestServer(
            writerID: "rx-forward",
            forwarding: .init(
                """
                [{"name": "mmp", "url": "\(partner.url)",
                  "enrich": {"received_at_field": "partner-received-at", "fields": {"partner-campaign-id": "ours"}}}]
                """))
        defer { receiver.stop() }
        let injected = Array(#"{"partner-campaign-id":"evil", "partner-received-at" : "evil","#.utf8)
        let bodies = [
            injected + TestPostbacks.body(0, seed: 26).dropFirst(),
            utf8ByteOrderMark + TestPostbacks.body(1, seed: 26),
            TestPostbacks.body(2, seed: 26).dropLast() + Array(#","partner-campaign-id":"evil"}"#.utf8),
        ]
        for body in bodies { #expect(try receiver.post(body).status == 200) }
        #expect(eventually(20) { partner.acceptedKeys.count == 3 })
        let records = Dictionary(try verifiedRecords(receiver.dataDirectory).map { ($0.dedupKey!, $0) }) { first, _ in first }
        #expect(records.count == 3)
        for request in partner.requests {
            let record = try #require(records[request.idempotencyKey ?? ""])
            let start = request.body.starts(with: utf8ByteOrderMark) ? 3 : 0
            let recordStart = record.body.starts(with: utf8ByteOrderMark) ? 3 : 0
            guard case .object(let sent) = try StrictJSONParser.parse(Array(request.body[start...])),
                case .object(let stored) = try StrictJSONParser.parse(Array(record.body[recordStart...]))
            else {
                Issue.record("not a JSON object")
                continue
            }
            #expect(sent["partner-campaign-id"] == .string("ours"))
            #expect(sent["partner-received-at"] == .string(record.receivedAt.description))
            // Every member Apple documents goes out as stored.
            for member in stored.members where Postback.documentedFields.contains(member.key) {
                #expect(sent[member.key] == member.value)
            }
        }
    }

    /// The members' byte ranges the enrichment cuts by: strings with escaped quotes and braces,
    /// nested objects and arrays, blanks around the separators.
    @Test func memberRangesFollowStringsAndNesting() throws {
        let text = #" { "a" : "x\"},{" , "p":{"n":[1,"}]",{}]} ,"b":2 } "#
        let bytes = Array(text.utf8)
        let ranges = try #require(ForwardSender.memberRanges(bytes[...]))
        let members = ranges.map { String(decoding: bytes[$0], as: UTF8.self) }
        #expect(members == [#""a" : "x\"},{""#, #""p":{"n":[1,"}]",{}]}"#, #""b":2"#])
        #expect(ForwardSender.memberRanges(Array("{}".utf8)[...]) == [])
        #expect(ForwardSender.memberRanges(Array("[1]".utf8)[...]) == nil)
    }

    /// A postback older than `max_age_hours` is a dead letter, never sent; the cursor moves on.
    @Test func tooOldPostbacksAreDeadLetters() throws {
        let partner = try PartnerServer()
        let root = NSTemporaryDirectory() + "postback-forward-old-\(UUID().uuidString)"
        let layout = StoreLayout(root: root)
        var old = try #require(try verifiedRecordFor(index: 1, seed: 9))
        old.receivedAt = UTCTimestamp(microsecondsSinceEpoch: UTCTimestamp.now().microsecondsSinceEpoch - 3 * 3600 * 1_000_000)
        var fresh = try #require(try verifiedRecordFor(index: 2, seed: 9))
        fresh.receivedAt = UTCTimestamp.now()
        let directory = layout.partition(.postbacks, day: UTCTimestamp.now().day)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var bytes = old.encoded()
        if bytes.last != 0x0A { bytes.append(0x0A) }
        var freshLine = fresh.encoded()
        if freshLine.last != 0x0A { freshLine.append(0x0A) }
        try Data(bytes + freshLine).write(
            to: URL(fileURLWithPath: "\(directory)/\(StoreLayout.segmentName(writer: "rx-old", sequence: 1))"))
        var settings = ForwardSettings(name: "old", url: partner.url)
        settings.maxAgeSeconds = 3600
        let forwarding = try PartnerForwarding(
            settings: [settings], layout: layout, writerID: "rx-old", isOpen: { _ in false }, scanIntervalSeconds: 0.1)
        defer { forwarding.stop() }
        #expect(
            eventually(20) {
                partner.acceptedKeys.count == 1 && (forwarding.forwarders[0].worker.status.pendingSegments[.postbacks] ?? 0) == 0
                    && forwarding.forwarders[0].worker.status.scanned
            })
        #expect(partner.acceptedKeys[fresh.dedupKey!] == 1)
        let dead = DeadLetterSpool.unresolved(root: root, destination: "forward-old").entries
        #expect(dead.map(\.idempotencyKey) == [old.dedupKey!])
        #expect(dead.first?.reason == "too-old")
        #expect(dead.first?.status == nil)
    }

    /// An empty dead-letter spool in a new directory, and two verified records to put in it.
    static func deadLetterSpool(seed: UInt64) throws -> (
        root: String, spool: DeadLetterSpool, first: SpoolRecord, second: SpoolRecord
    ) {
        let root = NSTemporaryDirectory() + "postback-dead-letters-\(UUID().uuidString)"
        return (
            root, DeadLetterSpool(root: root, destination: "forward-p", writerID: "rx1"),
            try #require(try verifiedRecordFor(index: 1, seed: seed)), try #require(try verifiedRecordFor(index: 2, seed: seed))
        )
    }

    /// Appends `record` to `spool` as a partner's refusal.
    static func deadLetter(_ record: SpoolRecord, to spool: DeadLetterSpool) throws {
        try spool.append(
            record: record, recordLine: record.encoded().filter { $0 != 0x0A }, reason: .refused, status: 400,
            answer: "no", segment: "raw/postbacks/dt=2026-12-05/part-rx1-00001.jsonl", offset: 0)
    }

    /// Appends `bytes` to the file at `path` as a torn write would leave them (no sync, no cut first).
    static func tear(_ path: String, _ bytes: [UInt8]) throws {
        let handle = try #require(FileHandle(forWritingAtPath: path))
        handle.seekToEndOfFile()
        handle.write(Data(bytes))
        try handle.close()
    }

    /// A power cut can leave the last dead letter (or `.resolved` line) torn: the next append starts a
    /// clean line instead of merging with it into one that cannot be read back (found by
    /// scripts/power-loss: a dead letter lost that way would never be retried). A postback written
    /// twice (the cut came before the cursor moved) is one entry, resolved as a whole.
    @Test func deadLettersAndResolvedLinesAfterATornAppendReadBack() throws {
        let (root, spool, first, second) = try Self.deadLetterSpool(seed: 11)
        func append(_ record: SpoolRecord) throws { try Self.deadLetter(record, to: spool) }
        try append(first)
        try Self.tear(spool.path, Array("{\"dead_at\":\"2026-12-05T01:".utf8))
        try append(second)
        try append(first)  // written again: the cut came before the cursor moved past it
        var dead = DeadLetterSpool.unresolved(root: root, destination: "forward-p")
        #expect(dead.problems == [])
        #expect(dead.entries.map(\.idempotencyKey) == [first.dedupKey!, second.dedupKey!], "one entry per postback")
        #expect(dead.entries.first?.repeats.count == 1)

        try spool.markResolved(dead.entries[0])
        try Self.tear("\(spool.directory)/rx1.resolved", Array("rx1.jsonl\t12".utf8))
        try spool.markResolved(dead.entries[1])
        dead = DeadLetterSpool.unresolved(root: root, destination: "forward-p")
        #expect(dead.problems == [])
        #expect(dead.entries.isEmpty)
    }

    /// A power cut can keep an unsynced append page by page: the line's newline survives while a page
    /// before it reads as zeros. Read back before the next append, that line is a torn append, not a
    /// problem; the next append cuts it, so it never stays in the middle of the file.
    @Test func aDeadLetterWithALostPageIsATornAppendAndIsCut() throws {
        let (root, spool, first, second) = try Self.deadLetterSpool(seed: 12)
        func append(_ record: SpoolRecord) throws { try Self.deadLetter(record, to: spool) }
        try append(first)
        let intact = try Data(contentsOf: URL(fileURLWithPath: spool.path))
        // The first page of a second copy lost, its end (with the newline) kept.
        try Self.tear(spool.path, [UInt8](repeating: 0, count: 700) + Array(intact.suffix(300)))
        var dead = DeadLetterSpool.unresolved(root: root, destination: "forward-p")
        #expect(dead.problems == [], "a torn last append is not a problem")
        #expect(dead.entries.map(\.idempotencyKey) == [first.dedupKey!])

        try append(second)
        let after = try Data(contentsOf: URL(fileURLWithPath: spool.path))
        #expect(!after.contains(0), "the torn line was cut before the append")
        #expect(after.prefix(intact.count) == intact)
        dead = DeadLetterSpool.unresolved(root: root, destination: "forward-p")
        #expect(dead.problems == [])
        #expect(dead.entries.map(\.idempotencyKey) == [first.dedupKey!, second.dedupKey!])

        try spool.markResolved(dead.entries[0])
        try Self.tear("\(spool.directory)/rx1.resolved", [0, 0, 0] + Array("jsonl\t12\n".utf8))
        try spool.markResolved(dead.entries[1])
        let resolved = try String(contentsOfFile: "\(spool.directory)/rx1.resolved", encoding: .utf8)
        #expect(!resolved.contains("\0"), "\(resolved)")
        #expect(DeadLetterSpool.unresolved(root: root, destination: "forward-p").entries.isEmpty)
    }

    /// `forward status`, `forward retry-dead-letters` and `forward replay` against a running receiver's data.
    @Test func forwardCommandsShowRetryAndReplay() throws {
        let partner = try PartnerServer()
        try partner.script(["400", "400"])
        // Credentials in the URL's user-info (libcurl sends them as basic auth): never printed.
        let url = partner.url.replacingOccurrences(of: "http://", with: "http://mmp:pa55word@")
        let destination =
            #"[{"name": "mmp", "url": "\#(url)", "concurrency": 1, "headers": {"X-Api-Key": "literal-not-secret"}}]"#
        let receiver = try TestServer(writerID: "rx-cli", forwarding: .init(destination))
        defer { receiver.stop() }
        for index in 0..<3 { #expect(try receiver.post(TestPostbacks.body(index, seed: 11)).status == 200) }
        #expect(
            eventually(20) {
                partner.acceptedKeys.count == 1
                    && receiver.metric("postback_forward_dead_lettered_total", destination: "forward-mmp") == 2
            })
        let config = receiver.dataDirectory + "/forward-config.json"
        try Data(#"{"data_dir": "\#(receiver.dataDirectory)", "writer_id": "rx-cli", "forward": \#(destination)}"#.utf8)
            .write(to: URL(fileURLWithPath: config))
        func run(_ words: [String]) -> (status: PostbackCLI.ExitStatus, stdout: String, stderr: String) {
            let out = MemorySink()
            let err = MemorySink()
            let status = PostbackCommand.run(words, io: CommandIO(standardOutput: out, standardError: err))
            return (status, out.text, err.text)
        }
        let before = run(["forward", "status", "--config", config])
        #expect(before.status == .success)
        #expect(before.stdout.contains("dead letters not resolved: 2"), "\(before.stdout)")
        #expect(before.stdout.contains("http://…@127.0.0.1:") && !before.stdout.contains("pa55word"), "\(before.stdout)")
        #expect(!receiver.logs.lines.withLock { $0.joined() }.contains("pa55word"))
        let retried = run(["forward", "retry-dead-letters", "--config", config, "--destination", "mmp"])
        #expect(retried.status == .success, "\(retried.stderr)")
        #expect(retried.stdout.contains("2 dead letters delivered"))
        #expect(partner.acceptedKeys.count == 3)
        #expect(run(["forward", "status", "--config", config]).stdout.contains("dead letters not resolved: 0"))
        // A second retry has nothing left to send.
        let requestsBeforeReplay = partner.requests.count
        #expect(run(["forward", "retry-dead-letters", "--config", config]).stdout.contains("0 dead letters delivered"))
        #expect(partner.requests.count == requestsBeforeReplay)
        let today = UTCTimestamp.now().day.description
        let replayed = run(["forward", "replay", "--config", config, "--destination", "mmp", "--from", today, "--to", today])
        #expect(replayed.status == .success, "\(replayed.stderr)")
        #expect(replayed.stdout.contains("3 accepted"))
        #expect(partner.acceptedKeys.values.allSatisfy { $0 == 2 }, "each postback once more, under the same key")
        let unknown = run(["forward", "replay", "--config", config, "--destination", "nope", "--from", today, "--to", today])
        #expect(unknown.status == .usageOrIOError)
        #expect(unknown.stderr.contains("known: mmp"))

        // A partner that stays unavailable: the replay gives up at --retry-seconds and says how to resume.
        try partner.script(Array(repeating: "503", count: 50))
        let started = Date()
        let unavailable = run([
            "forward", "replay", "--config", config, "--destination", "mmp", "--from", today, "--to", today,
            "--retry-seconds", "2",
        ])
        #expect(unavailable.status == .failure)
        #expect(
            unavailable.stderr.contains("gave up after") && unavailable.stderr.contains("rerun the same command"),
            "\(unavailable.stderr)")
        #expect(Date().timeIntervalSince(started) < 10, "it stopped retrying near --retry-seconds")
    }

    /// The per-segment cursor (`at` lines) survives a reopen, a torn last line is cut, and a
    /// delivered segment's cursor is no longer consulted.
    @Test func ledgerCursorSurvivesReopen() throws {
        let path = NSTemporaryDirectory() + "ledger-\(UUID().uuidString)/rx.ledger"
        let segment = SealedSegment(
            path: "/x", relativePath: "raw/postbacks/dt=2026-12-03/part-rx-00001.jsonl", spool: .postbacks, size: 10,
            modifiedAt: 0)
        do {
            let ledger = try DeliveryLedger(path: path)
            try ledger.recordProgress(segment.relativePath, offset: 100)
            try ledger.recordProgress(segment.relativePath, offset: 250)
        }
        let handle = try #require(FileHandle(forWritingAtPath: path))
        handle.seekToEndOfFile()
        handle.write(Data("at\t\(segment.relativePath)\t9".utf8))  // torn: no newline
        try handle.close()
        var ledger = try DeliveryLedger(path: path)
        #expect(ledger.resumeOffset(segment.relativePath) == 250)
        #expect(!ledger.contains(segment.relativePath))
        try ledger.record(segment, sha256Hex: "00")
        ledger = try DeliveryLedger(path: path)
        #expect(ledger.contains(segment.relativePath))
        #expect(ledger.resumeOffset(segment.relativePath) == 0)
    }

    /// A restart resumes at the cursor inside a segment: what is before it is not sent again.
    @Test func resumesAtTheCursorInsideASegment() throws {
        let partner = try PartnerServer()
        let receiver = try TestServer(writerID: "rx-resume", forwarding: .init("[]"))
        for index in 0..<6 { #expect(try receiver.post(TestPostbacks.body(index, seed: 21)).status == 200) }
        receiver.stop()
        let root = receiver.dataDirectory
        let layout = StoreLayout(root: root)
        let day = try #require(try layout.days(.postbacks).first)
        let first = try #require(try layout.segments(.postbacks, day: day).first)
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: first.path)))
        let lineEnds = bytes.indices.filter { bytes[$0] == 0x0A }
        #expect(lineEnds.count >= 2)
        // As if a previous run had delivered the first two lines and then crashed.
        let relative = String(first.path.dropFirst(root.count + 1))
        try DeliveryLedger(path: DeliveryLedger.path(root: root, destination: "forward-resume", writerID: "rx-resume"))
            .recordProgress(relative, offset: lineEnds[1] + 1)
        let skipped = try Set(bytes[...lineEnds[1]].split(separator: 0x0A).map { try SpoolRecord(line: Array($0)).dedupKey! })
        let all = Set(try verifiedRecords(root).compactMap(\.dedupKey))
        let forwarding = try PartnerForwarding(
            settings: [ForwardSettings(name: "resume", url: partner.url)], layout: layout,
            writerID: "rx-resume", isOpen: { _ in false }, scanIntervalSeconds: 0.1)
        defer { forwarding.stop() }
        #expect(eventually(20) { Set(partner.acceptedKeys.keys) == all.subtracting(skipped) })
        #expect(
            eventually(5) {
                forwarding.forwarders[0].worker.status.scanned
                    && (forwarding.forwarders[0].worker.status.pendingSegments[.postbacks] ?? 0) == 0
            })
        #expect(partner.requests.allSatisfy { !skipped.contains($0.idempotencyKey ?? "") })
        #expect(partner.requests.count == all.count - 2)
    }

    /// `serve` with a destination whose secret is missing does not start, and says what to set.
    @Test func serveRefusesToStartWithoutTheSecret() throws {
        let directory = NSTemporaryDirectory() + "postback-forward-config-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let config = "\(directory)/serve.json"
        try Data(
            #"{"listen": "127.0.0.1:0", "data_dir": "data", "writer_id": "rx-cfg", "forward": [{"name": "p", "url": "http://127.0.0.1:9/", "headers": {"K": {"env": "POSTBACK_TEST_UNSET_SECRET"}}}]}"#
                .utf8
        )
        .write(to: URL(fileURLWithPath: config))
        let out = MemorySink()
        let err = MemorySink()
        let status = PostbackCommand.run(
            ["serve", "--config", config, "--log-format", "json"], io: CommandIO(standardOutput: out, standardError: err))
        #expect(status == .usageOrIOError)
        #expect(
            err.text.contains("forward[0].headers.K: environment variable POSTBACK_TEST_UNSET_SECRET is not set"), "\(err.text)")
        try Data(#"{"forward": {"name": "p"}}"#.utf8).write(to: URL(fileURLWithPath: config))
        #expect(throws: ServerConfiguration.ConfigurationError.self) { try ServerConfiguration.load(path: config) }
    }

    @Test func configurationMistakesNameTheKeyAndTheRemedy() throws {
        func error(_ text: String, environment: [String: String] = [:]) -> String {
            do {
                _ = try ForwardSettings.parseList(try StrictJSONParser.parse(Array(text.utf8)), environment: environment)
                return ""
            } catch {
                return "\(error)"
            }
        }
        #expect(error(#"[{"name": "A B", "url": "http://x"}]"#).contains("forward[0].name"))
        #expect(error(#"[{"name": "a", "url": "ftp://x"}]"#).contains("http:// or https://"))
        #expect(
            error(#"[{"name": "a", "url": "http://x", "headers": {"Key": {"env": "NOPE"}}}]"#).contains(
                "environment variable NOPE is not set"))
        #expect(
            error(#"[{"name": "a", "url": "http://x", "headers": {"Key": {"file": "/nonexistent/key"}}}]"#).contains(
                "cannot read /nonexistent/key"))
        #expect(error(#"[{"name": "a", "url": "http://x"}, {"name": "a", "url": "http://y"}]"#).contains("used twice"))
        #expect(error(#"[{"name": "a", "url": "http://x", "protocols": ["skan"]}]"#).contains("forward[0].protocols"))
        #expect(error(#"[{"name": "a", "url": "http://x", "retries": 3}]"#).contains("unknown key \"retries\""))
        // A secret's value never appears in an error either.
        #expect(
            !error(
                #"[{"name": "a", "url": "http://x", "headers": {"K": {"env": "S"}}, "timeout_seconds": -1}]"#,
                environment: ["S": "hunter2"]
            ).contains("hunter2"))
        #expect(ForwardSender.retryAfterSeconds("7") == 7)
        #expect(ForwardSender.retryAfterSeconds("999999") == 3600)
        #expect(ForwardSender.retryAfterSeconds("soon") == nil)
        let inAMinute = ForwardSender.retryAfterSeconds(httpDate(Date().addingTimeInterval(60))) ?? 0
        #expect(inAMinute > 50 && inAMinute <= 60)
    }
}

func httpDate(_ date: Date) -> String {
    let formatter = DateFormatter()
    formatter.locale = Locale(identifier: "en_US_POSIX")
    formatter.timeZone = TimeZone(identifier: "GMT")
    formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
    return formatter.string(from: date)
}

/// A verified spool record for a synthetic postback, as the receiver would write it.
func verifiedRecordFor(index: Int, seed: UInt64) throws -> SpoolRecord? {
    let receiver = try TestServer(writerID: "rx-make", forwarding: .init("[]"))
    defer { receiver.stop() }
    guard try receiver.post(TestPostbacks.body(index, seed: seed)).status == 200 else { return nil }
    return try verifiedRecords(receiver.dataDirectory).first
}
