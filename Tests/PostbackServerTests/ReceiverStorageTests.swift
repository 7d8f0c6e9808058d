import Dispatch
import Foundation
import PostbackClient
import PostbackServer
import PostbackStore
import Postbacks
import Synchronization
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Durability: restarts, torn tails, storage failures, the writer lock, graceful shutdown.
@Suite struct ReceiverStorageTests {
    /// Outside systemd (no `UMask=`), every file the receiver writes is its owner's only: segments,
    /// seals, lock files (before: 0644, readable by every local user, whatever the umask allowed).
    @Test func dataFilesAreReadableByTheirOwnerOnly() throws {
        let previous = umask(0o022)
        defer { umask(previous) }
        let server = try TestServer()
        #expect(try server.post(TestPostbacks.body(0, seed: 61)).status == 200)
        #expect(try server.post(Array("{}".utf8)).status == 400)
        server.stop()
        var files: [String] = []
        let walker = FileManager.default.enumerator(atPath: server.dataDirectory)
        while let name = walker?.nextObject() as? String {
            var isDirectory: ObjCBool = false
            let path = server.dataDirectory + "/" + name
            if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue {
                files.append(path)
            }
        }
        #expect(files.contains { $0.contains("/raw/postbacks/") } && files.contains { $0.contains("/raw/rejected/") })
        #expect(files.contains { $0.hasSuffix(".seals") } && files.contains { $0.hasSuffix(".lock") }, "\(files)")
        for path in files {
            let mode = (try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) ?? -1
            #expect(mode == 0o600, "\(path): \(String(mode, radix: 8))")
        }
    }

    @Test func restartKeepsTheDedupIndexAndStartsANewSegment() throws {
        let directory = TestServer.temporaryDirectory()
        let first = TestPostbacks.body(0, seed: 21)
        let second = TestPostbacks.body(1, seed: 21)
        do {
            let server = try InProcessReceiver(dataDirectory: directory)
            #expect(try server.post(first).status == 200)
            server.stop()
        }
        let server = try InProcessReceiver(dataDirectory: directory)
        defer { server.stop() }
        #expect(server.logs.contains(#""dedup_keys":1"#))
        let again = try server.post(first)
        #expect(again.status == 200)
        #expect(again.text.contains("duplicate"), "the index survived the restart")
        #expect(try server.post(second).status == 200)
        #expect(try server.records(.postbacks).map(\.body) == [first, second])
        #expect(try server.segments(.postbacks).map(\.sequence) == [1, 2], "a restarted writer never appends to an old segment")
    }

    @Test func otherWritersRecordsAreDeduplicatedToo() throws {
        let directory = TestServer.temporaryDirectory()
        let body = TestPostbacks.body(0, seed: 22)
        do {
            let other = try InProcessReceiver(dataDirectory: directory, writerID: "other")
            #expect(try other.post(body).status == 200)
            other.stop()
        }
        let server = try InProcessReceiver(dataDirectory: directory, writerID: "mine")
        defer { server.stop() }
        #expect(try server.post(body).text.contains("duplicate"))
        #expect(try server.records(.postbacks).count == 1)
    }

    @Test func tornTailIsSkippedAndNeverMerged() throws {
        let directory = TestServer.temporaryDirectory()
        let stored = TestPostbacks.body(0, seed: 23)
        let torn = TestPostbacks.body(1, seed: 23)
        var segmentPath = ""
        do {
            let server = try InProcessReceiver(dataDirectory: directory)
            #expect(try server.post(stored).status == 200)
            segmentPath = try #require(try server.segments(.postbacks).first).path
            server.stop()
        }
        // A crash between write and sync leaves half a record (never acknowledged).
        let line = SpoolRecord(
            receivedAt: .now(), writer: "test", route: "skadnetwork-developer-copy",
            result: PostbackVerifier().verify(body: torn), body: torn
        ).encoded()
        let handle = try #require(FileHandle(forWritingAtPath: segmentPath))
        handle.seekToEndOfFile()
        handle.write(Data(line.prefix(line.count / 2)))
        handle.closeFile()
        let sizeAfterCrash = try FileManager.default.attributesOfItem(atPath: segmentPath)[.size] as? Int

        let server = try InProcessReceiver(dataDirectory: directory)
        defer { server.stop() }
        #expect(server.logs.contains("torn tail"))
        #expect(server.logs.contains(#""dedup_keys":1"#))
        // The torn postback was never acknowledged: the device retries it, and now it is stored.
        let retry = try server.post(torn)
        #expect(retry.status == 200)
        #expect(retry.text.contains("stored"))
        #expect(
            try FileManager.default.attributesOfItem(atPath: segmentPath)[.size] as? Int == sizeAfterCrash,
            "the old segment is left as it was")
        #expect(try server.records(.postbacks).map(\.body) == [stored, torn])
    }

    @Test func storageFailureAnswers500UntilStorageRecovers() throws {
        let storage = FaultyStorage()
        let server = try TestServer(storage: storage)
        defer { server.stop() }
        let before = TestPostbacks.body(0, seed: 24)
        let during = TestPostbacks.body(1, seed: 24)
        let after = TestPostbacks.body(2, seed: 24)
        #expect(try server.post(before).status == 200)

        storage.inject(.failSyncs)
        let failed = try server.post(during)
        #expect(failed.status == 500, "never 200 when the sync failed")
        #expect(failed.contentType == "application/problem+json")
        #expect(try server.get("/readyz").status == 503)
        #expect(try server.get("/livez").status == 200, "liveness does not depend on storage")
        // Every later request fails too while storage is unhealthy: other postbacks and the retry.
        for index in 3..<6 {
            #expect(try server.post(TestPostbacks.body(index, seed: 24)).status == 500, "postback \(index) while the fault lasts")
        }
        #expect(try server.post(during).status == 500)
        #expect(try server.get("/readyz").status == 503)
        #expect((try server.metric(#"postback_storage_errors_total{spool="postbacks"}"#) ?? 0) >= 1)
        storage.inject(.none)

        // Recovery is automatic (a probe every 0.2 s): wait for readiness, bounded.
        let deadline = Date().addingTimeInterval(5)
        while try server.get("/readyz").status != 200, Date() < deadline { usleep(20_000) }
        #expect(try server.get("/readyz").status == 200)
        let retried = try server.post(during)
        #expect(retried.status == 200)
        #expect(try server.post(after).status == 200)

        let records = try server.records(.postbacks)
        #expect(records.map(\.body) == [before, during, after], "the failed batch's bytes were dropped, its retry stored once")
        #expect(try server.segments(.postbacks).count == 2, "the failed segment was abandoned for a fresh one")
        #expect(server.logs.contains("storage failure"))
        #expect(server.logs.contains("storage recovered"))
    }

    @Test func anUnreadableSegmentStopsTheReceiverFromStarting() throws {
        // Its dedup keys would be unknown, so a replay of one of its postbacks would be stored twice.
        let directory = TestServer.temporaryDirectory()
        let segment = directory + "/raw/postbacks/dt=2026-03-10/part-other-000001.jsonl"
        try FileManager.default.createDirectory(atPath: segment, withIntermediateDirectories: true)  // a directory, not a file
        do {
            let server = try TestServer(dataDirectory: directory)
            server.stop()
            Issue.record("the receiver started over an unreadable segment")
        } catch let error as ServerError {
            #expect(error.description.contains("unreadable spool segment"), "\(error)")
            #expect(error.description.contains("part-other-000001.jsonl"), "\(error)")
        }
    }

    @Test func writeFailureAlsoAnswers500() throws {
        let storage = FaultyStorage()
        let server = try InProcessReceiver(storage: storage)
        defer { server.stop() }
        storage.inject(.failWrites)
        #expect(try server.post(TestPostbacks.body(0, seed: 25)).status == 500)
        // Rejected postbacks need their store too: no 400 without the record.
        #expect(try server.post(Array("{}".utf8)).status == 500)
        #expect(try server.records(.postbacks).isEmpty)
    }

    @Test func twoReceiversCannotShareAWriterID() throws {
        let directory = TestServer.temporaryDirectory()
        let server = try TestServer(dataDirectory: directory, writerID: "same")
        #expect(throws: ServerError.self) { _ = try TestServer(dataDirectory: directory, writerID: "same") }
        let other = try TestServer(dataDirectory: directory, writerID: "different")
        other.stop()
        server.stop()
        // Shutdown releases the lock (the server object is still alive here).
        let again = try TestServer(dataDirectory: directory, writerID: "same")
        again.stop()
        _ = server
    }

    @Test func shutdownFinishesRequestsInFlight() throws {
        let storage = FaultyStorage()
        let server = try TestServer(storage: storage)
        let body = TestPostbacks.body(0, seed: 26)
        let held = HeldPostback(body, to: server.skadnetworkURL, storage: storage)
        let stopped = server.stopInBackground()
        // A second call (SIGTERM while the first drains) returns only once the first is done.
        let stoppedAgain = server.stopInBackground()
        #expect(stopped.wait(timeout: .now() + 0.3) == .timedOut, "shutdown waits for the request in flight")
        #expect(stoppedAgain.wait(timeout: .now()) == .timedOut, "so does a second call")
        storage.releaseHeldSyncs()
        #expect(held.status() == 200)
        #expect(stopped.wait(timeout: .now() + 10) == .success)
        #expect(stoppedAgain.wait(timeout: .now() + 10) == .success)
        #expect(try server.records(.postbacks).map(\.body) == [body])
        let refused = #expect(throws: ClientError.self) { _ = try HTTPClient(timeoutSeconds: 2).get(server.base + "/livez") }
        #expect(refused?.code == .unreachable)
        #expect(server.logs.contains("stopped"))
    }
}
