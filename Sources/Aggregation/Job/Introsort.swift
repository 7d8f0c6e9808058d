/// An in-place introsort (quicksort with median-of-three pivots, insertion sort for short runs, and
/// heapsort when recursion gets too deep), for the dedup entries of a bucket. Not stable. Written
/// out because `sort(by:)` is a stable merge sort that copies the 40-byte entries around, which
/// dominated phase two in profiles.
enum Introsort {
    @inline(__always)
    static func sort<T>(_ buffer: UnsafeMutableBufferPointer<T>, by precedes: (T, T) -> Bool) {
        guard let base = buffer.baseAddress, buffer.count > 1 else { return }
        quicksort(base, 0, buffer.count - 1, depth: 2 * (Int.bitWidth - buffer.count.leadingZeroBitCount), precedes)
    }

    private static func quicksort<T>(
        _ a: UnsafeMutablePointer<T>, _ low: Int, _ high: Int, depth: Int, _ precedes: (T, T) -> Bool
    ) {
        var low = low
        var high = high
        var depth = depth
        while high - low > 16 {
            if depth == 0 {
                heapsort(a + low, high - low + 1, precedes)
                return
            }
            depth -= 1
            let middle = low + (high - low) / 2
            if precedes(a[middle], a[low]) { exchange(a, middle, low) }
            if precedes(a[high], a[low]) { exchange(a, high, low) }
            if precedes(a[high], a[middle]) { exchange(a, high, middle) }
            let pivot = a[middle]
            var i = low
            var j = high
            while i <= j {
                while precedes(a[i], pivot) { i += 1 }
                while precedes(pivot, a[j]) { j -= 1 }
                if i <= j {
                    exchange(a, i, j)
                    i += 1
                    j -= 1
                }
            }
            // Recurse into the smaller side, loop on the larger: the stack stays logarithmic.
            if j - low < high - i {
                if low < j { quicksort(a, low, j, depth: depth, precedes) }
                low = i
            } else {
                if i < high { quicksort(a, i, high, depth: depth, precedes) }
                high = j
            }
        }
        if low < high {
            for index in (low + 1)...high {
                let value = a[index]
                var position = index - 1
                while position >= low && precedes(value, a[position]) {
                    a[position + 1] = a[position]
                    position -= 1
                }
                a[position + 1] = value
            }
        }
    }

    private static func heapsort<T>(_ a: UnsafeMutablePointer<T>, _ count: Int, _ precedes: (T, T) -> Bool) {
        func siftDown(_ start: Int, _ end: Int) {
            var root = start
            while 2 * root + 1 < end {
                var child = 2 * root + 1
                if child + 1 < end && precedes(a[child], a[child + 1]) { child += 1 }
                guard precedes(a[root], a[child]) else { return }
                exchange(a, root, child)
                root = child
            }
        }
        for start in stride(from: count / 2 - 1, through: 0, by: -1) { siftDown(start, count) }
        for end in stride(from: count - 1, to: 0, by: -1) {
            exchange(a, 0, end)
            siftDown(0, end)
        }
    }

    @inline(__always)
    private static func exchange<T>(_ a: UnsafeMutablePointer<T>, _ i: Int, _ j: Int) {
        let value = a[i]
        a[i] = a[j]
        a[j] = value
    }
}
