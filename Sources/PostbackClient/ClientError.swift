/// What went wrong talking to a server (`HTTPClient`) or to the object store (`S3Client`): a closed
/// `code` to branch on, and the context a caller names, in words that say what to do.
package struct ClientError: Error, Sendable, CustomStringConvertible, Equatable {
    package enum Code: Sendable, Hashable {
        /// Bad URL or settings, or libcurl could not start: fix the configuration.
        case configuration
        /// A local file to upload could not be read (`message` says why).
        case localFile
        /// No HTTP answer (refused, reset, timed out, DNS, a body over its limit): the server is down or
        /// unreachable; retry.
        case unreachable
        /// The object store answered with an error status (`status`, `storeCode` from its XML body).
        case status
        /// A conditional create found the object already there (412; `target` is the key).
        case alreadyExists
    }

    package let code: Code
    /// The object store's request (`GET key`, a key, a prefix); nil for `HTTPClient`'s requests.
    package let target: String?
    /// The HTTP status of `.status`.
    package let status: Int?
    /// The object store's error code (`NoSuchBucket`, `SlowDown`, …) of `.status`; empty when it sent none.
    package let storeCode: String
    /// The text: libcurl's message, the store's message, or what is wrong with the settings.
    package let message: String

    private init(_ code: Code, target: String? = nil, status: Int? = nil, storeCode: String = "", message: String) {
        self.code = code
        self.target = target
        self.status = status
        self.storeCode = storeCode
        self.message = message
    }

    package static func configuration(_ message: String) -> ClientError { ClientError(.configuration, message: message) }

    package static func localFile(_ message: String) -> ClientError { ClientError(.localFile, message: message) }

    /// No answer to `target` (the object store's request), or to an `HTTPClient` request when nil.
    package static func unreachable(_ message: String, target: String? = nil) -> ClientError {
        ClientError(.unreachable, target: target, message: message)
    }

    package static func status(_ status: Int, code: String, message: String, target: String) -> ClientError {
        ClientError(.status, target: target, status: status, storeCode: code, message: message)
    }

    package static func alreadyExists(_ key: String) -> ClientError {
        ClientError(.alreadyExists, target: key, message: "already exists")
    }

    package var description: String {
        switch code {
        case .configuration, .localFile: return message
        case .unreachable: return target.map { "object store unreachable: \($0): \(message)" } ?? message
        case .alreadyExists: return "\(target ?? "") already exists"
        case .status:
            let hint: String
            switch (status ?? 0, storeCode) {
            case (_, "NoSuchBucket"): hint = " (create the bucket, or check the s3:// URL)"
            case (403, _), (_, "InvalidAccessKeyId"), (_, "SignatureDoesNotMatch"):
                hint = " (check AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_REGION)"
            default: hint = ""
            }
            return "\(target ?? ""): HTTP \(status ?? 0) \(storeCode.isEmpty ? "" : storeCode + ": ")\(message)\(hint)"
        }
    }

    /// Worth retrying later (server down, overloaded, throttling); otherwise an operator must act.
    package var isTransient: Bool {
        switch code {
        case .unreachable: return true
        case .status:
            let status = status ?? 0
            return status >= 500 || status == 429 || storeCode == "SlowDown" || storeCode == "RequestTimeout"
        case .configuration, .localFile, .alreadyExists: return false
        }
    }
}
