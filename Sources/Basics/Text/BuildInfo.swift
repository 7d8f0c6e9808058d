/// The version every part reports (`postback --version`, the report footer, `/metrics`), in one place.
package enum BuildInfo {
    package static let version = "0.1.0"
}
