package import Foundation
package import PostbackStore

/// A store written by an earlier release, checked in under `Tests/Fixtures/stores/<commit>/`.
package struct FixtureStore: Sendable, CustomStringConvertible {
    package let commit: String
    /// The spool record format its receiver wrote.
    package let recordFormat: Int
    /// The format of its day manifest (`agg/_manifests/`), written by the same release's nightly job.
    package let manifestFormat: Int
    /// The day its receiver stored the postbacks on (and its nightly job published, before the day was over).
    package static let day = "2026-12-06"

    package static let root = Fixtures.root.appendingPathComponent("Tests/Fixtures/stores").path
    package static let testKey = Fixtures.root.appendingPathComponent("Tests/Fixtures/postbacks/test-key.pem").path

    /// The stores today's release reads (Tests/Fixtures/README.md says which release wrote each).
    package static let readable = [
        FixtureStore(commit: "7e03283", recordFormat: 1, manifestFormat: 1),
        FixtureStore(commit: "917796b", recordFormat: 2, manifestFormat: 2),
        FixtureStore(commit: "a5cdd77", recordFormat: 2, manifestFormat: 3),
    ]

    /// The spool of record format 3 as it was before it was reverted (each line ended in its CRC-32):
    /// no later release reads it (its spool only; `StoredRecordFixtureTests` holds that it is refused).
    package static let reverted = FixtureStore(commit: "d5fb113", recordFormat: 3, manifestFormat: 3)

    package var description: String { commit }
    package var path: String { Self.root + "/" + commit }

    /// A copy of the whole store in `directory` (tests never write under `Tests/Fixtures`).
    package func copy(into directory: String) throws {
        let files = FileManager.default.enumerator(atPath: path)
        while let relative = files?.nextObject() as? String {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path + "/" + relative, isDirectory: &isDirectory), !isDirectory.boolValue
            else { continue }
            let target = URL(fileURLWithPath: directory + "/" + relative)
            try FileManager.default.createDirectory(at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
            try FileManager.default.copyItem(at: URL(fileURLWithPath: path + "/" + relative), to: target)
        }
    }

    package struct Segment {
        package let spool: StoreLayout.Spool
        package let path: String

        package func lines() throws -> [[UInt8]] {
            let bytes = try Fixtures.bytes(URL(fileURLWithPath: path))
            return bytes.split(separator: 0x0A, omittingEmptySubsequences: false).dropLast().map(Array.init)
        }

        /// Line `number`, counted from 1.
        package func line(_ number: Int) throws -> [UInt8] { try lines()[number - 1] }
    }

    /// Every segment of every spool, through today's layout.
    package func segments() throws -> [Segment] {
        let layout = StoreLayout(root: path)
        var segments: [Segment] = []
        for spool in StoreLayout.Spool.allCases {
            for day in try layout.days(spool) {
                segments += try layout.segments(spool, day: day).map { Segment(spool: spool, path: $0.path) }
            }
        }
        return segments
    }
}
