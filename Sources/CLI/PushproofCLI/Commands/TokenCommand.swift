import Clocks
import Crypto
import Foundation

/// `pushproof token`: prints the credential a sender would put on the wire, for driving the
/// gateway by hand with curl (APNs provider token, or a Google OAuth assertion).
struct TokenCommand: Subcommand {
    static let spec = CommandSpec(
        name: "token",
        abstract: "Print an APNs provider token (ES256 JWT) or a Google OAuth assertion (RS256).",
        positionals: ["apns|fcm-assertion"],
        options: [
            .value("key", "FILE", "apns: the .p8 key (PKCS#8 P-256 PEM)."),
            .value("key-id", "ID", "apns: the 10-character key id (JWT kid)."),
            .value("team-id", "ID", "apns: the 10-character team id (JWT iss)."),
            .value("service-account", "FILE", "fcm-assertion: the service-account JSON."),
            .value("audience", "URL", "fcm-assertion: the assertion's aud.", default: "the file's token_uri"),
            .value("issued-at", "SECONDS", "The iat claim, epoch seconds.", default: "now"),
        ],
        discussion: """
        EXAMPLES:
          pushproof token apns --key apns-key.p8 --key-id ABC123DEFG --team-id DEF123GHIJ
          curl -d "grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&assertion=$(pushproof token fcm-assertion --service-account sa.json)" ...
        """)

    enum Kind { case apns(key: String, keyID: String, teamID: String), fcmAssertion(serviceAccount: String, audience: String?) }
    let kind: Kind
    let issuedAt: Int

    init(_ arguments: ParsedArguments) throws(UsageError) {
        issuedAt = try arguments.int("issued-at", default: Int(SystemClock.wallClockSeconds()), range: 0...Int(Int32.max) * 2)
        switch arguments.positionals[0] {
        case "apns":
            guard let key = arguments.value("key"), let keyID = arguments.value("key-id"), let teamID = arguments.value("team-id") else {
                throw UsageError(message: "apns needs --key, --key-id and --team-id")
            }
            kind = .apns(key: key, keyID: keyID, teamID: teamID)
        case "fcm-assertion":
            guard let file = arguments.value("service-account") else {
                throw UsageError(message: "fcm-assertion needs --service-account")
            }
            kind = .fcmAssertion(serviceAccount: file, audience: arguments.value("audience"))
        case let other:
            throw UsageError(message: "unknown token kind '\(other)' (apns or fcm-assertion)")
        }
    }

    func run() async -> Int32 {
        do {
            switch kind {
            case .apns(let keyPath, let keyID, let teamID):
                let key = try ECP256PrivateKey(pem: try readText(keyPath))
                printNow(try APNsProviderToken.make(keyID: keyID, teamID: teamID, issuedAt: issuedAt, key: key))
            case .fcmAssertion(let path, let audience):
                let account = try GoogleServiceAccount(json: try readText(path))
                let assertion = try account.assertion(
                    scopes: ["https://www.googleapis.com/auth/firebase.messaging", "https://www.googleapis.com/auth/cloud-platform"],
                    audience: audience ?? account.tokenURI, issuedAt: issuedAt)
                printNow(assertion)
            }
            return ExitCode.success
        } catch {
            printError("pushproof token: \(error)")
            return ExitCode.ioError
        }
    }
}

struct FileError: Error, CustomStringConvertible {
    var path: String
    var reason: String
    var description: String { "\(path): \(reason)" }
}

func readText(_ path: String) throws(FileError) -> String {
    guard let data = FileManager.default.contents(atPath: path) else {
        throw FileError(path: path, reason: FileManager.default.fileExists(atPath: path) ? "not readable" : "no such file")
    }
    guard let text = String(data: data, encoding: .utf8) else { throw FileError(path: path, reason: "not UTF-8 text") }
    return text
}
