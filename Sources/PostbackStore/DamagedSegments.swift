package import Basics
import Foundation
import PostbackCrypto

#if canImport(Glibc)
    import Glibc
#endif

/// Setting aside a segment damaged at rest (its bytes match none of its seals, `SegmentSeals`) when
/// no good copy exists: it is moved, never deleted, to `DATA/raw/_damaged/<spool>/dt=<day>/`,
/// outside every spool (like `raw/_seals/`), so the nightly job publishes its day without it.
package enum DamagedSegments {
    /// What was moved.
    package struct Moved: Sendable {
        package let from: String
        package let to: String
        package let day: UTCDay
        package let size: Int
    }

    package static func directory(root: String, spool: StoreLayout.Spool, day: UTCDay) -> String {
        "\(root)/raw/_damaged/\(spool.rawValue)/dt=\(day)"
    }

    /// Moves the segment at `path` (absolute, or relative to the store like `raw/postbacks/dt=…/part-…`)
    /// aside, after checking that it is a sealed segment of `layout`'s store whose bytes match none
    /// of its seals. Durable: both directories are fsynced.
    package static func setAside(_ path: String, layout: StoreLayout) throws -> Moved {
        let relative = path.hasPrefix(layout.root + "/") ? String(path.dropFirst(layout.root.count + 1)) : path
        let parts = relative.split(separator: "/").map(String.init)
        guard parts.count == 4, parts[0] == "raw", let spool = StoreLayout.Spool(rawValue: parts[1]),
            parts[2].hasPrefix("dt="), let day = UTCDay(String(parts[2].dropFirst(3))),
            StoreLayout.parseSegmentName(parts[3]) != nil
        else {
            throw StoreError.setAsideRefused(
                .notASegment, path: path,
                "\(path) is not a segment of the store \(layout.root) "
                    + "(\(layout.root)/raw/<spool>/dt=YYYY-MM-DD/part-<writer>-<seq>.jsonl, as 'postback aggregate' names it)")
        }
        let absolute = "\(layout.root)/\(relative)"
        guard access(absolute, F_OK) == 0 else {
            throw StoreError.setAsideRefused(.noSuchSegment, path: absolute, "\(absolute): no such segment")
        }
        guard let seals = SegmentSeals.load(root: layout.root, day: day)[relative], !seals.isEmpty else {
            throw StoreError.setAsideRefused(
                .unsealed, path: absolute,
                "\(absolute) has no seal, so nothing shows it is damaged; only a segment whose bytes match "
                    + "none of its seals is set aside")
        }
        let hasher = SHA256Hasher()
        var size = 0
        try FileDescriptorIO.forEachChunk(ofFile: absolute) { chunk in
            hasher.update(chunk)
            size += chunk.count
        }
        let seal = SegmentSeals.Seal(size: size, sha256: hasher.finalize().description)
        guard !seals.contains(seal) else {
            throw StoreError.setAsideRefused(
                .matchesItsSeal, path: absolute, "\(absolute) matches its seal: it is not damaged, and stays where it is")
        }
        let target = directory(root: layout.root, spool: spool, day: day)
        try DurableFile.makeDirectories(target)
        let destination = "\(target)/\(parts[3])"
        guard access(destination, F_OK) != 0 else {
            throw StoreError.setAsideRefused(
                .destinationExists, path: destination, "\(destination) exists already; move it away first")
        }
        guard rename(absolute, destination) == 0 else {
            throw SystemCallError(operation: "rename", path: absolute, errorNumber: errno)
        }
        try DurableFile.syncDirectory(target)
        try DurableFile.syncDirectory(containing: absolute)
        return Moved(from: absolute, to: destination, day: day, size: size)
    }
}
