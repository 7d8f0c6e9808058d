package import Dispatch

/// A part of `postback serve` with a lifecycle, in the shape of hummingbird's services: its own
/// module's `start` makes and starts it (reading its own settings), the receiver renders its metrics
/// on every scrape of `/metrics`, and `serve`'s `ServiceGroup` (PostbackCLI) drains and stops it in the group's order.
package protocol Service: AnyObject, Sendable {
    /// Takes no more work in and finishes what it holds until `deadline` (what is left stays for the
    /// next start, and the service says so in its log).
    func drain(until deadline: DispatchTime)
    /// Stops its threads and releases what it holds; after `drain`.
    func stop()
    /// Its metric families as Prometheus text ("" for none).
    func renderMetrics() -> String
}
