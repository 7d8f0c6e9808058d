import AggregateSchema
import Basics
import Foundation
import PostbackStore
import Postbacks

/// What an already published day's manifest says about its input and decoded postbacks: enough to
/// refuse a rerun that would publish a worse day over it (a lost spool, a lost or misplaced schema)
/// unless the user says `--force`.
struct PublishedDay: Equatable {
    /// Spool segments (or `--input` files) of counted postbacks, not the rejected spool.
    var segments: Int
    var bytes: Int
    /// Nil for manifests of format 1, which did not record it.
    var decodedPostbacks: Int?

    /// The day's manifest as published, or nil when there is none (or it cannot be read: a torn or
    /// foreign manifest protects nothing, and the new run's manifest replaces it).
    init?(manifestAt path: String) {
        guard let data = FileManager.default.contents(atPath: path),
            let manifest = ManifestObject<DayManifestKey>(json: [UInt8](data)),
            let inputs = manifest.objects(.inputs, ManifestInputKey.self)
        else { return nil }
        var segments = 0
        var bytes = 0
        for input in inputs {
            guard let spool = input.string(.spool), spool != StoreLayout.Spool.rejected.rawValue else { continue }
            guard let value = input.int64(.bytes) else { return nil }
            segments += 1
            bytes += Int(value)
        }
        self.segments = segments
        self.bytes = bytes
        if let value = manifest.object(.totals, ManifestTotalsKey.self)?.int64(.decodedPostbacks) {
            decodedPostbacks = Int(value)
        }
    }

    init(segments: Int, bytes: Int, decodedPostbacks: Int?) {
        self.segments = segments
        self.bytes = bytes
        self.decodedPostbacks = decodedPostbacks
    }

    /// Why publishing `new` over this day would make it worse, or nil when it would not.
    func regression(to new: PublishedDay) -> String? {
        var losses: [String] = []
        if new.segments < segments {
            losses.append("\(new.segments) input file\(new.segments == 1 ? "" : "s") instead of \(segments)")
        }
        if new.bytes < bytes { losses.append("\(new.bytes) input bytes instead of \(bytes)") }
        if let before = decodedPostbacks, let after = new.decodedPostbacks, after < before {
            losses.append("\(after) decoded postbacks instead of \(before) (a schema missing or changed?)")
        }
        return losses.isEmpty ? nil : losses.joined(separator: ", ")
    }
}
