import Basics
import PostbackCrypto
import Postbacks

/// One key for every input: signing is what the service does with what the parser accepts.
let signer = try! ImpressionSigner(key: ECDSAPrivateKey(generatingOn: .p256))
let verifier = ImpressionVerifier(keys: [ImpressionKey(name: "fuzz", key: signer.key.publicKey)])

/// Any bytes as a signing-service body (`POST /impressions/sign`: JSON Lines, impressions) and as
/// Safari's `AdImpressionRequest` (`get-signed-payload`). Whatever parses as an impression is signed,
/// and what is signed must verify: the writer writes exactly what the parser read. What the fast path
/// (`PlainImpressionReader`) reads, the full parser must read the same.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzImpressionRequest(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let body = Array(UnsafeBufferPointer(start: data, count: size))
    if let lines = try? ImpressionSigningRequest.parse(body) {
        precondition(lines.count <= ImpressionSigningRequest.maximumImpressions)
        for line in lines {
            guard case .success(let impression) = line.impression else { continue }
            var json = JSONWriter()
            try! signer.write(impression, to: &json)
            let verdict = verifier.verify(json.bytes)
            precondition(verdict.isVerified, "signed but not verified: \(verdict.reason ?? "")")
        }
    }
    // The fast path accepts only what the full parser reads the same way.
    if let plain = body.withUnsafeBytes(PlainImpressionReader.read) {
        guard case .object(let object)? = try? StrictJSONParser.parse(body) else { preconditionFailure("fast path read non-JSON") }
        precondition((try? SKAdNetworkImpression(parsing: object)) == plain, "fast path read differently")
    }
    if let request = try? WebAdRequest(body: body) {
        precondition(request.nonce.utf8.count == 36)
        precondition(WebAdRequest.base64URL(uuid: request.nonce).flatMap(WebAdRequest.uuid(base64URL:)) == request.nonce)
    }
    return 0
}
