import Basics
import PostbackClient
import SpoolDelivery
import Testing

/// A URL is printed (logs, `forward status`, messages) without its user-info and query: a password in
/// `user:password@` or an API key in the query never reaches a log.
@Suite struct URLRedactionTests {
    @Test(arguments: [
        ("https://partner.example/skan?key=abc", "https://partner.example/skan?…"),
        ("https://user:s3cret@partner.example:8443/skan", "https://…@partner.example:8443/skan"),
        ("https://user:s3cret@partner.example/skan?key=abc#x", "https://…@partner.example/skan?…"),
        ("http://token@127.0.0.1:9000", "http://…@127.0.0.1:9000"),
        ("http://minio.internal:9000/", "http://minio.internal:9000/"),
        ("https://partner.example/a@b/c", "https://partner.example/a@b/c"),
        ("https://u:p@ss@host/x", "https://…@host/x"),
        ("user:s3cret@host/path", "…@host/path"),
    ])
    func userInfoAndQueryAreHidden(url: String, shown: String) {
        #expect(URLRedaction.redacted(url) == shown)
    }

    @Test func forwardURLsAndObjectStoreEndpointsNeverShowThePassword() throws {
        func forward(_ url: String) throws -> [ForwardSettings] {
            try ForwardSettings.parseList(try StrictJSONParser.parse(Array(#"[{"name": "mmp", "url": "\#(url)"}]"#.utf8)))
        }
        let settings = try forward("https://user:s3cret@partner.example/skan?key=abc")
        #expect(settings.first?.urlForDisplay == "https://…@partner.example/skan?…")

        do {
            _ = try forward("ftp://user:s3cret@host/x")
            Issue.record("an ftp:// forward URL was accepted")
        } catch {
            #expect(!"\(error)".contains("s3cret"), "\(error)")
        }
        do {
            _ = try S3Settings.fromEnvironment(
                ["AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "b", "AWS_REGION": "us-east-1"],
                endpoint: "ftp://user:s3cret@minio:9000")
            Issue.record("an ftp:// endpoint was accepted")
        } catch {
            #expect("\(error)".contains("ftp://…@minio:9000") && !"\(error)".contains("s3cret"), "\(error)")
        }
    }
}
