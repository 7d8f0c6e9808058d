import Basics
import CCurl
import CCurlShim
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A small S3 client on libcurl: AWS Signature V4 by libcurl itself (`CURLOPT_AWS_SIGV4`), keys
/// percent-encoded here (RFC 3986), ListObjectsV2 with paging, PUT with `x-amz-checksum-sha256` so
/// the store verifies the bytes it keeps, conditional create (`If-None-Match: *`), streaming GET and
/// PUT from a file (bounded memory). One easy handle, its connection kept alive: one client per thread.
package final class S3Client {
    package let location: S3Location
    package let settings: S3Settings
    private let easy: CurlEasy

    package struct ObjectSummary: Sendable, Equatable {
        /// The key relative to the location's prefix.
        package let relativeKey: String
        package let size: Int
    }

    package struct ObjectHead: Sendable, Equatable {
        package let size: Int
        /// `x-amz-checksum-sha256` as stored (base64), when the store keeps it.
        package let checksumSHA256: String?

        package init(size: Int, checksumSHA256: String?) {
            self.size = size
            self.checksumSHA256 = checksumSHA256
        }
    }

    package init(location: S3Location, settings: S3Settings) throws {
        guard let easy = CurlEasy() else { throw ClientError.configuration("libcurl could not be initialized") }
        self.location = location
        self.settings = settings
        self.easy = easy
        // A listing page (up to 1,000 keys) is the largest body kept whole; objects are streamed.
        // Error bodies keep the sink's small cap: a store answering more is a failed request.
        easy.sink.bodyLimit = Self.listingBodyLimit
    }

    /// The most a 2xx body read into memory (a ListObjectsV2 page, about 0.3 MB for 1,000 keys) may be.
    static let listingBodyLimit = 16 * 1024 * 1024

    // MARK: Operations

    /// Uploads `size` bytes of the file at `path`, streamed. With `createOnly`, an existing object is
    /// left alone and `ClientError.alreadyExists` thrown (412).
    package func putFile(relativeKey: String, path: String, size: Int, checksumSHA256 base64: String, createOnly: Bool)
        throws
    {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw ClientError.localFile(SystemCallError(operation: "open", path: path, errorNumber: errno).description)
        }
        defer { close(fd) }
        let source = UploadSource(descriptor: fd, bytes: [])
        try put(relativeKey: relativeKey, source: source, size: size, checksum: base64, createOnly: createOnly)
    }

    /// Uploads `bytes` (small objects: manifests, aggregates, leases).
    package func putBytes(
        relativeKey: String, bytes: [UInt8], checksumSHA256 base64: String, createOnly: Bool = false,
        contentType: String? = nil
    ) throws {
        let source = UploadSource(descriptor: -1, bytes: bytes)
        try put(
            relativeKey: relativeKey, source: source, size: bytes.count, checksum: base64, createOnly: createOnly,
            contentType: contentType)
    }

    /// Size and stored checksum, or nil when there is no such object.
    package func head(relativeKey: String) throws -> ObjectHead? {
        let response = try request(
            method: "HEAD", url: objectURL(relativeKey), headers: ["x-amz-checksum-mode: ENABLED"], target: relativeKey)
        if response.status == 404 { return nil }
        try Self.check(response, target: location.key(relativeKey))
        return ObjectHead(
            size: Int(response.headers["content-length"] ?? "") ?? 0, checksumSHA256: response.headers["x-amz-checksum-sha256"])
    }

    /// Streams an object's bytes to `consume` (chunks as they arrive); false if there is no such object.
    package func get(relativeKey: String, consume: @escaping (UnsafeRawBufferPointer) -> Bool) throws -> Bool {
        easy.sink.bodyStream = consume
        defer { easy.sink.bodyStream = nil }
        let response = try request(method: "GET", url: objectURL(relativeKey), headers: [], target: relativeKey)
        if response.status == 404 { return false }
        try Self.check(response, target: location.key(relativeKey))
        return true
    }

    /// A whole (small) object, or nil when there is none.
    package func getBytes(relativeKey: String) throws -> [UInt8]? {
        var bytes: [UInt8] = []
        let found = try get(relativeKey: relativeKey) { chunk in
            bytes.append(contentsOf: chunk)
            return true
        }
        return found ? bytes : nil
    }

    package func delete(relativeKey: String) throws {
        let response = try request(method: "DELETE", url: objectURL(relativeKey), headers: [], target: relativeKey)
        if response.status == 404 { return }
        try Self.check(response, target: location.key(relativeKey))
    }

    /// Every object whose relative key starts with `relativePrefix`, in key order (ListObjectsV2,
    /// all pages; `pageSize` sets max-keys; `firstPageOnly` answers "is there any?" cheaply).
    package func list(relativePrefix: String, pageSize: Int? = nil, firstPageOnly: Bool = false) throws
        -> [ObjectSummary]
    {
        var objects: [ObjectSummary] = []
        var token: String?
        let prefix = location.key(relativePrefix)
        repeat {
            // Query parameters in canonical (sorted) order, each value RFC 3986-encoded.
            var query = ""
            if let token { query += "continuation-token=\(S3KeyEncoding.encode(token, keepSlash: false))&" }
            query += "list-type=2"
            if let pageSize { query += "&max-keys=\(pageSize)" }
            query += "&prefix=\(S3KeyEncoding.encode(prefix, keepSlash: false))"
            let response = try request(method: "GET", url: bucketURL() + "?" + query, headers: [], target: location.description)
            try Self.check(response, target: "\(location.description) (listing \(relativePrefix))")
            let page = ListPage(xml: response.text)
            for item in page.objects where item.key.hasPrefix(location.prefix) {
                objects.append(ObjectSummary(relativeKey: String(item.key.dropFirst(location.prefix.count)), size: item.size))
            }
            token = page.isTruncated && !firstPageOnly ? page.nextToken : nil
            if page.isTruncated, token == nil, !firstPageOnly {
                throw ClientError.status(
                    200, code: "", message: "truncated listing without a continuation token", target: location.description)
            }
        } while token != nil
        return objects
    }

    /// Checks that the bucket exists and the credentials are accepted (a one-key listing).
    package func checkAccess() throws {
        let query = "list-type=2&max-keys=1&prefix=\(S3KeyEncoding.encode(location.prefix, keepSlash: false))"
        let response = try request(method: "GET", url: bucketURL() + "?" + query, headers: [], target: location.description)
        try Self.check(response, target: location.description)
    }

    // MARK: Requests

    private func put(
        relativeKey: String, source: UploadSource, size: Int, checksum: String, createOnly: Bool,
        contentType: String? = nil
    ) throws {
        var headers = ["x-amz-checksum-sha256: \(checksum)"]
        if createOnly { headers.append("If-None-Match: *") }
        if let contentType { headers.append("Content-Type: \(contentType)") }
        let key = location.key(relativeKey)
        let response = try request(
            method: "PUT", url: objectURL(relativeKey), headers: headers, target: relativeKey, upload: (source, size))
        if createOnly, response.status == 412 { throw ClientError.alreadyExists(key) }
        try Self.check(response, target: key)
    }

    private func bucketURL() -> String {
        switch settings.addressing {
        case .path:
            return "\(settings.endpoint)/\(location.bucket)"
        case .virtual:
            let schemeEnd = settings.endpoint.range(of: "://")!.upperBound
            return settings.endpoint[..<schemeEnd] + location.bucket + "." + settings.endpoint[schemeEnd...]
        }
    }

    private func objectURL(_ relativeKey: String) -> String {
        bucketURL() + "/" + S3KeyEncoding.encode(location.key(relativeKey), keepSlash: true)
    }

    private static func check(_ response: HTTPResponse, target: String) throws {
        guard !(200..<300).contains(response.status) else { return }
        let text = response.text
        throw ClientError.status(
            response.status, code: XMLText.first("Code", in: text) ?? "",
            message: XMLText.first("Message", in: text) ?? (text.isEmpty ? "no details" : String(text.prefix(200))),
            target: target)
    }

    private func request(
        method: String, url: String, headers extraHeaders: [String], target: String,
        upload: (source: UploadSource, size: Int)? = nil
    ) throws -> HTTPResponse {
        curl_easy_reset(easy.handle)
        // No "Expect:" removal header here: libcurl 7.88 signs a header it is told to remove, and the
        // store then finds SignatureDoesNotMatch. Go-based and AWS stores answer 100-continue at once.
        var headerList: UnsafeMutablePointer<curl_slist>?
        if let token = settings.sessionToken { headerList = curl_slist_append(headerList, "x-amz-security-token: \(token)") }
        for header in extraHeaders { headerList = curl_slist_append(headerList, header) }
        defer { curl_slist_free_all(headerList) }
        let easy = easy
        let signing = "aws:amz:\(settings.region):s3"
        let credentials = "\(settings.accessKeyID):\(settings.secretAccessKey)"
        let outcome: Result<HTTPResponse, ClientError> = method.withCString { methodPointer in
            signing.withCString { signingPointer in
                credentials.withCString { credentialsPointer in
                    Result { () throws(ClientError) in
                        try easy.perform(url: url, timeoutSeconds: settings.timeoutSeconds, headers: headerList) {
                            easy.set(CURLOPT_CONNECTTIMEOUT_MS, 10_000)
                            // Less than 1 byte/s for the idle limit: the connection is dead (a stall,
                            // a blackhole), not slow; without this a PUT waited the whole 300 s.
                            easy.set(CURLOPT_LOW_SPEED_LIMIT, 1)
                            easy.set(CURLOPT_LOW_SPEED_TIME, max(1, Int(settings.idleTimeoutSeconds.rounded(.up))))
                            easy.set(CURLOPT_AWS_SIGV4, pointer: signingPointer)
                            easy.set(CURLOPT_USERPWD, pointer: credentialsPointer)
                            if let upload {
                                easy.set(CURLOPT_UPLOAD, 1)
                                easy.set(CURLOPT_READDATA, pointer: Unmanaged.passUnretained(upload.source).toOpaque())
                                postback_curl_set_data_callback(
                                    easy.handle, CURLOPT_READFUNCTION.rawValue, UploadSource.readCallback)
                                postback_curl_set_offset(easy.handle, CURLOPT_INFILESIZE_LARGE.rawValue, Int64(upload.size))
                            } else if method == "HEAD" {
                                easy.set(CURLOPT_NOBODY, 1)
                            } else if method != "GET" {
                                easy.set(CURLOPT_CUSTOMREQUEST, pointer: methodPointer)
                            }
                        }
                    }
                }
            }
        }
        if let upload, let failure = upload.source.failure { throw ClientError.localFile(failure) }
        // libcurl's failure names no request; the object store's names its method and key.
        return try outcome.mapError { ClientError.unreachable($0.message, target: "\(method) \(location.key(target))") }.get()
    }
}

/// The body of a PUT: a file read from its start, or bytes in memory. libcurl pulls it; a retry of
/// the request inside libcurl (a redirect) is not used, so it is read once.
private final class UploadSource {
    let descriptor: Int32
    let bytes: [UInt8]
    var offset = 0
    var failure: String?

    init(descriptor: Int32, bytes: [UInt8]) {
        self.descriptor = descriptor
        self.bytes = bytes
    }

    static let readCallback: postback_curl_write_callback = { buffer, size, count, context in
        guard let buffer, let context else { return 0 }
        let source = Unmanaged<UploadSource>.fromOpaque(context).takeUnretainedValue()
        let capacity = size * count
        if source.descriptor < 0 {
            let length = min(capacity, source.bytes.count - source.offset)
            source.bytes.withUnsafeBytes { bytes in
                UnsafeMutableRawPointer(buffer).copyMemory(from: bytes.baseAddress! + source.offset, byteCount: length)
            }
            source.offset += length
            return length
        }
        do throws(SystemCallError) {
            return try FileDescriptorIO.read(
                source.descriptor, into: UnsafeMutableRawBufferPointer(start: buffer, count: capacity), path: "")
        } catch {
            source.failure = "reading the file to upload failed: \(error.reason)"
            return Int(CURL_READFUNC_ABORT)
        }
    }
}

/// Just enough XML for S3's answers: the text of simple elements, entities decoded.
enum XMLText {
    static func first(_ tag: String, in xml: String) -> String? {
        all(tag, in: xml[...]).first
    }

    /// With `raw`, the elements' inner XML as is (for nested elements).
    static func all(_ tag: String, in xml: Substring, raw: Bool = false) -> [String] {
        var values: [String] = []
        var rest = xml
        let open = "<\(tag)>"
        let close = "</\(tag)>"
        while let start = rest.range(of: open), let end = rest[start.upperBound...].range(of: close) {
            let inner = rest[start.upperBound..<end.lowerBound]
            values.append(raw ? String(inner) : decode(inner))
            rest = rest[end.upperBound...]
        }
        return values
    }

    static func decode(_ text: Substring) -> String {
        guard text.contains("&") else { return String(text) }
        var out = ""
        var rest = text
        while let amp = rest.firstIndex(of: "&") {
            out += rest[..<amp]
            guard let semicolon = rest[amp...].firstIndex(of: ";") else { break }
            let entity = rest[rest.index(after: amp)..<semicolon]
            switch entity {
            case "amp": out += "&"
            case "lt": out += "<"
            case "gt": out += ">"
            case "quot": out += "\""
            case "apos": out += "'"
            default:
                let number =
                    entity.hasPrefix("#x")
                    ? UInt32(entity.dropFirst(2), radix: 16) : entity.hasPrefix("#") ? UInt32(entity.dropFirst()) : nil
                if let number, let scalar = Unicode.Scalar(number) {
                    out.unicodeScalars.append(scalar)
                } else {
                    out += "&\(entity);"
                }
            }
            rest = rest[rest.index(after: semicolon)...]
        }
        return out + rest
    }
}

/// One page of a ListObjectsV2 answer.
struct ListPage {
    var objects: [(key: String, size: Int)] = []
    var isTruncated = false
    var nextToken: String?

    init(xml: String) {
        for contents in XMLText.all("Contents", in: xml[...], raw: true) {
            guard let key = XMLText.first("Key", in: contents) else { continue }
            objects.append((key, Int(XMLText.first("Size", in: contents) ?? "") ?? 0))
        }
        isTruncated = XMLText.first("IsTruncated", in: xml) == "true"
        nextToken = XMLText.first("NextContinuationToken", in: xml)
    }
}
