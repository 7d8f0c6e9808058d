import Foundation
import Testing

@testable import Basics

/// The metric handles (`Counter`, `LabeledCounter`, `KeyedCounter`, `Gauge`, `LabeledGauge`,
/// `Histogram`) and a `MetricGroup`'s page, against text written by hand from the Prometheus text
/// format (version 0.0.4).
@Suite struct MetricHandleTests {
    enum Colour: String, ClosedMetricLabel {
        case red, green, blue
    }
    enum Size: String, ClosedMetricLabel {
        case small, large
    }

    final class Example: MetricGroup {
        let hits = Counter("example_hits_total", help: "Hits.")
        let colours = LabeledCounter<Colour>("example_colours_total", labels: ["colour"], help: "Colours seen.")
        let every = LabeledCounter<Colour>("example_every_total", labels: ["colour"], help: "Every colour.", series: .every)
        let pairs = LabeledCounter<LabelPair<Colour, Size>>("example_pairs_total", labels: ["colour", "size"], help: "Pairs.")
        let names = KeyedCounter<String>("example_names_total", labels: ["name"], help: "Names.")
        let level = Gauge("example_level", help: "Level.")
        let healthy = LabeledGauge<Size>("example_healthy", labels: ["size"], help: "Healthy.")
        let latency = Histogram("example_seconds", help: "Latency.", upperBounds: [0.5, 1])
        /// Not a metric: left out of the page.
        let note = "not a metric"
    }

    @Test func aGroupRendersItsHandlesInDeclarationOrder() {
        let example = Example()
        example.hits.increment()
        example.hits.increment(by: 2)
        example.colours.increment(.green)
        example.colours.increment(.blue)
        example.colours.increment(.blue)
        example.every.increment(.blue)
        example.pairs.increment(.red, .small)
        example.pairs.increment(.blue, .large)
        example.names.increment("zed")
        example.names.increment("a\"b")
        example.names.increment("idle", by: 0)
        example.level.set(7)
        example.healthy.set(.large, 1)
        example.latency.observe(0.25)
        example.latency.observe(3)
        var page = MetricsPage()
        page.families(of: example)
        #expect(
            page.text == """
                # HELP example_hits_total Hits.
                # TYPE example_hits_total counter
                example_hits_total 3
                # HELP example_colours_total Colours seen.
                # TYPE example_colours_total counter
                example_colours_total{colour="blue"} 2
                example_colours_total{colour="green"} 1
                # HELP example_every_total Every colour.
                # TYPE example_every_total counter
                example_every_total{colour="red"} 0
                example_every_total{colour="green"} 0
                example_every_total{colour="blue"} 1
                # HELP example_pairs_total Pairs.
                # TYPE example_pairs_total counter
                example_pairs_total{colour="blue",size="large"} 1
                example_pairs_total{colour="red",size="small"} 1
                # HELP example_names_total Names.
                # TYPE example_names_total counter
                example_names_total{name="a\\"b"} 1
                example_names_total{name="idle"} 0
                example_names_total{name="zed"} 1
                # HELP example_level Level.
                # TYPE example_level gauge
                example_level 7
                # HELP example_healthy Healthy.
                # TYPE example_healthy gauge
                example_healthy{size="small"} 0
                example_healthy{size="large"} 1
                # HELP example_seconds Latency.
                # TYPE example_seconds histogram
                example_seconds_bucket{le="0.5"} 1
                example_seconds_bucket{le="1.0"} 1
                example_seconds_bucket{le="+Inf"} 2
                example_seconds_sum 3.25
                example_seconds_count 2

                """)
    }

    /// A group's handles are reflected once; a group made after another one ended (which may get its
    /// address) shows its own handles.
    @Test func eachGroupShowsItsOwnHandles() {
        for value in 1...20 {
            let example = Example()
            example.hits.increment(by: value)
            var page = MetricsPage()
            page.families(of: example)
            page.families(of: example)
            #expect(page.text.components(separatedBy: "example_hits_total \(value)\n").count == 3, "\(value)")
        }
    }

    /// CI size 8 × 5,000 counts (about 0.1 s); `POSTBACK_METRIC_COUNTS_PER_THREAD` for more.
    @Test func countsFromManyThreadsAddUp() async {
        let example = Example()
        let threads = 8
        let perThread = ProcessInfo.processInfo.environment["POSTBACK_METRIC_COUNTS_PER_THREAD"].flatMap { Int($0) } ?? 5_000
        await withTaskGroup(of: Void.self) { group in
            for thread in 0..<threads {
                group.addTask {
                    for _ in 0..<perThread {
                        example.hits.increment()
                        example.colours.increment(thread.isMultiple(of: 2) ? .red : .green)
                    }
                }
            }
        }
        #expect(example.hits.count == threads * perThread)
        #expect(example.colours[.red] == threads / 2 * perThread)
        #expect(example.colours[.green] == threads / 2 * perThread)
        #expect(example.colours[.blue] == 0)
    }
}
