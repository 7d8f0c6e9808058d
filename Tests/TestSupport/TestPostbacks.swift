package import PostbackCrypto
package import PostbackTesting
package import Postbacks

/// A test key made once per test process with OpenSSL, and postbacks signed with it.
package enum TestPostbacks {
    package static let key = try! ECDSAPrivateKey(generatingOn: .p256)
    package static let trusted = TrustedTestKey(name: "test:server-tests.pem", key: key.publicKey)
    package static let signer = TestPostbackSigner(key: key)
    package static let synthetic = SyntheticPostbacks(kinds: [.skan4_0, .aak, .skan3_0])

    /// A unique signed postback (`index` picks it; `seed` separates tests).
    package static func body(_ index: Int, seed: UInt64) -> [UInt8] {
        try! signer.sign(synthetic.postback(index, seed: seed))
    }

    /// A SKAdNetwork 4.0 postback with a fine conversion value (unsigned) of `value`, and optionally a
    /// coarse value and a country (unsigned too).
    package static func skan4(
        transactionID: String, conversionValue: Int?, adNetworkID: String = "example123.skadnetwork",
        coarseConversionValue: String? = nil, countryCode: String? = nil
    ) -> [UInt8] {
        var postback = SKAdNetworkTestPostback(version: "4.0", transactionID: transactionID)
        postback.adNetworkID = adNetworkID
        postback.sourceIdentifier = "1234"
        postback.redownload = false
        postback.fidelityType = 1
        postback.didWin = true
        postback.postbackSequenceIndex = 0
        postback.sourceAppID = 1_000_001
        postback.conversionValue = conversionValue
        postback.coarseConversionValue = coarseConversionValue
        postback.countryCode = countryCode
        return try! signer.sign(postback)
    }
}
