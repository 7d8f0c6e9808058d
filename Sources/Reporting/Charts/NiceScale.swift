#if canImport(Glibc)
    import Glibc
#endif

/// An axis from 0 to a round number at or above the data's maximum, with ticks at steps of 1, 2,
/// 2.5 or 5 times a power of ten: the ticks people expect to read.
struct NiceScale {
    let maximum: Double
    let step: Double

    /// - Parameters:
    ///   - value: the largest value to show (0 or less gives a 0–1 axis).
    ///   - tickCount: roughly how many steps.
    ///   - integral: the values are counts, so the step is at least 1.
    init(covering value: Double, tickCount: Int = 5, integral: Bool = true) {
        guard value > 0, value.isFinite else {
            maximum = 1
            step = integral ? 1 : 0.25
            return
        }
        let rough = value / Double(max(1, tickCount))
        let magnitude = pow(10, floor(log10(rough)))
        let residual = rough / magnitude
        let nice: Double
        if residual <= 1 {
            nice = 1
        } else if residual <= 2 {
            nice = 2
        } else if residual <= 2.5 {
            nice = 2.5
        } else if residual <= 5 {
            nice = 5
        } else {
            nice = 10
        }
        var step = nice * magnitude
        if integral {
            // Counts get whole ticks: 0.5 becomes 1, 2.5 becomes 2.
            step = step < 1 ? 1 : step.rounded(.down)
        }
        self.step = step
        maximum = (value / step).rounded(.up) * step
    }

    /// 0, step, 2·step … maximum.
    var ticks: [Double] {
        let count = Int((maximum / step).rounded())
        return (0...count).map { Double($0) * step }
    }

    /// Decimals a tick label needs (1 for a step of 2.5 or 0.5, 2 for 0.25).
    var fractionDigits: Int {
        var digits = 0
        var scaled = step
        while digits < 3, (scaled - scaled.rounded()).magnitude > 1e-9 {
            scaled *= 10
            digits += 1
        }
        return digits
    }

    /// Position of `value` along an axis `length` long (0 at the start).
    func position(_ value: Double, length: Double) -> Double { maximum > 0 ? min(1, max(0, value / maximum)) * length : 0 }
}
