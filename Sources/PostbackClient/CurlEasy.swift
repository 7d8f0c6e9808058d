import CCurl
import CCurlShim
import Dispatch

/// One libcurl easy handle and what every request on it shares: the response sink and its
/// callbacks, the timeout, the error buffer, timing and the status code. `HTTPClient` and
/// `S3Client` set only their own options (method, body, signing) in `perform`'s closure.
final class CurlEasy {
    let handle: UnsafeMutableRawPointer
    let sink = ResponseSink()

    private static let globalSetup: Bool = curl_global_init(Int(CURL_GLOBAL_ALL)) == CURLE_OK

    /// Why libcurl did not get a response: its error buffer, or its text for the code.
    struct Failure: Error {
        let message: String
    }

    /// Nil when libcurl cannot be initialized.
    init?() {
        guard Self.globalSetup, let handle = curl_easy_init() else { return nil }
        self.handle = handle
    }

    deinit { curl_easy_cleanup(handle) }

    func set(_ option: CURLoption, _ value: Int) {
        postback_curl_set_long(handle, option.rawValue, value)
    }

    func set(_ option: CURLoption, pointer: UnsafeRawPointer?) {
        postback_curl_set_pointer(handle, option.rawValue, pointer)
    }

    /// Sends one request to `url`. `configure` sets the request's own options; pointers it passes
    /// must live until `perform` returns (libcurl reads them during the transfer).
    func perform(
        url: String, timeoutSeconds: Double, headers: UnsafeMutablePointer<curl_slist>?,
        configure: () -> Void
    ) throws(Failure) -> HTTPResponse {
        sink.reset()
        let context = Unmanaged.passUnretained(sink).toOpaque()
        var errorBuffer = [CChar](repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        let start = DispatchTime.now().uptimeNanoseconds
        let code: CURLcode = errorBuffer.withUnsafeMutableBufferPointer { errorPointer in
            url.withCString { urlPointer in
                set(CURLOPT_URL, pointer: urlPointer)
                set(CURLOPT_NOSIGNAL, 1)
                set(CURLOPT_TIMEOUT_MS, Int(timeoutSeconds * 1000))
                set(CURLOPT_ERRORBUFFER, pointer: errorPointer.baseAddress)
                set(CURLOPT_HTTPHEADER, pointer: headers)
                set(CURLOPT_WRITEDATA, pointer: context)
                set(CURLOPT_HEADERDATA, pointer: context)
                postback_curl_set_data_callback(handle, CURLOPT_WRITEFUNCTION.rawValue, ResponseSink.bodyCallback)
                postback_curl_set_data_callback(handle, CURLOPT_HEADERFUNCTION.rawValue, ResponseSink.headerCallback)
                configure()
                defer { set(CURLOPT_ERRORBUFFER, pointer: nil) }
                return curl_easy_perform(handle)
            }
        }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        guard code == CURLE_OK else {
            let detail = String(decoding: errorBuffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            throw Failure(message: detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail)
        }
        var status = 0
        postback_curl_info_long(handle, CURLINFO_RESPONSE_CODE.rawValue, &status)
        return HTTPResponse(status: status, body: sink.body, headers: sink.headers, seconds: seconds)
    }
}
