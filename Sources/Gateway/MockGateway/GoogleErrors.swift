import HTTPCore
import JSON
import PushModel

/// Google's error body (`google.rpc.Status` as JSON), the shape every FCM error has:
/// `{"error":{"code","message","status","details":[…]}}` (fcm.md, Responses).
struct GoogleError {
    var code: Int
    var status: String
    var message: String
    /// `google.firebase.fcm.v1.FcmError.errorCode`; nil for errors raised before FCM sees the
    /// message (JSON-to-proto conversion, authentication), which carry no FcmError.
    var fcmErrorCode: FCMErrorCode?
    /// `google.rpc.BadRequest.fieldViolations`.
    var fieldViolations: [(field: String, description: String)] = []
    /// `google.rpc.ErrorInfo` reason (authentication, scopes).
    var errorInfoReason: String?
    /// `google.rpc.QuotaFailure` violation (429).
    var quotaViolation: (subject: String, description: String)?
    var retryAfterSeconds: Int?
    var extraHeaders: [HTTPHeader] = []

    /// The value reported as the exchange's reason: the FcmError code, else the canonical status.
    var reason: String { fcmErrorCode?.rawValue ?? status }

    init(code: Int, status: String, message: String, fcmErrorCode: FCMErrorCode? = nil,
         fieldViolations: [(field: String, description: String)] = []) {
        self.code = code
        self.status = status
        self.message = message
        self.fcmErrorCode = fcmErrorCode
        self.fieldViolations = fieldViolations
    }

    /// An FCM error with its FcmError detail, status and code from the error code table.
    init(_ errorCode: FCMErrorCode, message: String, fieldViolations: [(field: String, description: String)] = []) {
        self.init(code: errorCode.status, status: errorCode.canonicalStatus, message: message,
                  fcmErrorCode: errorCode, fieldViolations: fieldViolations)
    }

    /// A JSON-to-proto conversion error: 400 INVALID_ARGUMENT with a BadRequest detail only.
    static func invalidPayload(field: String, _ description: String) -> GoogleError {
        GoogleError(code: 400, status: "INVALID_ARGUMENT", message: description,
                    fieldViolations: [(field, description)])
    }

    var response: HTTPResponse {
        var w = JSONWriter(capacity: 256)
        w.beginObject()
        w.key("error")
        w.beginObject()
        w.key("code"); w.int(code)
        w.key("message"); w.string(message)
        w.key("status"); w.string(status)
        if fcmErrorCode != nil || !fieldViolations.isEmpty || errorInfoReason != nil || quotaViolation != nil {
            w.key("details")
            w.beginArray()
            if let fcmErrorCode {
                w.beginObject()
                w.key("@type"); w.string("type.googleapis.com/google.firebase.fcm.v1.FcmError")
                w.key("errorCode"); w.string(fcmErrorCode.rawValue)
                w.endObject()
            }
            if !fieldViolations.isEmpty {
                w.beginObject()
                w.key("@type"); w.string("type.googleapis.com/google.rpc.BadRequest")
                w.key("fieldViolations")
                w.beginArray()
                for violation in fieldViolations {
                    w.beginObject()
                    w.key("field"); w.string(violation.field)
                    w.key("description"); w.string(violation.description)
                    w.endObject()
                }
                w.endArray()
                w.endObject()
            }
            if let quotaViolation {
                w.beginObject()
                w.key("@type"); w.string("type.googleapis.com/google.rpc.QuotaFailure")
                w.key("violations")
                w.beginArray()
                w.beginObject()
                w.key("subject"); w.string(quotaViolation.subject)
                w.key("description"); w.string(quotaViolation.description)
                w.endObject()
                w.endArray()
                w.endObject()
            }
            if let errorInfoReason {
                w.beginObject()
                w.key("@type"); w.string("type.googleapis.com/google.rpc.ErrorInfo")
                w.key("reason"); w.string(errorInfoReason)
                w.key("domain"); w.string("googleapis.com")
                w.key("metadata")
                w.beginObject()
                w.key("service"); w.string("fcm.googleapis.com")
                w.endObject()
                w.endObject()
            }
            w.endArray()
        }
        w.endObject()
        w.endObject()
        var headers = [HTTPHeader("content-type", "application/json; charset=UTF-8")]
        if let retryAfterSeconds { headers.append(HTTPHeader("retry-after", String(retryAfterSeconds))) }
        headers.append(contentsOf: extraHeaders)
        return HTTPResponse(status: code, headers: headers, body: w.bytes)
    }
}
