import CCurl

/// libcurl's multi interface: several prepared easy handles transferring at once on the calling
/// thread (one `poll` over all their sockets), so N requests in flight cost no extra threads.
///
/// The multi handle keeps the connections of the transfers it ran (its connection cache), so one
/// that lives as long as its user reuses them batch after batch; a handle per batch closed them all,
/// and every forwarded postback opened a new connection. Use it from one thread at a time.
package final class CurlMulti {
    private let handle: UnsafeMutableRawPointer?

    package init() {
        handle = curl_multi_init()
    }

    deinit {
        if let handle { curl_multi_cleanup(handle) }
    }

    /// Runs the transfers `prepare`d on `easies` to completion; each one's result code, in order.
    func performAll(_ easies: [CurlEasy]) -> [CURLcode] {
        guard let multi = handle else { return Array(repeating: CURLE_FAILED_INIT, count: easies.count) }
        for easy in easies { curl_multi_add_handle(multi, easy.handle) }
        var running: Int32 = 0
        repeat {
            guard curl_multi_perform(multi, &running) == CURLM_OK else { break }
            // Waits for socket activity or libcurl's next timeout (each transfer has CURLOPT_TIMEOUT_MS).
            if running > 0 { curl_multi_poll(multi, nil, 0, 1000, nil) }
        } while running > 0
        var codes = [CURLcode](repeating: CURLE_FAILED_INIT, count: easies.count)
        var left: Int32 = 0
        while let message = curl_multi_info_read(multi, &left) {
            guard message.pointee.msg == CURLMSG_DONE,
                let index = easies.firstIndex(where: { $0.handle == message.pointee.easy_handle })
            else { continue }
            codes[index] = message.pointee.data.result
        }
        for easy in easies { curl_multi_remove_handle(multi, easy.handle) }
        return codes
    }
}
