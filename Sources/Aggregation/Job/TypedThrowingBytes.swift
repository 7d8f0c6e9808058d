// The standard library's `withUnsafeBytes` family is `rethrows`, which erases a typed error to
// `any Error`; these keep `AggregationError` typed through the closure.

extension Array {
    func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws(AggregationError) -> R) throws(AggregationError) -> R {
        var outcome: Result<R, AggregationError>? = nil
        withUnsafeBytes { bytes in outcome = Result { () throws(AggregationError) -> R in try body(bytes) } }
        return try outcome!.get()
    }

    mutating func withMutableBytes<R>(_ body: (UnsafeMutableRawBufferPointer) throws(AggregationError) -> R)
        throws(AggregationError) -> R
    {
        var outcome: Result<R, AggregationError>? = nil
        withUnsafeMutableBytes { bytes in outcome = Result { () throws(AggregationError) -> R in try body(bytes) } }
        return try outcome!.get()
    }
}

func withMutableBytes<T, R>(of value: inout T, _ body: (UnsafeMutableRawBufferPointer) throws(AggregationError) -> R)
    throws(AggregationError) -> R
{
    var outcome: Result<R, AggregationError>? = nil
    withUnsafeMutableBytes(of: &value) { bytes in outcome = Result { () throws(AggregationError) -> R in try body(bytes) } }
    return try outcome!.get()
}
