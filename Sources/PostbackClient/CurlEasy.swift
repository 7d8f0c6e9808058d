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

    /// libcurl writes a failed transfer's message here; it lives as long as the handle, since a
    /// transfer run by `CurlMulti` outlives any one call's stack frame.
    private let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)

    /// Nil when libcurl cannot be initialized.
    init?() {
        guard Self.globalSetup, let handle = curl_easy_init() else {
            errorBuffer.deallocate()
            return nil
        }
        self.handle = handle
    }

    deinit {
        curl_easy_cleanup(handle)
        errorBuffer.deallocate()
    }

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
    ) throws(ClientError) -> HTTPResponse {
        let start = DispatchTime.now().uptimeNanoseconds
        prepare(url: url, timeoutSeconds: timeoutSeconds, headers: headers, configure: configure)
        let code = curl_easy_perform(handle)
        return try response(code, seconds: Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
    }

    /// Sets what every request shares (libcurl copies the URL), then the request's own options.
    /// `perform` or `CurlMulti.performAll` then runs the transfer.
    func prepare(url: String, timeoutSeconds: Double, headers: UnsafeMutablePointer<curl_slist>?, configure: () -> Void) {
        sink.reset()
        errorBuffer[0] = 0
        let context = Unmanaged.passUnretained(sink).toOpaque()
        url.withCString { set(CURLOPT_URL, pointer: $0) }
        set(CURLOPT_NOSIGNAL, 1)
        set(CURLOPT_TIMEOUT_MS, Int(timeoutSeconds * 1000))
        set(CURLOPT_ERRORBUFFER, pointer: errorBuffer)
        set(CURLOPT_HTTPHEADER, pointer: headers)
        set(CURLOPT_WRITEDATA, pointer: context)
        set(CURLOPT_HEADERDATA, pointer: context)
        postback_curl_set_data_callback(handle, CURLOPT_WRITEFUNCTION.rawValue, ResponseSink.bodyCallback)
        postback_curl_set_data_callback(handle, CURLOPT_HEADERFUNCTION.rawValue, ResponseSink.headerCallback)
        configure()
    }

    /// The response of a finished transfer, or why there is none.
    func response(_ code: CURLcode, seconds: Double) throws(ClientError) -> HTTPResponse {
        guard code == CURLE_OK else {
            if sink.bodyOverLimit {
                throw ClientError.unreachable(
                    "response body over \(sink.currentBodyLimit) bytes: transfer aborted, answer not read")
            }
            let detail = String(cString: errorBuffer)
            throw ClientError.unreachable(detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail)
        }
        var status = 0
        postback_curl_info_long(handle, CURLINFO_RESPONSE_CODE.rawValue, &status)
        return HTTPResponse(status: status, body: sink.body, headers: sink.headers, seconds: seconds)
    }
}
