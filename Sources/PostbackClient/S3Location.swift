import Basics
import Foundation

/// `s3://bucket/prefix`: where a store lives in an S3-compatible object store. Object keys are the
/// store's relative paths under the prefix (`raw/postbacks/dt=…/part-…jsonl`, `agg/…`), the same
/// layout as a local data directory, so Spark, Trino, Athena and DuckDB read it unchanged.
package struct S3Location: Sendable, Equatable, CustomStringConvertible {
    package let bucket: String
    /// Empty, or ends with `/`.
    package let prefix: String

    /// Whether a `--data` value names an object store rather than a local directory.
    package static func isObjectStoreURL(_ text: String) -> Bool { text.hasPrefix("s3://") }

    package init(bucket: String, prefix: String) {
        self.bucket = bucket
        self.prefix = prefix.isEmpty || prefix.hasSuffix("/") ? prefix : prefix + "/"
    }

    /// Parses `s3://bucket` or `s3://bucket/some/prefix`.
    package init(url: String) throws {
        guard url.hasPrefix("s3://") else { throw ClientError.configuration("\(URLRedaction.redacted(url)) is not an s3:// URL") }
        let rest = url.dropFirst(5)
        let bucket = String(rest.prefix { $0 != "/" })
        // Bucket naming rules (lower case, digits, '.', '-', 3–63): anything else cannot be addressed.
        guard (3...63).contains(bucket.utf8.count),
            bucket.utf8.allSatisfy({ ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2E || $0 == 0x2D })
        else {
            throw ClientError.configuration(
                "\(URLRedaction.redacted(url)): the bucket name must be 3–63 lower-case letters, digits, '.' or '-'")
        }
        var prefix = String(rest.dropFirst(bucket.count).drop { $0 == "/" })
        while prefix.hasSuffix("//") { prefix.removeLast() }
        self.init(bucket: bucket, prefix: prefix)
    }

    /// The object key of a store-relative path.
    package func key(_ relativePath: String) -> String { prefix + relativePath }

    package var description: String { "s3://\(bucket)/\(prefix)" }
}

/// How to reach the object store, taken the way AWS tools take it: `AWS_ENDPOINT_URL_S3` or
/// `AWS_ENDPOINT_URL` (default `https://s3.<region>.amazonaws.com`), `AWS_REGION` or
/// `AWS_DEFAULT_REGION` (default us-east-1), `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
/// `AWS_SESSION_TOKEN`. Addressing: `AWS_S3_ADDRESSING_STYLE` = `path` or `virtual`; by default path
/// style with a custom endpoint (MinIO, SeaweedFS, Ceph) and virtual-host style on AWS. HTTPS uses
/// the system CA store (libcurl's default).
package struct S3Settings: Sendable, Equatable {
    package enum Addressing: String, Sendable { case path, virtual }

    /// Scheme and host (and port), no trailing slash.
    package var endpoint: String
    package var region: String
    package var accessKeyID: String
    package var secretAccessKey: String
    package var sessionToken: String?
    package var addressing: Addressing
    /// Per request, in all: large segments need long on slow links, so the idle limit below is what
    /// notices a dead connection.
    package var timeoutSeconds: Double = 300
    /// A request that moves no byte in either direction for this long (a stalled or black-holed
    /// connection: no reset, no answer) is abandoned and retried.
    package var idleTimeoutSeconds: Double = 30

    package init(
        endpoint: String, region: String, accessKeyID: String, secretAccessKey: String,
        sessionToken: String? = nil, addressing: Addressing = .path
    ) {
        self.endpoint = endpoint.hasSuffix("/") ? String(endpoint.dropLast()) : endpoint
        self.region = region
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.sessionToken = sessionToken
        self.addressing = addressing
    }

    /// Reads the environment; `overrides` (config keys) win over it. Missing credentials are an
    /// error that says which variables to set.
    package static func fromEnvironment(
        _ environment: [String: String]? = nil,
        endpoint: String? = nil, region: String? = nil,
        addressing: Addressing? = nil
    ) throws -> S3Settings {
        let environment = environment ?? ProcessInfo.processInfo.environment
        func value(_ names: String...) -> String? {
            for name in names { if let text = environment[name], !text.isEmpty { return text } }
            return nil
        }
        let region = region ?? value("AWS_REGION", "AWS_DEFAULT_REGION") ?? "us-east-1"
        let customEndpoint = endpoint ?? value("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
        guard let key = value("AWS_ACCESS_KEY_ID"), let secret = value("AWS_SECRET_ACCESS_KEY") else {
            throw ClientError.configuration(
                "no object store credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for temporary ones)"
            )
        }
        var style = addressing
        if style == nil, let text = value("AWS_S3_ADDRESSING_STYLE"), text != "auto" {
            guard let parsed = Addressing(rawValue: text) else {
                throw ClientError.configuration("AWS_S3_ADDRESSING_STYLE must be path, virtual or auto, got \"\(text)\"")
            }
            style = parsed
        }
        let resolvedEndpoint = customEndpoint ?? "https://s3.\(region).amazonaws.com"
        guard resolvedEndpoint.hasPrefix("http://") || resolvedEndpoint.hasPrefix("https://") else {
            throw ClientError.configuration(
                "object store endpoint \(URLRedaction.redacted(resolvedEndpoint)) must start with http:// or https://")
        }
        return S3Settings(
            endpoint: resolvedEndpoint, region: region, accessKeyID: key, secretAccessKey: secret,
            sessionToken: value("AWS_SESSION_TOKEN"), addressing: style ?? (customEndpoint == nil ? .virtual : .path))
    }
}

/// RFC 3986 percent-encoding of object keys and query values. libcurl signs the path as written, so
/// every key segment must be encoded the canonical way (`dt=…` as `dt%3D…`), `/` kept between segments.
package enum S3KeyEncoding {
    package static func encode(_ text: String, keepSlash: Bool) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            let unreserved =
                (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39)
                || byte == 0x2D || byte == 0x2E || byte == 0x5F || byte == 0x7E
            if unreserved || (keepSlash && byte == 0x2F) {
                out.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                out += "%" + String(byte >> 4, radix: 16, uppercase: true) + String(byte & 0xF, radix: 16, uppercase: true)
            }
        }
        return out
    }
}
