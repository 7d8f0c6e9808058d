import Foundation

/// How large a test that exists for scale may be on this run. `scripts/sanitizers` sets
/// `POSTBACK_TEST_SANITIZER`: a sanitizer build runs 5–20 times slower on a loaded 2-core machine,
/// and what it looks for (memory and thread errors) shows at a tenth of the size, so such a test
/// runs smaller there and at full size everywhere else.
package enum TestScale {
    package static let underSanitizer = ProcessInfo.processInfo.environment["POSTBACK_TEST_SANITIZER"] != nil

    // The suites that drive Chromium are disabled under a sanitizer: the browser is not built with
    // it, the report code they load runs under it in the other ReportingTests suites, and each page
    // is a browser start of several CPU-seconds that would be paid twice more.

    /// `full` normally, a tenth of it (at least `minimum`) under a sanitizer.
    package static func count(_ full: Int, minimum: Int = 1) -> Int {
        underSanitizer ? max(minimum, full / 10) : full
    }
}
