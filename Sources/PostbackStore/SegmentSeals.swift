package import Basics
import Foundation
import PostbackCrypto

#if canImport(Glibc)
    import Glibc
#endif

/// The size and SHA-256 of each segment as its writer sealed it, so that a reader can tell a segment
/// damaged at rest (bit rot, a bad copy) from the bytes that were acknowledged.
///
/// `DATA/raw/_seals/<spool>/dt=<day>/<writer>.seals`, one line per sealed segment of that spool
/// partition, `<path relative to DATA>\t<size>\t<sha256 hex>\n`, appended and fdatasync'ed once the
/// segment's bytes are synced and will never change. Outside every spool, like `raw/_delivery/`, so
/// readers of `raw/<spool>/` never see it; one file per writer, spool and day, so no two threads
/// append to one file and a reader of a day reads that day's seals only.
/// `postback reverify`, which rewrites the segments it moves records out of, seals what it writes under
/// its own writer id: a segment matches when its bytes match any seal recorded for it.
///
/// A segment without a seal (written before seals existed, open when its receiver crashed, or
/// published by a receiver whose seal append failed) is read as it is.
package enum SegmentSeals {
    package struct Seal: Sendable, Equatable {
        package let size: Int
        package let sha256: String

        package init(size: Int, sha256: String) {
            self.size = size
            self.sha256 = sha256
        }
    }

    package static func directory(root: String, spool: StoreLayout.Spool, day: UTCDay) -> String {
        "\(root)/raw/_seals/\(spool.rawValue)/dt=\(day)"
    }

    /// The seals of a day's local segments, every spool: relative path → the seals recorded for it.
    /// A torn last line (a crash during its append) is not a seal. Unreadable files give no seals
    /// (their segments are read unchecked, as before seals existed).
    package static func load(root: String, day: UTCDay) -> [String: [Seal]] {
        var seals: [String: [Seal]] = [:]
        for spool in StoreLayout.Spool.allCases {
            let directory = directory(root: root, spool: spool, day: day)
            let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
            for name in names where name.hasSuffix(".seals") {
                guard let data = FileManager.default.contents(atPath: "\(directory)/\(name)") else { continue }
                for line in data.split(separator: 0x0A, omittingEmptySubsequences: true).dropLast(data.last == 0x0A ? 0 : 1) {
                    let fields = line.split(separator: 0x09, omittingEmptySubsequences: false)
                    guard fields.count == 3, let size = Int(String(decoding: fields[1], as: UTF8.self)), fields[2].count == 64
                    else { continue }
                    seals[String(decoding: fields[0], as: UTF8.self), default: []].append(
                        Seal(size: size, sha256: String(decoding: fields[2], as: UTF8.self)))
                }
            }
        }
        return seals
    }

    /// Appends seals to one writer's files for a spool, each line durable (fdatasync) before returning.
    /// Keeps the last day's file open; a torn last line a crash left is cut when a file is opened.
    package final class Recorder {
        private let root: String
        private let spool: StoreLayout.Spool
        private let writerID: String
        private var path = ""
        private var descriptor: Int32 = -1

        package init(root: String, spool: StoreLayout.Spool, writerID: String) {
            self.root = root
            self.spool = spool
            self.writerID = writerID
        }

        deinit { if descriptor >= 0 { close(descriptor) } }

        /// Records that the segment at `segmentPath` (absolute, under the root, in the partition of
        /// `day`) is sealed as `seal`.
        package func record(_ segmentPath: String, day: UTCDay, _ seal: Seal) throws(SystemCallError) {
            let directory = SegmentSeals.directory(root: root, spool: spool, day: day)
            let wanted = "\(directory)/\(writerID).seals"
            if wanted != path || descriptor < 0 {
                if descriptor >= 0 { close(descriptor) }
                descriptor = -1
                (descriptor, path) = (try DurableFile.openLines(wanted), wanted)
            }
            let relative = segmentPath.hasPrefix(root + "/") ? String(segmentPath.dropFirst(root.count + 1)) : segmentPath
            try FileDescriptorIO.writeAll(Array("\(relative)\t\(seal.size)\t\(seal.sha256)\n".utf8), to: descriptor, path: path)
            guard fdatasync(descriptor) == 0 else {
                throw SystemCallError(operation: "fdatasync", path: path, errorNumber: errno)
            }
        }
    }

    /// Seals `writerID`'s newest segments that have no seal: the ones a crash or a power cut left open,
    /// whose seal their writer never recorded. Called at start-up under the writer lock, when no
    /// segment of this writer is open and recovery has read them; they never change again. Only the
    /// two newest of each spool (a crash leaves at most today's open segment and yesterday's): older
    /// unsealed ones predate seals and stay unchecked, so a first start does not hash a whole store.
    /// Best effort: a segment that cannot be read or sealed stays unchecked, as before seals.
    package static func sealLeftOpen(layout: StoreLayout, writerID: String) {
        for spool in StoreLayout.Spool.allCases {
            var own: [(sequence: Int, day: UTCDay, path: String)] = []
            for day in (try? layout.days(spool)) ?? [] {
                for segment in (try? layout.segments(spool, day: day)) ?? [] where segment.writer == writerID {
                    own.append((segment.sequence, day, segment.path))
                }
            }
            let recorder = Recorder(root: layout.root, spool: spool, writerID: writerID)
            for segment in own.sorted(by: { $0.sequence < $1.sequence }).suffix(2) {
                let name = String(segment.path.dropFirst(layout.root.count + 1))
                guard load(root: layout.root, day: segment.day)[name] == nil,
                    let data = FileManager.default.contents(atPath: segment.path), !data.isEmpty
                else { continue }
                try? recorder.record(segment.path, day: segment.day, seal(of: [UInt8](data)))
            }
        }
    }

    /// The seal of `bytes` (a segment written whole, as `reverify` writes them).
    package static func seal(of bytes: [UInt8]) -> Seal {
        let hasher = SHA256Hasher()
        hasher.update(bytes)
        return Seal(size: bytes.count, sha256: hasher.finalize().description)
    }
}
