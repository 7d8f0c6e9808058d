/// The endpoints. The raw value names the route in spool records, metrics and logs.
package enum Route: String, Sendable, CaseIterable {
    /// `POST /.well-known/skadnetwork/report-attribution/`: SKAdNetwork postbacks (the ad network's
    /// endpoint, or the advertiser's developer copy).
    case skadnetwork = "skadnetwork-developer-copy"
    /// `POST /.well-known/appattribution/report-attribution/`: AdAttributionKit postbacks.
    case appAttribution = "appattribution-developer-copy"
    /// The configured `ad_network_path`.
    case adNetwork = "ad-network"
    /// `POST /.well-known/skadnetwork/get-signed-payload`: Safari asks for a registered web ad's
    /// signed payload (public listener, with `web_ads` only).
    case webAdPayload = "web-ad-payload"
    /// `POST /impressions/sign`: the signing service (the private `signing_listen` listener only).
    case impressionSigning = "impression-signing"
    case livez
    case readyz
    case metrics
    /// Any other path (one label, so scanners cannot blow up the metrics).
    case unknown

    static let skadnetworkPath = "/.well-known/skadnetwork/report-attribution"
    static let appAttributionPath = "/.well-known/appattribution/report-attribution"
    static let webAdPayloadPath = "/.well-known/skadnetwork/get-signed-payload"
    static let impressionSigningPath = "/impressions/sign"

    /// Which listener a request came in on, and what it serves.
    enum Listener: Sendable {
        /// `listen`: the postback routes, the operational ones, and the web-ad payloads when `web_ads` is set.
        case receiver(adNetworkPath: String?, webAds: Bool)
        /// `signing_listen`: only the signing service and `/livez`.
        case signing
    }

    /// Postbacks are POSTed here.
    package var receivesPostbacks: Bool { self == .skadnetwork || self == .appAttribution || self == .adNetwork }

    /// AdAttributionKit postbacks can come here. Apple documents retries for them after a `500` only
    /// ("If the device receives a 500 status code, it attempts to send the postback up to nine times
    /// over a maximum of 9 days"), so every "try again later" answer here is `500` (spec §12).
    var mayCarryAdAttributionKit: Bool { self == .appAttribution || self == .adNetwork }

    /// Answered by `ImpressionService` once the body is in (POSTed, like postbacks).
    var signsImpressions: Bool { self == .webAdPayload || self == .impressionSigning }

    /// The methods a route answers; anything else gets 405 with this in `Allow`.
    var allowedMethods: String { receivesPostbacks || signsImpressions ? "POST" : "GET, HEAD" }

    func allows(method: String) -> Bool {
        receivesPostbacks || signsImpressions ? method == "POST" : (method == "GET" || method == "HEAD")
    }

    /// The route for a request path (without query) on `listener`, with or without a trailing slash.
    init(path: String, listener: Listener) {
        let normalized = Route.normalize(path)
        switch listener {
        case .signing:
            self =
                normalized == Route.impressionSigningPath ? .impressionSigning : normalized == "/livez" ? .livez : .unknown
        case .receiver(let adNetworkPath, let webAds):
            self =
                webAds && normalized == Route.webAdPayloadPath ? .webAdPayload : Route(path: path, adNetworkPath: adNetworkPath)
        }
    }

    /// The receiver's route for a request path (without query), with or without a trailing slash.
    init(path: String, adNetworkPath: String?) {
        let normalized = Route.normalize(path)
        if let builtIn = Route.builtIn(normalized) {
            self = builtIn
        } else if let adNetworkPath, normalized == adNetworkPath {
            self = .adNetwork
        } else {
            self = .unknown
        }
    }

    static func builtIn(_ normalizedPath: String) -> Route? {
        switch normalizedPath {
        case skadnetworkPath: return .skadnetwork
        case appAttributionPath: return .appAttribution
        // Reserved even without `web_ads`, so `ad_network_path` cannot take it.
        case webAdPayloadPath: return .unknown
        case "/livez": return .livez
        case "/readyz": return .readyz
        case "/metrics": return .metrics
        default: return nil
        }
    }

    /// Drops one trailing slash (except from `/`).
    static func normalize(_ path: String) -> String {
        // An ASCII path (the usual one) is decided on its bytes: counting characters cost some 4,000
        // instructions a request. There a final "/" byte is a character of its own; elsewhere a
        // Prepend mark can join it into one character that is not "/", so characters decide.
        guard path.utf8.last == UInt8(ascii: "/"), path.utf8.count > 1 else { return path }
        if path.utf8.allSatisfy({ $0 < 0x80 }) { return String(path.utf8.dropLast())! }
        return path.count > 1 && path.hasSuffix("/") ? String(path.dropLast()) : path
    }
}
