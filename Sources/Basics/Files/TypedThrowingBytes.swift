// The standard library's `withUnsafeBytes` family is `rethrows`, which erases a typed error to
// `any Error`; these keep the closure's error type.

extension Array {
    package func withBytes<R, Failure: Error>(_ body: (UnsafeRawBufferPointer) throws(Failure) -> R) throws(Failure) -> R {
        var outcome: Result<R, Failure>? = nil
        withUnsafeBytes { bytes in outcome = Result { () throws(Failure) -> R in try body(bytes) } }
        return try outcome!.get()
    }

    package mutating func withMutableBytes<R, Failure: Error>(
        _ body: (UnsafeMutableRawBufferPointer) throws(Failure) -> R
    ) throws(Failure) -> R {
        var outcome: Result<R, Failure>? = nil
        withUnsafeMutableBytes { bytes in outcome = Result { () throws(Failure) -> R in try body(bytes) } }
        return try outcome!.get()
    }
}

package func withMutableBytes<T, R, Failure: Error>(
    of value: inout T, _ body: (UnsafeMutableRawBufferPointer) throws(Failure) -> R
) throws(Failure) -> R {
    var outcome: Result<R, Failure>? = nil
    withUnsafeMutableBytes(of: &value) { bytes in outcome = Result { () throws(Failure) -> R in try body(bytes) } }
    return try outcome!.get()
}
