import PostbackCrypto

/// The P-256 precomputed-table verifier against EVP on any signature bytes and digest: both must give
/// the same verdict, alone and in a batch. The first byte picks the key and whether the rest is the
/// DER itself or bytes XORed into a valid signature (so near-valid signatures are reached as well);
/// the next 32 bytes are the digest (XORed into the valid signature's digest in the second mode).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSignature(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    guard input.count >= 33 else { return 0 }
    let fixture = fixtures[Int(input[0] >> 1) % fixtures.count]
    var digestBytes = Array(input[1..<33])
    var der = Array(input[33...])
    if input[0] & 1 == 1 {
        for index in digestBytes.indices { digestBytes[index] ^= fixture.digest[index] }
        var mutated = fixture.signature
        for (index, byte) in der.enumerated() {
            if index < mutated.count { mutated[index] ^= byte } else { mutated.append(byte) }
        }
        der = mutated
    }
    let digest = SHA256.Digest(bytes: digestBytes)
    let evp = der.withUnsafeBytes { fixture.key.isValidSignatureByEVP(derSignature: $0, digest: digest) }
    let table = der.withUnsafeBytes { fixture.key.isValidSignature(derSignature: $0, digest: digest) }
    let batch = ECDSABatch.areValidSignatures([
        .init(key: fixture.key, derSignature: der, digest: digest),
        .init(key: fixture.key, derSignature: fixture.signature, digest: SHA256.Digest(bytes: fixture.digest)),
    ])
    precondition(table == evp && batch == [evp, true],
                 "table \(table), batch \(batch), EVP \(evp): key \(fixture.key.derRepresentation) signature \(der) digest \(digestBytes)")
    return 0
}

/// Keys with their tables, each with one valid signature to mutate.
private let fixtures: [(key: ECDSAPublicKey, signature: [UInt8], digest: [UInt8])] = (0..<4).map { index in
    let key = try! ECDSAPrivateKey(generatingOn: .p256)
    let message = Array("fuzz \(index)".utf8)
    precondition(key.publicKey.usesPrecomputedTable, "no table: the fuzzer would only compare EVP with itself")
    return (key.publicKey, try! key.derSignature(for: message), SHA256.hash(message).bytes)
}
