import PostbackTesting
import TestSupport
import Testing

@testable import Basics
@testable import Postbacks

/// Issue 24 item 7 (issue 25 item 3): a SKAdNetwork test-mode postback is signed without its
/// `source-app-id` of 0, so adding `"source-app-id": 0` to a genuine production postback that has none
/// gives a body that verifies, with Apple's key, as test mode over exactly the genuine message. Its
/// dedup key must differ from the genuine one's, or the copy posted first makes the genuine one a
/// duplicate (acknowledged, never counted).
@Suite struct EnvironmentKeyTests {
    @Test func aTestModeShadowOfApplesGenuinePostbackNeverSharesItsKey() throws {
        let genuineBody = try Fixtures.appleVector("skan-3.0_apple-doc_nonwinning.json")
        let genuine = PostbackVerifier().verify(body: genuineBody)
        #expect(genuine.status == .verified && genuine.environment == .production)
        var shadowBody = try EditableBody(genuineBody)
        #expect(shadowBody["source-app-id"] == nil)
        shadowBody["source-app-id"] = "0"
        let shadow = PostbackVerifier().verify(body: shadowBody.bytes)
        #expect(shadow.status == .verified, "its signed message is exactly the genuine one")
        #expect(shadow.isTestMode && shadow.environment == .development)
        #expect(genuine.dedupKey == "f9ac267a-a889-44ce-b5f7-0166d11461f0:0", "production keys are unchanged")
        #expect(shadow.dedupKey == "f9ac267a-a889-44ce-b5f7-0166d11461f0:0/development")
        #expect(shadow.dedupKey != genuine.dedupKey)
    }

    /// What a receiver's dedup index does with the two keys: the shadow posted first leaves the genuine
    /// copy new (stored and counted), not a duplicate.
    @Test func theGenuineCopyPostedSecondIsNotADuplicate() throws {
        var shadowBody = try EditableBody(try Fixtures.appleVector("skan-3.0_apple-doc_nonwinning.json"))
        shadowBody["source-app-id"] = "0"
        var stored: Set<String> = []
        let shadowKey = try #require(PostbackVerifier().verify(body: shadowBody.bytes).dedupKey)
        let genuineKey = try #require(
            PostbackVerifier().verify(body: try Fixtures.appleVector("skan-3.0_apple-doc_nonwinning.json")).dedupKey)
        let shadowIsNew = stored.insert(shadowKey).inserted
        let genuineIsNew = stored.insert(genuineKey).inserted
        #expect(shadowIsNew && genuineIsNew)
    }
}
