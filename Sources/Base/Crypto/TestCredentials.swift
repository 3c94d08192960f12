/// Throwaway credentials for a mock gateway and the senders that talk to it: an APNs signing
/// key (ES256, what a `.p8` holds) and a Google service account (RS256). Made fresh for each
/// embedded gateway (`run`, `drive`, the library) and by `pushproof credentials`; never for a
/// real service.
public struct TestCredentials: Sendable {
    public let apnsKey: ECP256PrivateKey
    /// The service account's key file, as Google's console writes it.
    public let serviceAccountJSON: String
    public let serviceAccount: GoogleServiceAccount

    /// `tokenURI` is where the account's OAuth token requests go: the gateway's `/token`.
    public static func generate(fcmProject: String, tokenURI: String) throws(CryptoError) -> TestCredentials {
        let (json, account) = try GoogleServiceAccount.generate(
            projectID: fcmProject, clientEmail: "pushproof@\(fcmProject).iam.gserviceaccount.com", tokenURI: tokenURI)
        return TestCredentials(apnsKey: try ECP256PrivateKey.generate(), serviceAccountJSON: json, serviceAccount: account)
    }
}
