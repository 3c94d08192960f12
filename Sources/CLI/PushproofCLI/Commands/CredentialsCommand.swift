import Crypto
import Foundation
import JSON

/// `pushproof credentials`: fresh test credentials and a gateway configuration that trusts
/// them, so strict auth can be tried without Apple or Google accounts.
struct CredentialsCommand: Subcommand {
    static let spec = CommandSpec(
        name: "credentials",
        abstract: "Write a test APNs key and provider certificate, a Google service account, and a gateway config that trusts them.",
        options: [
            .value("out", "DIR", "Where to write the files (created if missing).", default: "pushproof-credentials"),
            .value("gateway", "URL", "The gateway's base URL: the service account's token_uri is URL/token.",
                   default: "https://127.0.0.1:8443"),
            .value("key-id", "ID", "APNs key id (JWT kid).", default: "ABC123DEFG"),
            .value("team-id", "ID", "APNs team id (JWT iss).", default: "TEAM123456"),
            .value("project", "ID", "FCM project id.", default: "poolse-example"),
            .value("bundle-id", "ID", "An app's bundle id, allowed as APNs topic (give one per app: poolse, a Yama tenant, ...).",
                   default: "com.example.loop", repeatable: true),
        ],
        discussion: """
        Writes DIR/apns-key.p8 (PKCS#8 P-256, as Apple issues), DIR/apns-key.pub.pem,
        DIR/service-account.json (as Google issues, token_uri pointing at the gateway) and
        DIR/gateway.json (for 'pushproof serve --config DIR/gateway.json').
        For certificate-based APNs auth it also writes DIR/apns-ca.pem (a test authority the
        gateway trusts, standing in for Apple's) and DIR/apns-cert.pem with DIR/apns-cert-key.pem:
        a provider certificate for the first bundle id (subject UID, both environments, topics
        <id>, <id>.voip and <id>.complication), e.g. curl --cert apns-cert.pem --key apns-cert-key.pem.
        """)

    let directory: String
    let gateway: String
    let keyID: String
    let teamID: String
    let project: String
    let bundleIDs: [String]

    init(_ arguments: ParsedArguments) throws {
        directory = arguments.value("out") ?? "pushproof-credentials"
        gateway = (arguments.value("gateway") ?? "https://127.0.0.1:8443").trimmingCharacters(in: CharacterSet(charactersIn: "/"))
        keyID = arguments.value("key-id") ?? "ABC123DEFG"
        teamID = arguments.value("team-id") ?? "TEAM123456"
        project = arguments.value("project") ?? "poolse-example"
        bundleIDs = arguments.all("bundle-id").isEmpty ? ["com.example.loop"] : arguments.all("bundle-id")
        guard keyID.count == 10, teamID.count == 10 else {
            throw UsageError(message: "--key-id and --team-id are 10 characters, as Apple issues them")
        }
        guard gateway.hasPrefix("http://") || gateway.hasPrefix("https://") else {
            throw UsageError(message: "--gateway is a URL like https://127.0.0.1:8443")
        }
    }

    func run() async -> Int32 {
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let credentials = try TestCredentialFiles.make(gateway: gateway, keyID: keyID, teamID: teamID, project: project,
                                                           bundleIDs: bundleIDs)
            for file in credentials.files { try write(file.contents, file.name, private: file.isPrivate) }
            let app = bundleIDs[0]
            print("""
            wrote \(directory)/apns-key.p8 (key id \(keyID), team \(teamID)), \(directory)/service-account.json \
            (token_uri \(gateway)/token), \(directory)/apns-cert.pem and apns-cert-key.pem (certificate auth for \(app), \
            issued by \(directory)/apns-ca.pem), \(directory)/gateway.json
            next: pushproof serve --config \(directory)/gateway.json
            """)
            return ExitCode.success
        } catch {
            printError("pushproof credentials: \(error)")
            return ExitCode.ioError
        }
    }

    private func write(_ text: String, _ name: String, private isPrivate: Bool = false) throws {
        let path = directory + "/" + name
        guard FileManager.default.createFile(atPath: path, contents: Data(text.utf8),
                                             attributes: [.posixPermissions: isPrivate ? 0o600 : 0o644]) else {
            throw FileError(path: path, reason: "cannot write")
        }
    }
}

/// The files `pushproof credentials` writes (and `k8s render` puts in a Secret and a ConfigMap):
/// a test APNs key, a Google service account whose token_uri is the gateway, a provider certificate
/// and its authority, and gateway.json, which trusts them all by these file names.
struct TestCredentialFiles {
    var files: [(name: String, contents: String, isPrivate: Bool)]

    static func make(gateway: String, keyID: String, teamID: String, project: String, bundleIDs: [String]) throws -> TestCredentialFiles {
        let credentials = try TestCredentials.generate(fcmProject: project, tokenURI: gateway + "/token")
        let (apnsKey, serviceAccountJSON) = (credentials.apnsKey, credentials.serviceAccountJSON)
        let authority = try ProviderCertificateIssuer.makeAuthority()
        let app = bundleIDs[0]
        let providerCertificate = try ProviderCertificateIssuer.issue(
            bundleID: app, topics: [app, app + ".voip", app + ".complication"],
            authorityCertificatePEM: authority.certificatePEM, authorityKeyPEM: authority.privateKeyPEM)
        let config: JSONValue = [
            "apns": [
                "keys": [["key_id": .string(keyID), "team_id": .string(teamID), "public_key_file": "apns-key.pub.pem"]],
                "bundle_ids": .array(bundleIDs.map { .string($0) }),
                "certificate_authorities": [["file": "apns-ca.pem"]],
            ],
            "fcm": [
                "project_id": .string(project),
                "token_url": .string(gateway + "/token"),
                "service_accounts": [["service_account_file": "service-account.json"]],
            ],
        ]
        return TestCredentialFiles(files: [
            ("apns-key.p8", try apnsKey.pkcs8PEM, true),
            ("apns-key.pub.pem", try apnsKey.publicKey.spkiPEM, false),
            ("service-account.json", serviceAccountJSON, true),
            ("apns-ca.pem", authority.certificatePEM, false),
            ("apns-cert.pem", providerCertificate.certificatePEM, false),
            ("apns-cert-key.pem", providerCertificate.privateKeyPEM, true),
            ("gateway.json", config.serialized() + "\n", false),
        ])
    }
}
