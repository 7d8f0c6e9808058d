import Basics
import Dispatch
import Locking
package import Postbacks

/// One of the ad network's signing keys, by the name (`kid`) a request picks it with.
package struct ImpressionSigningKey: Sendable {
    package let kid: String
    package let signer: ImpressionSigner

    package init(kid: String, signer: ImpressionSigner) {
        self.kid = kid
        self.signer = signer
    }
}

/// The ad network's side of the receiver (docs/impressions.md): the signing service on the private
/// listener (`POST /impressions/sign`) and the web-ad payloads Safari asks the public listener for
/// (`POST /.well-known/skadnetwork/get-signed-payload`). Both take a complete body and give the
/// reply; the HTTP layer only hands them over (`RequestHandler+Routes`).
final class ImpressionService: Sendable {
    let keys: [ImpressionSigningKey]
    let webAds: WebAdRegistry?
    /// Web-ad payloads per client (`web_ad_rate_per_client`).
    let webAdBudget: SigningBudget
    let metrics = ImpressionServiceMetrics()

    init(keys: [ImpressionSigningKey], webAds: WebAdRegistry?, webAdBudget: SigningBudget = SigningBudget(rate: 0, burst: 1)) {
        precondition(!keys.isEmpty)
        self.keys = keys
        self.webAds = webAds
        self.webAdBudget = webAdBudget
    }

    /// The service `configuration` asks for (nil when it has no `signing_keys`), with its web ads read.
    static func start(configuration: ServerConfiguration, log: ServerLog) throws(ServerError) -> ImpressionService? {
        guard !configuration.signing.loadedKeys.isEmpty else {
            guard configuration.signing.keyPaths.isEmpty else {
                throw ServerError("signing_keys are configured but were not loaded (the CLI reads them)")
            }
            return nil
        }
        let webAds = try configuration.signing.webAdsPath.map { path throws(ServerError) in
            try WebAdRegistry(path: path, limit: configuration.signing.webAdsLimit, log: log)
        }
        return ImpressionService(
            keys: configuration.signing.loadedKeys, webAds: webAds,
            webAdBudget: SigningBudget(
                rate: Double(configuration.signing.webAdRatePerClient), burst: configuration.signing.webAdBurstPerClient))
    }

    /// The request header naming the key (a `kid` of `signing_keys`); without it the first key signs.
    static let keyHeader = "Signing-Key"

    /// A signing request: one impression (one line) is answered with the signed object, or a 400
    /// problem; several lines with JSON Lines in the same order, a refused line as
    /// `{"line": N, "status": …, "error": …}` (200 as long as the body itself could be read).
    func sign(body: [UInt8], keyID: String?) -> HTTPReply {
        let started = DispatchTime.now().uptimeNanoseconds
        defer { metrics.answered(seconds: Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9) }
        guard let key = keyID.map({ kid in keys.first { $0.kid == kid } }) ?? keys.first else {
            metrics.refused.increment(.unknownKey)
            return .problem(
                400, type: "unknown-signing-key", title: "No such signing key",
                detail: "\(Self.keyHeader) names no key of signing_keys (known: \(keys.map(\.kid).joined(separator: ", ")))")
        }
        let lines: [(number: Int, impression: Result<ParsedImpression, PostbackRejection>)]
        do {
            lines = try ImpressionSigningRequest.parse(body)
        } catch {
            metrics.refused.increment(.malformed)
            return Self.refusal(error)
        }
        var json = JSONWriter(reservingCapacity: lines.count * 400)
        for line in lines {
            do {
                let impression = try line.impression.get()
                try key.signer.write(impression, to: &json)
                metrics.signed.increment(impression.kind)
            } catch let rejection as PostbackRejection {
                metrics.refused.increment(.init(rejection))
                guard lines.count > 1 else { return Self.refusal(rejection) }
                json.beginObject()
                json.field("line", line.number)
                json.field("status", rejection.status.rawValue)
                json.field("error", rejection.reason)
                json.endObject()
            } catch {
                // OpenSSL failed to sign: nothing about the key is in the error, but say no more than that.
                metrics.refused.increment(.signingFailed)
                return .problem(500, type: "signing-failed", title: "Signing failed", detail: "the signature could not be made")
            }
            json.endLine()
        }
        return HTTPReply(
            status: 200, contentType: lines.count > 1 ? "application/x-ndjson" : "application/json", body: json.bytes)
    }

    /// Safari's `AdImpressionRequest` for a tapped web ad: the registered ad with that nonce and
    /// domain, signed with the first key, as an `AdImpressionResponse`; 404 for any other; 429 with
    /// `Retry-After` past the client's budget (`client`: its address, one spelling per client).
    func webAdPayload(body: [UInt8], client: String) -> HTTPReply {
        let started = DispatchTime.now().uptimeNanoseconds
        defer { metrics.answered(seconds: Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9) }
        if let wait = webAdBudget.take(client: client) {
            metrics.refused.increment(.overBudget)
            var reply = HTTPReply.problem(
                429, type: "too-many-web-ad-requests", title: "Too many web-ad requests from this client",
                detail: "at most \(Int(webAdBudget.rate)) web-ad payloads a second per client address "
                    + "(web_ad_rate_per_client); retry later")
            reply.headers.append(("Retry-After", String(wait)))
            return reply
        }
        let request: WebAdRequest
        do {
            request = try WebAdRequest(body: body)
        } catch {
            metrics.refused.increment(.malformed)
            return Self.refusal(error)
        }
        guard let webAds, let impression = webAds.impression(nonce: request.nonce),
            impression.sourceDomain == request.sourceDomain.lowercased()
        else {
            metrics.refused.increment(.notRegistered)
            return .problem(
                404, type: "web-ad-not-registered", title: "No such web ad",
                detail: "no registered web ad has this source_nonce and source_domain")
        }
        do {
            let signature = try keys[0].signer.signature(for: impression)
            var json = JSONWriter(reservingCapacity: 512)
            impression.writeWebAdResponse(signature: signature, to: &json)
            json.endLine()
            metrics.signed.increment(.webAd)
            return HTTPReply(status: 200, contentType: "application/json", body: json.bytes)
        } catch {
            metrics.refused.increment(.signingFailed)
            return .problem(500, type: "signing-failed", title: "Signing failed", detail: "the signature could not be made")
        }
    }

    private static func refusal(_ rejection: PostbackRejection) -> HTTPReply {
        .problem(400, type: "not-an-impression", title: "Not an impression", detail: rejection.reason) {
            $0.field("status", rejection.status.rawValue)
        }
    }
}

/// The signing service's metrics (one handle each, `MetricGroup`), on the receiver's `/metrics` when
/// the service is configured.
final class ImpressionServiceMetrics: MetricGroup {
    /// Why an impression or a request was not signed: a closed set.
    enum Refusal: String, ClosedMetricLabel {
        case malformed
        case unsupportedVersion = "unsupported-version"
        case unknownKey = "unknown-key"
        case notRegistered = "web-ad-not-registered"
        case signingFailed = "signing-failed"
        case overBudget = "over-budget"

        init(_ rejection: PostbackRejection) {
            self = rejection.status == .unsupportedVersion ? .unsupportedVersion : .malformed
        }
    }

    let signed = LabeledCounter<ImpressionKind>(
        "postback_impressions_signed_total", labels: ["kind"],
        help: "Impressions signed by the signing service and web-ad payloads, by kind.", series: .every)
    let refused = LabeledCounter<Refusal>(
        "postback_impressions_refused_total", labels: ["reason"],
        help:
            "Impressions or requests the service did not sign, by reason (malformed, unsupported-version, unknown-key, web-ad-not-registered, signing-failed, over-budget).",
        series: .every)
    let duration = Histogram(
        "postback_impression_request_duration_seconds",
        help: "Time from a complete signing or web-ad request to its reply (parsing, signing, writing).",
        upperBounds: [0.0001, 0.00025, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25])

    func answered(seconds: Double) { duration.observe(seconds) }

    /// The handles, then the web ads' families (counts `WebAdRegistry` keeps, read at scrape time).
    func render(webAds: WebAdRegistry.Status?) -> String {
        var page = MetricsPage()
        page.families(of: self)
        if let webAds {
            page.family("postback_web_ads_registered", .gauge, help: "Web ads in service, from the web_ads file as last read.") {
                $0.sample(webAds.registered)
            }
            page.family(
                "postback_web_ads_expired_total", .counter,
                help: "Web ads dropped, the first registered first, to keep at most web_ads_limit."
            ) { $0.sample(webAds.expired) }
            page.family(
                "postback_web_ads_skipped_lines_total", .counter,
                help: "Lines appended to the web_ads file that were not a web ad (or repeated a nonce), skipped."
            ) { $0.sample(webAds.skippedLines) }
        }
        return page.text
    }
}
extension ImpressionKind: ClosedMetricLabel {}
