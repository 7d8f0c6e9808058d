/// Which Apple framework produced a postback.
package enum PostbackProtocol: String, Sendable, CaseIterable, Codable {
    case skadnetwork
    case adattributionkit
}

/// SKAdNetwork 4 / AdAttributionKit coarse conversion value. Apple gives the three levels no meaning;
/// each app's schema does.
package enum CoarseConversionValue: String, Sendable, CaseIterable, Codable {
    case low, medium, high
}

/// What kind of conversion a postback reports.
package enum ConversionType: String, Sendable, CaseIterable, Codable {
    case download
    case redownload
    /// AdAttributionKit only. Apple's payloads spell it `re-engagement`; its prose once says
    /// `reengagement`. Both are accepted on input; this spelling is what we write.
    case reengagement = "re-engagement"
}

/// How the user met the ad: SKAdNetwork `fidelity-type` 0/1, AdAttributionKit `ad-interaction-type`.
package enum AdInteraction: String, Sendable, CaseIterable, Codable {
    case view, click
}

/// Whether a postback counts in production numbers.
package enum PostbackEnvironment: String, Sendable, CaseIterable, Codable {
    /// Signed with Apple's production key and not a test-mode postback.
    case production
    /// Signed with an Apple development key or a user-supplied test key, or a SKAdNetwork test-mode
    /// postback (`source-app-id` 0). Never mixed into production aggregates.
    case development
}
