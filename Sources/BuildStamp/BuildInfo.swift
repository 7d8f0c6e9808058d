/// What every part says it is (`postback --version`, `/metrics`' `postback_build_info`, the report's
/// footer, the manifests' `tool`), in one place: the release, and the commit and date the build
/// was made from (`BuildStamp.swift`, written before every build by scripts/build-stamp).
package enum BuildInfo {
    /// The release.
    package static let version = "0.2.0"

    /// `0.2.0 (a1b2c3d, 2026-12-04)`: tells two builds apart.
    package static var description: String { "\(version) (\(commit), \(date))" }
}
