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

/// A request that got no HTTP response (refused, reset, timed out).
package struct HTTPClientError: Error, Sendable, CustomStringConvertible {
    package let description: String
    package init(_ description: String) { self.description = description }
}

/// A libcurl easy handle: one connection, kept alive between requests. Use one per thread.
package final class HTTPClient {
    fileprivate let easy: CurlEasy
    private var headerList: UnsafeMutablePointer<curl_slist>?
    package var timeoutSeconds: Double

    /// - Parameter caCertificatePath: a PEM file of CA certificates to trust for HTTPS instead of the
    ///   system's (a deployment with its own or a self-signed certificate).
    package init(timeoutSeconds: Double = 30, caCertificatePath: String? = nil) throws(HTTPClientError) {
        guard let easy = CurlEasy() else { throw HTTPClientError("libcurl could not be initialized") }
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

    package func post(_ url: String, body: [UInt8]) throws(HTTPClientError) -> HTTPResponse {
        try perform(method: "POST", url: url, body: body)
    }

    package func get(_ url: String) throws(HTTPClientError) -> HTTPResponse {
        try perform(method: "GET", url: url, body: nil)
    }

    /// Any method; a body is sent when given. `headers` (`Name: value` lines) are added to this request only.
    package func perform(method: String, url: String, body: [UInt8]?, headers: [String] = []) throws(HTTPClientError)
        -> HTTPResponse
    {
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
        let outcome: Result<HTTPResponse, CurlEasy.Failure> = method.withCString { methodPointer in
            let payload = body ?? []
            return payload.withUnsafeBytes { bytes in
                Result { () throws(CurlEasy.Failure) in
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
        do { return try outcome.get() } catch { throw HTTPClientError(error.message) }
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
    /// on the calling thread; results in order. A client must appear at most once.
    package static func postAll(_ posts: [Post]) -> [Result<HTTPResponse, HTTPClientError>] {
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
        let codes = CurlMulti.performAll(posts.map(\.client.easy))
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        return zip(posts, codes).map { post, code in
            Result { () throws(CurlEasy.Failure) in try post.client.easy.response(code, seconds: seconds) }
                .mapError { HTTPClientError($0.message) }
        }
    }
}

/// Collects one response's headers and body from libcurl's callbacks (shared with `S3Client`).
final class ResponseSink {
    var body: [UInt8] = []
    var headers: [String: String] = [:]
    /// The status of the latest status line seen.
    var status = 0
    /// When set, a 2xx response's body goes here chunk by chunk instead of into `body` (bounded
    /// memory for large objects); returning false aborts the transfer. Error bodies are still kept.
    var bodyStream: ((UnsafeRawBufferPointer) -> Bool)?

    func reset() {
        body.removeAll(keepingCapacity: true)
        headers.removeAll(keepingCapacity: true)
        status = 0
    }

    static let bodyCallback: postback_curl_write_callback = { data, size, count, context in
        guard let data, let context else { return 0 }
        let sink = Unmanaged<ResponseSink>.fromOpaque(context).takeUnretainedValue()
        let length = size * count
        if let stream = sink.bodyStream, (200..<300).contains(sink.status) {
            return stream(UnsafeRawBufferPointer(start: data, count: length)) ? length : 0
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
