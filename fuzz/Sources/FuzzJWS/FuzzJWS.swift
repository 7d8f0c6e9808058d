import Basics
import Postbacks

/// Any text as an AdAttributionKit `jws-string`: segment splitting, strict base64url, header and
/// payload JSON, and the claim rules.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJWS(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    if let jws = try? CompactJWS(parsing: text) {
        // What is signed is exactly the first two segments as given.
        precondition(Array(text.utf8).starts(with: jws.signingInput))
        precondition(jws.signingInput.filter { $0 == UInt8(ascii: ".") }.count == 1)
    }
    var body = JSONWriter()
    body.beginObject()
    body.field("jws-string", text)
    body.endObject()
    _ = try? Postback(body: body.bytes)
    return 0
}
