import PushModel
import Testing
@testable import Sender

@Suite struct DeliveryClassificationTests {
    private func apnsBody(_ reason: String, timestamp: Int? = nil) -> [UInt8] {
        let stamp = timestamp.map { ", \"timestamp\": \($0)" } ?? ""
        return Array("{\"reason\": \"\(reason)\"\(stamp)}".utf8)
    }

    private func fcmBody(status: Int, code: FCMErrorCode, message: String, extraDetails: String = "") -> [UInt8] {
        let details = """
            [{"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": "\(code.rawValue)"}\(extraDetails)]
            """
        return Array("""
            {"error": {"code": \(status), "message": "\(message)", "status": "\(code.canonicalStatus)", "details": \(details)}}
            """.utf8)
    }

    @Test func apnsSuccessCarriesTheApnsID() {
        let verdict = ResponseClassifier.classifyAPNs(status: 200, body: [], apnsID: "8E1C6A4B-0000-4000-8000-000000000001", retryAfter: nil)
        #expect(verdict == .delivered(id: "8E1C6A4B-0000-4000-8000-000000000001"))
    }

    @Test(arguments: APNSReason.allCases)
    func everyAPNsReasonHasItsVerdict(reason: APNSReason) {
        let verdict = ResponseClassifier.classifyAPNs(status: reason.status, body: apnsBody(reason.rawValue, timestamp: reason.status == 410 ? 1_700_000_000_000 : nil), apnsID: nil, retryAfter: nil)
        switch reason {
        case .unregistered, .expiredToken, .badDeviceToken:
            #expect(verdict == .removeToken(reason: reason.rawValue, status: reason.status))
        case .expiredProviderToken:
            #expect(verdict == .refreshCredentialsAndRetry(reason: reason.rawValue, status: 403))
        case .tooManyRequests, .tooManyProviderTokenUpdates, .internalServerError, .serviceUnavailable, .shutdown:
            #expect(verdict == .retry(reason: reason.rawValue, status: reason.status, retryAfter: nil))
        default:
            #expect(verdict == .fail(reason: reason.rawValue, status: reason.status))
        }
    }

    @Test func apnsRetryCarriesRetryAfter() {
        let verdict = ResponseClassifier.classifyAPNs(status: 503, body: apnsBody("ServiceUnavailable"), apnsID: nil, retryAfter: 7)
        #expect(verdict == .retry(reason: "ServiceUnavailable", status: 503, retryAfter: 7))
    }

    @Test func apnsUnknownReasonIsKeptAndFinal() {
        let verdict = ResponseClassifier.classifyAPNs(status: 400, body: apnsBody("SomethingNew"), apnsID: nil, retryAfter: nil)
        #expect(verdict == .fail(reason: "SomethingNew", status: 400))
    }

    @Test func apnsAnswerWithoutJSONFallsBackOnTheStatus() {
        #expect(ResponseClassifier.classifyAPNs(status: 502, body: Array("<html>".utf8), apnsID: nil, retryAfter: nil) == .fail(reason: "HTTP 502", status: 502))
        #expect(ResponseClassifier.classifyAPNs(status: 503, body: [], apnsID: nil, retryAfter: nil) == .retry(reason: "HTTP 503", status: 503, retryAfter: nil))
        #expect(ResponseClassifier.classifyAPNs(status: 404, body: Array("not json".utf8), apnsID: nil, retryAfter: nil) == .fail(reason: "HTTP 404", status: 404))
    }

    @Test func fcmSuccessCarriesTheMessageName() {
        let verdict = ResponseClassifier.classifyFCM(status: 200, body: Array(#"{"name": "projects/demo/messages/0:123"}"#.utf8), retryAfter: nil)
        #expect(verdict == .delivered(id: "projects/demo/messages/0:123"))
    }

    @Test(arguments: FCMErrorCode.allCases)
    func everyFCMErrorCodeHasItsVerdict(code: FCMErrorCode) {
        let verdict = ResponseClassifier.classifyFCM(status: code.status, body: fcmBody(status: code.status, code: code, message: "Some problem."), retryAfter: nil)
        switch code {
        case .unregistered:
            #expect(verdict == .removeToken(reason: "UNREGISTERED", status: 404))
        case .quotaExceeded, .unavailable, .internalError:
            #expect(verdict == .retry(reason: code.rawValue, status: code.status, retryAfter: nil))
        default:
            // INVALID_ARGUMENT about something else, SENDER_ID_MISMATCH, THIRD_PARTY_AUTH_ERROR.
            #expect(verdict == .fail(reason: code.rawValue, status: code.status))
        }
    }

    @Test func fcmInvalidTokenRemovesTheToken() {
        let body = fcmBody(status: 400, code: .invalidArgument, message: fcmInvalidTokenMessage)
        #expect(ResponseClassifier.classifyFCM(status: 400, body: body, retryAfter: nil) == .removeToken(reason: "INVALID_ARGUMENT", status: 400))
    }

    @Test func fcmPayloadErrorNeverRemovesTheToken() {
        let badRequest = """
            , {"@type": "type.googleapis.com/google.rpc.BadRequest", "fieldViolations": [{"field": "message.data[0].value", "description": "Invalid value"}]}
            """
        let payloadError = fcmBody(status: 400, code: .invalidArgument, message: "Invalid value at 'message.data[0].value' (TYPE_STRING), 12", extraDetails: badRequest)
        #expect(ResponseClassifier.classifyFCM(status: 400, body: payloadError, retryAfter: nil) == .fail(reason: "INVALID_ARGUMENT", status: 400))
        // Even a token message does not delete when a violation points at the payload.
        let mixed = fcmBody(status: 400, code: .invalidArgument, message: fcmInvalidTokenMessage, extraDetails: badRequest)
        #expect(ResponseClassifier.classifyFCM(status: 400, body: mixed, retryAfter: nil) == .fail(reason: "INVALID_ARGUMENT", status: 400))
    }

    @Test func fcm404WithoutAnFcmErrorIsNotATokenVerdict() {
        // A wrong project path also answers 404; only errorCode UNREGISTERED deletes.
        let body = Array(#"{"error": {"code": 404, "message": "Requested entity was not found.", "status": "NOT_FOUND"}}"#.utf8)
        #expect(ResponseClassifier.classifyFCM(status: 404, body: body, retryAfter: nil) == .fail(reason: "NOT_FOUND", status: 404))
    }

    @Test func fcmRefusedAccessTokenRefreshesIt() {
        let body = Array(#"{"error": {"code": 401, "message": "Request had invalid authentication credentials.", "status": "UNAUTHENTICATED"}}"#.utf8)
        #expect(ResponseClassifier.classifyFCM(status: 401, body: body, retryAfter: nil) == .refreshCredentialsAndRetry(reason: "UNAUTHENTICATED", status: 401))
    }

    @Test func fcmQuotaHonoursRetryAfter() {
        let body = fcmBody(status: 429, code: .quotaExceeded, message: "Quota exceeded.")
        #expect(ResponseClassifier.classifyFCM(status: 429, body: body, retryAfter: 60) == .retry(reason: "QUOTA_EXCEEDED", status: 429, retryAfter: 60))
    }

    @Test func transportErrorsRetryUnlessTheyAreConfiguration() {
        #expect(ResponseClassifier.classifyTransportError(code: 7, message: "Connection refused", permanent: false) == .retry(reason: "NetworkError: Connection refused (curl 7)", status: 0, retryAfter: nil))
        #expect(ResponseClassifier.classifyTransportError(code: 3, message: "URL malformed", permanent: true) == .fail(reason: "NetworkError: URL malformed (curl 3)", status: 0))
    }

    @Test func responseHeaderValuesAreFoundCaseInsensitively() {
        let line = Array("APNS-ID:  abc-123 \r\n".utf8)
        let value = line.withUnsafeBytes { bytes in CurlTransfer.value(of: "apns-id", in: bytes).map { Array($0) } }
        #expect(value == Array("abc-123".utf8))
        let other = Array("apns-idx: 1\r\n".utf8)
        #expect(other.withUnsafeBytes { CurlTransfer.value(of: "apns-id", in: $0) } == nil)
    }
}
