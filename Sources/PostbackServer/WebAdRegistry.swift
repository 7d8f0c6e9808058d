import Basics
import Dispatch
import Locking
import Postbacks

#if canImport(Glibc)
    import Glibc
#endif

/// The web ads the ad network registered (`web_ads`), which `get-signed-payload` answers for.
///
/// The file is JSON Lines, one web ad per line in the form `postback impression sign` takes
/// (`version` 4.0 or later, `ad-network-id`, `source-identifier`, `itunes-item-id`, `nonce`,
/// `source-domain`, `fidelity-type` 1, `timestamp`): the values the ad server chose when it served
/// the link, whose `attributionSourceNonce` is the nonce in Base64URL. Ads are found by nonce.
///
/// The ad server appends to it or replaces it (write a new file and rename it over the old one):
/// a request more than a second after the last check looks at the file's version (inode, size,
/// modification time) and re-reads it when it changed. A file that no longer reads (a bad line) is
/// logged and the ads read before stay in service.
final class WebAdRegistry: Sendable {
    let path: String
    private let log: ServerLog?

    private struct Snapshot {
        var ads: [String: SKAdNetworkImpression] = [:]
        var version: FileVersion?
        var checkedAt: UInt64 = 0
    }
    private let snapshot = Locked(Snapshot())

    struct FileVersion: Equatable {
        let inode: UInt64
        let size: Int64
        let modified: Int64
        let modifiedNanoseconds: Int

        init?(path: String) {
            var info = stat()
            guard stat(path, &info) == 0 else { return nil }
            inode = UInt64(info.st_ino)
            size = Int64(info.st_size)
            modified = Int64(info.st_mtim.tv_sec)
            modifiedNanoseconds = Int(info.st_mtim.tv_nsec)
        }
    }

    /// Reads the file; an unreadable file or a bad line refuses the start (`ServerError`).
    init(path: String, log: ServerLog?) throws(ServerError) {
        self.path = path
        self.log = log
        let version = FileVersion(path: path)
        let ads: [String: SKAdNetworkImpression]
        do { ads = try Self.read(path) } catch { throw ServerError("web_ads \(error.description)") }
        snapshot.withLock {
            $0.ads = ads
            $0.version = version
            $0.checkedAt = DispatchTime.now().uptimeNanoseconds
        }
    }

    var count: Int { snapshot.withLock { $0.ads.count } }

    /// The registered web ad with this nonce (lower-case dashed UUID), re-reading a changed file first.
    func impression(nonce: String) -> SKAdNetworkImpression? {
        reloadIfChanged()
        return snapshot.withLock { $0.ads[nonce] }
    }

    /// Re-reads the file when it changed since it was read, at most once a second.
    func reloadIfChanged() {
        let now = DispatchTime.now().uptimeNanoseconds
        let due = snapshot.withLock { state -> Bool in
            // Not `now - checkedAt`: another thread may have set a later `checkedAt` since `now` was read.
            guard now >= state.checkedAt + 1_000_000_000 else { return false }
            state.checkedAt = now
            return true
        }
        guard due else { return }
        let version = FileVersion(path: path)
        guard version != snapshot.withLock({ $0.version }) else { return }
        do {
            let ads = try Self.read(path)
            snapshot.withLock {
                $0.ads = ads
                $0.version = version
            }
            log?.info("web ads re-read", ["path": .string(path), "ads": .int(ads.count)])
        } catch {
            // Remember the version: the same bad file is not re-read (and logged) every second.
            snapshot.withLock { $0.version = version }
            log?.error(
                "web ads file not re-read: the ads read before stay in service",
                ["path": .string(path), "error": .string(error.description)])
        }
    }

    struct ReadError: Error, CustomStringConvertible {
        let description: String
    }

    /// The web ads of a file, by nonce.
    static func read(_ path: String) throws(ReadError) -> [String: SKAdNetworkImpression] {
        let bytes: [UInt8]
        do { bytes = try FileBytes.read(path: path, limit: 1 << 30) } catch { throw ReadError(description: error.description) }
        guard bytes.contains(where: { $0 != 0x20 && $0 != 0x0A && $0 != 0x0D && $0 != 0x09 }) else { return [:] }
        var ads: [String: SKAdNetworkImpression] = [:]
        do {
            for line in try ImpressionSigningRequest.lines(bytes, limit: Int.max) {
                let parsed: ParsedImpression
                do { parsed = try ParsedImpression(record: line.bytes) } catch {
                    throw ReadError(description: "\(path):\(line.number): \(error.reason)")
                }
                guard case .skadnetwork(let impression) = parsed, impression.kind == .webAd else {
                    throw ReadError(
                        description: "\(path):\(line.number): not a web ad (a SKAdNetwork 4.0 impression with source-domain)")
                }
                guard ads.updateValue(impression, forKey: impression.nonce) == nil else {
                    throw ReadError(description: "\(path):\(line.number): nonce \(impression.nonce) is registered twice")
                }
            }
        } catch let error as ReadError {
            throw error
        } catch {
            throw ReadError(description: "\(path): \(error)")
        }
        return ads
    }
}
