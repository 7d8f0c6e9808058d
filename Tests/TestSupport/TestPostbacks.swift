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
        var postback = SKAdNetworkTestPostback.v4(transactionID: transactionID)
        postback.adNetworkID = adNetworkID
        postback.sourceAppID = 1_000_001
        postback.conversionValue = conversionValue
        postback.coarseConversionValue = coarseConversionValue
        postback.countryCode = countryCode
        return try! signer.sign(postback)
    }
}

extension SKAdNetworkTestPostback {
    /// The tests' one SKAdNetwork 4.0 postback shape (any `version` may be claimed, e.g. an unknown
    /// 5.0): source identifier `sourceIdentifier`, a first-time download from a StoreKit-rendered ad.
    package static func v4(
        transactionID: String, version: String = "4.0", sourceIdentifier: String = "1234", didWin: Bool = true,
        sequenceIndex: Int = 0
    ) -> SKAdNetworkTestPostback {
        var postback = SKAdNetworkTestPostback(version: version, transactionID: transactionID)
        postback.sourceIdentifier = sourceIdentifier
        postback.redownload = false
        postback.fidelityType = 1
        postback.didWin = didWin
        postback.postbackSequenceIndex = sequenceIndex
        return postback
    }
}
