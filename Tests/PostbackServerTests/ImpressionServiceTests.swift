import Basics
import Foundation
import Locking
import PostbackClient
import PostbackCrypto
import PostbackServer
import Postbacks
import TestSupport
import Testing

@testable import PostbackCLI

/// The signing service (`signing_listen`, `POST /impressions/sign`) and Safari's web-ad endpoint
/// (`POST /.well-known/skadnetwork/get-signed-payload`), on a real receiver on loopback; every
/// signature in an answer is checked with the public key (`ImpressionVerifier`, and by Python's
/// `cryptography` in `pythonVerifiesTheServicesSignatures`); scripts/impressions-differential's
/// service phase does the same at volume.
@Suite struct ImpressionServiceTests {
    static let skan =
        #"{"version":"3.0","ad-network-id":"example123.skadnetwork","campaign-id":42,"itunes-item-id":525463029,"nonce":"68483EF6-0934-4E29-A4A8-C1CBB0F8C2C7","source-app-id":0,"fidelity-type":0,"timestamp":1594406341000}"#
    static let aak =
        #"{"impression-identifier":"7aa9f8cc-5689-4c02-b963-22ca22136015","publisher-item-identifier":0,"impression-type":"app-impression","ad-network-identifier":"example.adattributionkit","source-identifier":5239,"timestamp":1679790422446,"advertised-item-identifier":1108187390}"#
    /// Apple's link example's `attributionSourceNonce`, and the UUID it encodes.
    static let linkNonce = "t8naKxXHTzuTJhNfljADPQ"
    static let webAd =
        #"{"version":"4.0","ad-network-id":"example123.skadnetwork","source-identifier":3120,"itunes-item-id":525463029,"nonce":"b7c9da2b-15c7-4f3b-9326-135f9630033d","source-domain":"example.com","fidelity-type":1,"timestamp":1680000000000}"#

    struct Fixture {
        let server: TestServer
        let current: ECDSAPrivateKey
        let previous: ECDSAPrivateKey
        let directory: TemporaryDirectory
        var signingBase: String { "http://127.0.0.1:\(server.server.signingPort!)" }

        func verifier(_ key: ECDSAPrivateKey) -> ImpressionVerifier {
            ImpressionVerifier(keys: [ImpressionKey(name: "key", key: key.publicKey)])
        }

        func sign(_ body: String, key: String? = nil, to base: String? = nil) throws -> HTTPResponse {
            try HTTPClient().perform(
                method: "POST", url: (base ?? signingBase) + "/impressions/sign", body: Array(body.utf8),
                headers: key.map { ["Signing-Key: \($0)"] } ?? [])
        }

        func webAdPayload(_ body: String) throws -> HTTPResponse {
            try server.post(Array(body.utf8), to: server.base + "/.well-known/skadnetwork/get-signed-payload")
        }
    }

    static func start() throws -> Fixture {
        let directory = TemporaryDirectory("impression-service")
        try directory.write(webAd + "\n", to: "web-ads.jsonl")
        let current = try ECDSAPrivateKey(generatingOn: .p256)
        let previous = try ECDSAPrivateKey(generatingOn: .p256)
        let server = try TestServer { configuration in
            configuration.signing.listen = "127.0.0.1:0"
            configuration.signing.loadedKeys = [
                ImpressionSigningKey(kid: "2026-12", signer: try! ImpressionSigner(key: current)),
                ImpressionSigningKey(kid: "2026-06", signer: try! ImpressionSigner(key: previous)),
            ]
            configuration.signing.webAdsPath = directory.path + "/web-ads.jsonl"
            configuration.signing.webAdRatePerClient = 0  // these tests ask often from one address; the budget has its own
        }
        return Fixture(server: server, current: current, previous: previous, directory: directory)
    }

    @Test func signsOneImpressionAndABatchWithTheChosenKey() throws {
        let fixture = try Self.start()
        defer { fixture.server.stop() }

        let one = try fixture.sign(Self.skan)
        #expect(one.status == 200, "\(one.text)")
        #expect(one.text.contains("\"nonce\":\"68483ef6-0934-4e29-a4a8-c1cbb0f8c2c7\""), "the nonce as signed")
        #expect(fixture.verifier(fixture.current).verify(Array(one.body.dropLast())).isVerified, "\(one.text)")

        let batch = try fixture.sign(Self.skan + "\n\n" + Self.aak + "\r\n", key: "2026-06")
        #expect(batch.status == 200)
        let lines = batch.text.split(separator: "\n")
        try #require(lines.count == 2, "\(batch.text)")
        for line in lines {
            #expect(fixture.verifier(fixture.previous).verify(Array(line.utf8)).isVerified, "\(line)")
            #expect(!fixture.verifier(fixture.current).verify(Array(line.utf8)).isVerified, "signed by the other key")
        }
        #expect(lines[1].contains("\"jws\":\"eyJ"))
        #expect(try fixture.server.metric(#"postback_impressions_signed_total{kind="aak"}"#) == 1)
        #expect(try fixture.server.metric(#"postback_impressions_signed_total{kind="view-through"}"#) == 2)
    }

    /// Python's `cryptography` (the test venv) checks the service's answers on its own: the signed
    /// string rebuilt from Apple's orders, the JWS signing input from its first two segments.
    static let pythonVerifier = #"""
        import base64, json, sys
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
        ORDER = {
            "3.0": "version ad-network-id campaign-id itunes-item-id nonce source-app-id fidelity-type timestamp",
            "4.0": "version ad-network-id source-identifier itunes-item-id nonce source-app-id fidelity-type timestamp",
            "web": "version ad-network-id source-identifier itunes-item-id nonce source-domain fidelity-type timestamp",
        }
        key = serialization.load_pem_public_key(sys.argv[1].encode())
        def b64url(text):
            return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        verified = 0
        for text in sys.argv[2:]:
            line = json.loads(text)
            if "jws" in line:
                header, payload, signature = line["jws"].split(".")
                raw = b64url(signature)
                der = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
                key.verify(der, (header + "." + payload).encode(), ec.ECDSA(hashes.SHA256()))
            else:
                order = ORDER["web" if "source-domain" in line else line["version"]].split()
                message = "\u2063".join(str(line[name]) for name in order)
                key.verify(base64.b64decode(line["signature"]), message.encode(), ec.ECDSA(hashes.SHA256()))
            verified += 1
        print(verified)
        """#

    @Test func pythonVerifiesTheServicesSignatures() throws {
        let fixture = try Self.start()
        defer { fixture.server.stop() }
        let webAd = Self.webAd.replacingOccurrences(
            of: "b7c9da2b-15c7-4f3b-9326-135f9630033d", with: "0CE3D2C3-0E15-4C7A-9F0B-6A1A2B3C4D5E")
        let batch = try fixture.sign([Self.skan, Self.aak, webAd].joined(separator: "\n"), key: "2026-06")
        #expect(batch.status == 200)
        let lines = batch.text.split(separator: "\n").map(String.init)
        try #require(lines.count == 3, "\(batch.text)")
        let result = try VenvPython.run(
            script: Self.pythonVerifier, arguments: [fixture.previous.publicKey.pemRepresentation] + lines)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "3")
        // With the other key's public half, Python refuses them.
        let refused = try VenvPython.run(
            script: Self.pythonVerifier, arguments: [fixture.current.publicKey.pemRepresentation] + lines)
        #expect(refused.status != 0 && refused.stderr.contains("InvalidSignature"), "\(refused.stderr)")
    }

    @Test func refusesWhatIsNotAnImpressionWithTheReason() throws {
        let fixture = try Self.start()
        defer { fixture.server.stop() }

        let seconds = Self.skan.replacingOccurrences(of: "1594406341000", with: "1594406341")
        let one = try fixture.sign(seconds)
        #expect(one.status == 400)
        #expect(one.text.contains("is not UNIX time in milliseconds"), "\(one.text)")

        // In a batch, the refused line is answered in its place; the others are signed.
        let batch = try fixture.sign([Self.skan, seconds, "not json"].joined(separator: "\n"))
        #expect(batch.status == 200)
        let lines = batch.text.split(separator: "\n").map(String.init)
        try #require(lines.count == 3, "\(batch.text)")
        #expect(fixture.verifier(fixture.current).verify(Array(lines[0].utf8)).isVerified)
        #expect(
            lines[1].hasPrefix(#"{"line":2,"status":"malformed","error":"timestamp 1594406341 is not UNIX time"#), "\(lines[1])")
        #expect(lines[2].hasPrefix(#"{"line":3,"status":"malformed","error":"not valid JSON"#), "\(lines[2])")

        let unknownKey = try fixture.sign(Self.skan, key: "2020-01")
        #expect(unknownKey.status == 400)
        #expect(unknownKey.text.contains("known: 2026-12, 2026-06"))
        #expect(try fixture.sign("\n \n").status == 400)
        #expect(try fixture.server.metric(#"postback_impressions_refused_total{reason="unknown-key"}"#) == 1)
        #expect(try fixture.server.metric(#"postback_impressions_refused_total{reason="malformed"}"#) == 4)
        // Nothing of the keys in the logs.
        let pem = fixture.current.pemRepresentation
        let keyLine = String(pem.split(separator: "\n")[1])
        #expect(!fixture.server.logs.all.contains { $0.contains(keyLine) })
    }

    @Test func theSigningRouteIsOnlyOnThePrivateListener() throws {
        let fixture = try Self.start()
        defer { fixture.server.stop() }
        // On the public listener the signing route does not exist.
        #expect(try fixture.sign(Self.skan, to: fixture.server.base).status == 404)
        // On the private one, only the signing route and /livez.
        #expect(try HTTPClient().get(fixture.signingBase + "/livez").status == 200)
        #expect(try HTTPClient().get(fixture.signingBase + "/metrics").status == 404)
        let postback = try HTTPClient().post(
            fixture.signingBase + "/.well-known/skadnetwork/report-attribution/", body: Array(Self.skan.utf8))
        #expect(postback.status == 404)
        #expect(try HTTPClient().get(fixture.signingBase + "/impressions/sign").status == 405)
    }

    @Test func webAdPayloadAnswersOnlyForRegisteredAds() throws {
        let fixture = try Self.start()
        defer { fixture.server.stop() }
        #expect(WebAdRequest.uuid(base64URL: Self.linkNonce) == "b7c9da2b-15c7-4f3b-9326-135f9630033d")
        #expect(WebAdRequest.uuid(base64URL: Self.linkNonce + "==") == "b7c9da2b-15c7-4f3b-9326-135f9630033d")
        #expect(WebAdRequest.base64URL(uuid: "B7C9DA2B-15C7-4F3B-9326-135F9630033D") == Self.linkNonce)

        func request(nonce: String, domain: String = "example.com") -> String {
            #"{"source_domain":"\#(domain)","source_engagement_type":"click_to_App_Store","source_nonce":"\#(nonce)","version":"4.0"}"#
        }
        let answer = try fixture.webAdPayload(request(nonce: Self.linkNonce))
        #expect(answer.status == 200, "\(answer.text)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(answer.body)) as? [String: Any])
        #expect(
            Set(object.keys) == [
                "version", "ad_network_id", "source_identifier", "itunes_item_id", "nonce", "source_domain", "timestamp",
                "signature",
            ])
        #expect(object["nonce"] as? String == "b7c9da2b-15c7-4f3b-9326-135f9630033d")
        // The device rebuilds the signed string from the answer: the same check, in the CLI's names.
        let rebuilt =
            #"{"version":"\#(object["version"]!)","ad-network-id":"\#(object["ad_network_id"]!)","source-identifier":\#(object["source_identifier"]!),"itunes-item-id":\#(object["itunes_item_id"]!),"nonce":"\#(object["nonce"]!)","source-domain":"\#(object["source_domain"]!)","fidelity-type":1,"timestamp":\#(object["timestamp"]!),"signature":"\#(object["signature"]!)"}"#
        let verdict = fixture.verifier(fixture.current).verify(Array(rebuilt.utf8))
        #expect(verdict.isVerified, "\(verdict.reason ?? "")")
        #expect(verdict.kind == .webAd)

        // Another nonce, or the registered one from another domain: not registered.
        let other = try #require(WebAdRequest.base64URL(uuid: "00000000-0000-4000-8000-000000000000"))
        #expect(try fixture.webAdPayload(request(nonce: other)).status == 404)
        #expect(try fixture.webAdPayload(request(nonce: Self.linkNonce, domain: "elsewhere.example")).status == 404)
        #expect(try fixture.webAdPayload(request(nonce: "68483ef6-0934-4e29-a4a8-c1cbb0f8c2c7")).status == 400)
        #expect(try fixture.webAdPayload(#"{"source_nonce":1}"#).status == 400)
        #expect(try fixture.server.metric(#"postback_impressions_refused_total{reason="web-ad-not-registered"}"#) == 2)
        #expect(try fixture.server.metric("postback_web_ads_registered") == 1)

        // The ad server registers another ad (a new file renamed over the old): answered once re-read.
        let added = Self.webAd.replacingOccurrences(
            of: "b7c9da2b-15c7-4f3b-9326-135f9630033d", with: "00000000-0000-4000-8000-000000000000")
        try fixture.directory.write(Self.webAd + "\n" + added + "\n", to: "web-ads.next")
        #expect(rename(fixture.directory.path + "/web-ads.next", fixture.directory.path + "/web-ads.jsonl") == 0)
        #expect(try eventually { try fixture.webAdPayload(request(nonce: other)).status == 200 })
        // A broken file keeps the ads read before.
        try fixture.directory.write("{\"version\":\"4.0\"}\n", to: "web-ads.next")
        #expect(rename(fixture.directory.path + "/web-ads.next", fixture.directory.path + "/web-ads.jsonl") == 0)
        // The loader thread finds the bad file; requests keep being answered from the ads read before.
        let statuses = Locked<Set<Int>>([])
        let logged = try eventually {
            let status = try fixture.webAdPayload(request(nonce: other)).status
            statuses.withLock { _ = $0.insert(status) }
            return fixture.server.logs.contains("web ads file not re-read")
        }
        #expect(logged)
        #expect(statuses.withLock { $0 } == [200], "the ads read before answer throughout")
    }

    @Test func withoutWebAdsThePathIsNotServed() throws {
        let server = try TestServer()
        defer { server.stop() }
        let answer = try server.post(Array("{}".utf8), to: server.base + "/.well-known/skadnetwork/get-signed-payload")
        #expect(answer.status == 404)
    }

    @Test func configurationKeepsTheServicePrivate() throws {
        func parse(_ text: String) -> String? {
            do {
                _ = try ServerConfiguration.parse(Array(text.utf8))
                return nil
            } catch { return error.description }
        }
        let keys = #""signing_keys": [{"kid": "a", "path": "a.pem"}]"#
        #expect(parse(#"{"signing_listen": "127.0.0.1:9190", \#(keys)}"#) == nil)
        #expect(parse(#"{"signing_listen": "10.1.2.3:9190", \#(keys)}"#) == nil)
        #expect(parse(#"{"signing_listen": "0.0.0.0:9190", \#(keys)}"#)?.contains("loopback or private address") == true)
        #expect(parse(#"{"signing_listen": "8.8.8.8:9190", \#(keys)}"#)?.contains("loopback or private address") == true)
        #expect(parse(#"{"signing_listen": "localhost:9190", \#(keys)}"#)?.contains("loopback or private address") == true)
        // Link-local IPv6 with its interface, as the docs allow; without one, or a scope elsewhere: the remedy.
        #expect(parse(#"{"signing_listen": "[fe80::1%lo]:9190", \#(keys)}"#) == nil)
        #expect(parse(#"{"signing_listen": "[fe80::1]:9190", \#(keys)}"#)?.contains("name its interface") == true)
        #expect(parse(#"{"signing_listen": "[fd00::1%lo]:9190", \#(keys)}"#)?.contains("only a link-local") == true)
        #expect(parse(#"{"signing_listen": "[2001:db8::1%lo]:9190", \#(keys)}"#)?.contains("loopback or private") == true)
        #expect(parse(#"{"signing_listen": "127.0.0.1:9190"}"#)?.contains("needs signing_keys") == true)
        #expect(parse(#"{"web_ads": "ads.jsonl"}"#)?.contains("needs signing_keys") == true)
        #expect(
            parse(
                #"{"signing_listen": "127.0.0.1:9190", "signing_keys": [{"kid": "a", "path": "a.pem"}, {"kid": "a", "path": "b.pem"}]}"#
            )?
            .contains("twice") == true)
    }

    @Test func serveRefusesAGroupReadableKeyNamingTheRemedy() throws {
        let directory = TemporaryDirectory("impression-service-key")
        let key = try ECDSAPrivateKey(generatingOn: .p256)
        try directory.write(key.pemRepresentation, to: "network.pem")
        chmod(directory.path + "/network.pem", 0o640)
        try directory.write(
            #"{"listen": "127.0.0.1:0", "data_dir": "data", "signing_listen": "127.0.0.1:0", "signing_keys": [{"kid": "k1", "path": "network.pem"}]}"#,
            to: "config.json")
        let errors = MemorySink(isTerminal: true)
        let status = ServeCommand.run(
            ["--config", directory.path + "/config.json"], io: CommandIO(standardOutput: MemorySink(), standardError: errors)
        ) { _ in "test" }
        #expect(status == .usageOrIOError)
        #expect(errors.text.contains("readable by its group or others (mode 640)"), "\(errors.text)")
        // A config that names signing keys, writable by others: refused before any key is read.
        chmod(directory.path + "/config.json", 0o666)
        let configErrors = MemorySink(isTerminal: true)
        let refusedConfig = ServeCommand.run(
            ["--config", directory.path + "/config.json"],
            io: CommandIO(standardOutput: MemorySink(), standardError: configErrors)
        ) { _ in "test" }
        #expect(refusedConfig == .usageOrIOError)
        #expect(
            configErrors.text.contains("config.json is writable by its group or others (mode 666)"), "\(configErrors.text)")
        chmod(directory.path + "/config.json", 0o644)
        #expect(errors.text.contains("chmod 600 \(directory.path)/network.pem"), "\(errors.text)")
        #expect(!errors.text.contains(String(key.pemRepresentation.split(separator: "\n")[1])))

        // Owner-only, it starts, and the service signs with it.
        chmod(directory.path + "/network.pem", 0o600)
        let answer = Locked<String>("")
        let started = ServeCommand.run(
            ["--config", directory.path + "/config.json"],
            io: CommandIO(standardOutput: MemorySink(), standardError: MemorySink())
        ) { server in
            let reply = try? HTTPClient().post(
                "http://127.0.0.1:\(server.signingPort!)/impressions/sign", body: Array(Self.skan.utf8))
            answer.withLock { $0 = reply?.text ?? "" }
            return "test"
        }
        #expect(started == .success)
        let signed = answer.withLock { $0 }
        #expect(
            ImpressionVerifier(keys: [ImpressionKey(name: "k1", key: key.publicKey)]).verify(Array(signed.dropLast().utf8))
                .isVerified, "\(signed)")
    }
}
