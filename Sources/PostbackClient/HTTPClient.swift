import CCurl
import CCurlShim
import Dispatch

/// One HTTP response as the client saw it.
package struct HTTPResponse: Sendable {
    package let status: Int
    package let body: [UInt8]
    /// Header names in lower case; the last value wins.
    package let headers: [String: String]
    /// From sending the request to the end of the response.
    package let seconds: Double

    package var text: String { String(decoding: body, as: UTF8.self) }
    package var contentType: String? { headers["content-type"] }
}

/// A libcurl easy handle: one connection, kept alive between requests. Use one per thread.
package final class HTTPClient {
    fileprivate let easy: CurlEasy
    private var headerList: UnsafeMutablePointer<curl_slist>?
    package var timeoutSeconds: Double

    /// - Parameter caCertificatePath: a PEM file of CA certificates to trust for HTTPS instead of the
    ///   system's (a deployment with its own or a self-signed certificate).
    package init(timeoutSeconds: Double = 30, caCertificatePath: String? = nil) throws {
        guard let easy = CurlEasy() else { throw ClientError.configuration("libcurl could not be initialized") }
        self.easy = easy
        self.timeoutSeconds = timeoutSeconds
        // libcurl copies option strings, so the pointer need not outlive the call.
        if let caCertificatePath { caCertificatePath.withCString { easy.set(CURLOPT_CAINFO, pointer: $0) } }
        // No "Expect: 100-continue" round trip for bodies over 1 KiB.
        headerList = curl_slist_append(nil, "Expect:")
        headerList = curl_slist_append(headerList, "Content-Type: application/json")
    }

    deinit {
        curl_slist_free_all(headerList)
    }

    package func post(_ url: String, body: [UInt8]) throws -> HTTPResponse {
        try perform(method: "POST", url: url, body: body)
    }

    package func get(_ url: String) throws -> HTTPResponse {
        try perform(method: "GET", url: url, body: nil)
    }

    /// Any method; a body is sent when given. `headers` (`Name: value` lines) are added to this request only.
    package func perform(method: String, url: String, body: [UInt8]?, headers: [String] = []) throws -> HTTPResponse {
        try outcome(method: method, url: url, body: body, headers: headers).get()
    }

    /// `perform`'s response or the `ClientError` it throws, for a caller that keeps either.
    func outcome(method: String, url: String, body: [UInt8]?, headers: [String] = []) -> Result<HTTPResponse, ClientError> {
        let easy = easy
        var requestHeaders = headerList
        var ownHeaders: UnsafeMutablePointer<curl_slist>?
        if !headers.isEmpty {
            ownHeaders = curl_slist_append(nil, "Expect:")
            ownHeaders = curl_slist_append(ownHeaders, "Content-Type: application/json")
            for header in headers { ownHeaders = curl_slist_append(ownHeaders, header) }
            requestHeaders = ownHeaders
        }
        defer { curl_slist_free_all(ownHeaders) }
        return method.withCString { methodPointer in
            let payload = body ?? []
            return payload.withUnsafeBytes { bytes in
                Result { () throws(ClientError) in
                    try easy.perform(url: url, timeoutSeconds: timeoutSeconds, headers: requestHeaders) {
                        if method == "GET", body == nil {
                            easy.set(CURLOPT_HTTPGET, 1)
                            easy.set(CURLOPT_CUSTOMREQUEST, pointer: nil)
                        } else if method == "POST" {
                            easy.set(CURLOPT_POST, 1)
                            easy.set(CURLOPT_CUSTOMREQUEST, pointer: nil)
                        } else {
                            easy.set(CURLOPT_CUSTOMREQUEST, pointer: methodPointer)
                        }
                        if body != nil || method == "POST" {
                            // An empty array may have no base address; libcurl wants a pointer anyway.
                            easy.set(CURLOPT_POSTFIELDS, pointer: bytes.baseAddress ?? UnsafeRawPointer(methodPointer))
                            postback_curl_set_offset(easy.handle, CURLOPT_POSTFIELDSIZE_LARGE.rawValue, Int64(bytes.count))
                        }
                    }
                }
            }
        }
    }
}

extension HTTPClient {
    /// One POST of `postAll`.
    package struct Post {
        package let client: HTTPClient
        package let url: String
        package let body: [UInt8]
        /// `Name: value` lines added to this request.
        package let headers: [String]

        package init(client: HTTPClient, url: String, body: [UInt8], headers: [String]) {
            self.client = client
            self.url = url
            self.body = body
            self.headers = headers
        }
    }

    /// Sends every POST at once, each on its own client's connection, with libcurl's multi interface
    /// on the calling thread; results in order. A client must appear at most once. Pass the same
    /// `multi` for every batch to keep the connections alive between them.
    package static func postAll(_ posts: [Post], multi: CurlMulti = CurlMulti()) -> [Result<HTTPResponse, ClientError>] {
        var lists: [UnsafeMutablePointer<curl_slist>?] = []
        defer { lists.forEach { curl_slist_free_all($0) } }
        let start = DispatchTime.now().uptimeNanoseconds
        for post in posts {
            var list = curl_slist_append(nil, "Expect:")
            list = curl_slist_append(list, "Content-Type: application/json")
            for header in post.headers { list = curl_slist_append(list, header) }
            lists.append(list)
            let easy = post.client.easy
            easy.prepare(url: post.url, timeoutSeconds: post.client.timeoutSeconds, headers: list) {
                easy.set(CURLOPT_POST, 1)
                easy.set(CURLOPT_CUSTOMREQUEST, pointer: nil)
                // Set the size first: COPYPOSTFIELDS copies that many bytes, so the body need not outlive the call.
                postback_curl_set_offset(easy.handle, CURLOPT_POSTFIELDSIZE_LARGE.rawValue, Int64(post.body.count))
                post.body.withUnsafeBytes { bytes in
                    let empty: StaticString = ""
                    easy.set(CURLOPT_COPYPOSTFIELDS, pointer: bytes.baseAddress ?? UnsafeRawPointer(empty.utf8Start))
                }
            }
        }
        let codes = multi.performAll(posts.map(\.client.easy))
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        return zip(posts, codes).map { post, code in
            Result { () throws(ClientError) in try post.client.easy.response(code, seconds: seconds) }
        }
    }
}

/// Collects one response's headers and body from libcurl's callbacks (shared with `S3Client`).
///
/// A body is kept in memory only up to a cap (`bodyLimit` for a 2xx answer, `errorBodyLimit` for
/// any other): a peer sending more gets its transfer aborted (`bodyOverLimit`, reported as a failed
/// request), so no answer, however long, can grow the process. Large 2xx bodies that are legitimate
/// (S3 objects) are streamed through `bodyStream` instead, which has no cap.
final class ResponseSink {
    /// The cap of both limits unless a client sets its own: what a status and an error need.
    static let defaultBodyLimit = 64 * 1024

    var body: [UInt8] = []
    var headers: [String: String] = [:]
    /// The status of the latest status line seen.
    var status = 0
    /// When set, a 2xx response's body goes here chunk by chunk instead of into `body` (bounded
    /// memory for large objects); returning false aborts the transfer. Error bodies are still kept.
    var bodyStream: ((UnsafeRawBufferPointer) -> Bool)?
    /// At most this many bytes of a 2xx body are kept (when not streamed).
    var bodyLimit = ResponseSink.defaultBodyLimit
    /// At most this many bytes of any other body are kept.
    var errorBodyLimit = ResponseSink.defaultBodyLimit
    /// Set when the transfer was aborted because the body went over its cap.
    private(set) var bodyOverLimit = false

    func reset() {
        // A buffer grown past the cap (a client whose cap was raised) is released, not kept.
        if body.capacity > Self.defaultBodyLimit {
            body = []
        } else {
            body.removeAll(keepingCapacity: true)
        }
        headers.removeAll(keepingCapacity: true)
        status = 0
        bodyOverLimit = false
    }

    /// The cap that applies to the body now being received.
    var currentBodyLimit: Int { (200..<300).contains(status) ? bodyLimit : errorBodyLimit }

    static let bodyCallback: postback_curl_write_callback = { data, size, count, context in
        guard let data, let context else { return 0 }
        let sink = Unmanaged<ResponseSink>.fromOpaque(context).takeUnretainedValue()
        let length = size * count
        if let stream = sink.bodyStream, (200..<300).contains(sink.status) {
            return stream(UnsafeRawBufferPointer(start: data, count: length)) ? length : 0
        }
        guard sink.body.count + length <= sink.currentBodyLimit else {
            // Over the cap: nothing more is kept, the buffer is released and libcurl aborts the
            // transfer (a write callback returning less than it was given: CURLE_WRITE_ERROR).
            sink.bodyOverLimit = true
            sink.body = []
            return 0
        }
        data.withMemoryRebound(to: UInt8.self, capacity: length) {
            sink.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: length))
        }
        return length
    }

    static let headerCallback: postback_curl_write_callback = { data, size, count, context in
        guard let data, let context else { return 0 }
        let sink = Unmanaged<ResponseSink>.fromOpaque(context).takeUnretainedValue()
        let length = size * count
        let line = data.withMemoryRebound(to: UInt8.self, capacity: length) {
            String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
        }
        if line.hasPrefix("HTTP/") {
            // A new response (after a 100 Continue, or a redirect): forget the previous headers.
            sink.headers.removeAll()
            sink.status = line.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
        } else if let colon = line.firstIndex(of: ":") {
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmingCharacters(in: [" ", "\t", "\r", "\n", "\r\n"])
            sink.headers[name] = value
        }
        return length
    }
}

extension Substring {
    /// ("\r\n" is one Character in Swift, so it must be in the set itself.)
    func trimmingCharacters(in set: Set<Character>) -> String {
        String(drop(while: { set.contains($0) }).reversed().drop(while: { set.contains($0) }).reversed())
    }
}
