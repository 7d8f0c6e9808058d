import Postbacks

/// Any bytes as a postback body: strict JSON, typed fields, signed message, and the verifier's verdict.
/// Must never crash, hang or trip AddressSanitizer; a verdict is always produced.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPostbackBody(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let body = UnsafeRawBufferPointer(start: data, count: size)
    let postback: Postback
    do {
        postback = try Postback(body: body)
    } catch {
        precondition(!error.reason.isEmpty, "a rejection must say why")
        return 0
    }
    if case .skadnetwork(let skan) = postback {
        let message = skan.signedMessage()
        precondition(!message.isEmpty)
        // No accepted value may contain the separator: it would let fields shift.
        for field in skan.signedFields() { precondition(!field.value.unicodeScalars.contains("\u{2063}")) }
    }
    // Verification proper is costly (one ECDSA check); do it for a sample to keep the fuzzer fast.
    if size % 16 == 0 {
        precondition(verifier.verify(postback).status != .verified || postback.dedupKey.isEmpty == false)
    }
    return 0
}

private let verifier = PostbackVerifier(policy: VerificationPolicy(allowsDevelopment: true))
