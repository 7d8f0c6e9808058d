import Basics
import BuildStamp
import Postbacks

#if canImport(Glibc)
    import Glibc
#endif

/// The metrics every Prometheus dashboard expects of any process: `postback_build_info` and the
/// standard `process_*` set (the names and meanings of the official client libraries), read from
/// /proc at scrape time. Kept apart from `ServerMetrics`, which counts what the receiver does.
enum ProcessMetrics {
    static func render(into page: inout MetricsPage) {
        page.family(
            "postback_build_info", .gauge, help: "Always 1; the version and commit labels say which postback build is running."
        ) { $0.sample(["version": BuildInfo.version, "commit": BuildInfo.commit], 1) }
        guard let sample = sample() else { return }
        page.family("process_cpu_seconds_total", .counter, help: "Total user and system CPU time spent in seconds.") {
            $0.sampleSeconds(sample.cpuSeconds)
        }
        page.family("process_resident_memory_bytes", .gauge, help: "Resident memory size in bytes.") {
            $0.sample(sample.residentBytes)
        }
        page.family("process_virtual_memory_bytes", .gauge, help: "Virtual memory size in bytes.") {
            $0.sample(sample.virtualBytes)
        }
        page.family("process_start_time_seconds", .gauge, help: "Start time of the process since unix epoch in seconds.") {
            $0.sampleSeconds(sample.startTimeSeconds)
        }
        if let open = openDescriptors() {
            page.family("process_open_fds", .gauge, help: "Number of open file descriptors.") { $0.sample(open) }
        }
        var limit = rlimit()
        if getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 {
            page.family("process_max_fds", .gauge, help: "Maximum number of open file descriptors.") { $0.sample(limit.rlim_cur) }
        }
    }

    struct Sample {
        var cpuSeconds: Double
        var virtualBytes: UInt64
        var residentBytes: UInt64
        var startTimeSeconds: Double
    }

    /// From /proc/self/stat (fields per proc(5)) and the boot time in /proc/stat.
    static func sample() -> Sample? {
        guard let stat = try? FileBytes.readText(path: "/proc/self/stat", limit: 1 << 16),
            let close = stat.lastIndex(of: ")")
        else { return nil }
        // After "pid (comm) ", fields start at 3 (state); comm may hold spaces, hence the last ")".
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        func field(_ number: Int) -> Double? { fields.count > number - 3 ? Double(fields[number - 3]) : nil }
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        let pageSize = Double(sysconf(Int32(_SC_PAGESIZE)))
        guard ticks > 0, let user = field(14), let system = field(15), let start = field(22),
            let virtual = field(23), let resident = field(24), let boot = bootTime()
        else { return nil }
        return Sample(
            cpuSeconds: (user + system) / ticks, virtualBytes: UInt64(virtual), residentBytes: UInt64(resident * pageSize),
            startTimeSeconds: boot + start / ticks)
    }

    private static func bootTime() -> Double? {
        guard let text = try? FileBytes.readText(path: "/proc/stat", limit: 1 << 20) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("btime ") {
            return Double(line.dropFirst(6).trimmingPrefixSpaces())
        }
        return nil
    }

    private static func openDescriptors() -> Int? {
        guard let directory = opendir("/proc/self/fd") else { return nil }
        defer { closedir(directory) }
        var count = 0
        while let entry = readdir(directory) {
            let first = withUnsafeBytes(of: entry.pointee.d_name) { $0[0] }
            if first != UInt8(ascii: ".") { count += 1 }
        }
        return count - 1  // the descriptor opendir itself holds
    }
}

extension MetricsPage.Family {
    /// Whole seconds as an integer (`12`), others as Swift prints a `Double`.
    fileprivate mutating func sampleSeconds(_ value: Double) {
        if value == value.rounded() && abs(value) < 1e15 { sample(Int64(value)) } else { sample(value) }
    }
}

extension Substring {
    fileprivate func trimmingPrefixSpaces() -> Substring { drop(while: { $0 == " " }) }
}
