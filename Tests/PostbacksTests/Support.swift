import Foundation
import PostbackCrypto
import PostbackTesting
import TestSupport

@testable import Basics
@testable import Postbacks

enum TestKeys {
    static let p256 = try! ECDSAPrivateKey(generatingOn: .p256)
    static let p192 = try! ECDSAPrivateKey(generatingOn: .p192)
    static let otherP256 = try! ECDSAPrivateKey(generatingOn: .p256)

    static var signer256: TestPostbackSigner { TestPostbackSigner(key: p256) }
    static var signer192: TestPostbackSigner { TestPostbackSigner(key: p192) }

    static func trusted(_ key: ECDSAPrivateKey, name: String = "test:key.pem") -> TrustedTestKey {
        TrustedTestKey(name: name, key: key.publicKey)
    }

    /// Development allowed, both test keys trusted.
    static let devVerifier = PostbackVerifier(
        policy: VerificationPolicy(
            allowsDevelopment: true, testKeys: [trusted(p256, name: "test:p256.pem"), trusted(p192, name: "test:p192.pem")]))
}

/// A JSON object body edited as a dictionary of raw JSON texts, keeping key order.
struct EditableBody {
    var members: [(key: String, json: String)]

    init(_ bytes: [UInt8]) throws {
        guard case .object(let object) = try StrictJSONParser.parse(bytes) else { throw EditError() }
        members = object.members.map { ($0.key, Self.encode($0.value)) }
    }

    struct EditError: Error {}

    subscript(key: String) -> String? {
        get { members.first { $0.key == key }?.json }
        set {
            if let index = members.firstIndex(where: { $0.key == key }) {
                if let newValue { members[index].json = newValue } else { members.remove(at: index) }
            } else if let newValue {
                members.append((key, newValue))
            }
        }
    }

    var bytes: [UInt8] {
        Array(("{" + members.map { "\"\($0.key)\":\($0.json)" }.joined(separator: ",") + "}").utf8)
    }

    static func encode(_ value: JSONValue) -> String {
        switch value {
        case .string, .number, .bool, .null: return FieldReader.rawText(value)
        case .object(let object):
            return "{" + object.members.map { "\"\($0.key)\":\(encode($0.value))" }.joined(separator: ",") + "}"
        case .array(let array): return "[" + array.map(encode).joined(separator: ",") + "]"
        }
    }
}

extension PostbackVerifier {
    func verify(_ text: String) -> VerificationResult { verify(body: Array(text.utf8)) }
}

extension SKAdNetworkTestPostback {
    /// A SKAdNetwork 4.0 postback of source identifier 5239, a first-time download from a StoreKit-rendered ad.
    static func v4(transactionID: String, didWin: Bool = true, sequenceIndex: Int = 0) -> SKAdNetworkTestPostback {
        var postback = SKAdNetworkTestPostback(version: "4.0", transactionID: transactionID)
        postback.sourceIdentifier = "5239"
        postback.redownload = false
        postback.fidelityType = 1
        postback.didWin = didWin
        postback.postbackSequenceIndex = sequenceIndex
        return postback
    }
}

// Cases as optionals, so that a test can `#require` the one it expects instead of returning early.
extension Postback {
    var skadnetwork: SKAdNetworkPostback? { if case .skadnetwork(let postback) = self { postback } else { nil } }
    var adAttributionKit: AdAttributionKitPostback? {
        if case .adAttributionKit(let postback) = self { postback } else { nil }
    }
}

extension JSONValue {
    var number: JSONNumber? { if case .number(let number) = self { number } else { nil } }
}
