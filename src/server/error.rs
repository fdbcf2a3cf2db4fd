//! The server's error answers: every failure is a JSON object naming the problem, with an
//! HTTP status that says whose fault it is (4xx: the request; 503: try again later; 500: ours).

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::error::Error;

/// An error answer: `{"error": CODE, "message": TEXT}` with `status`.
#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    /// A stable machine-readable word (`bad_parameter`, `body_too_large`, ...).
    pub code: &'static str,
    pub message: String,
    /// Seconds for a `Retry-After` header (503 answers).
    pub retry_after: Option<u64>,
}

#[derive(Serialize)]
struct Body<'a> {
    error: &'a str,
    message: &'a str,
    status: u16,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
            retry_after: None,
        }
    }

    /// 400: the request is malformed (parameters, body).
    pub fn bad_request(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, message)
    }

    /// 503 with `Retry-After`.
    pub fn unavailable(message: impl Into<String>, retry_after: u64) -> Self {
        ApiError {
            retry_after: Some(retry_after),
            ..Self::new(StatusCode::SERVICE_UNAVAILABLE, "writer_busy", message)
        }
    }

    /// The JSON body alone (one line of a batch answer).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({"error": self.code, "message": self.message, "status": self.status.as_u16()})
    }
}

impl From<Error> for ApiError {
    /// Library errors: a document the index cannot take (binary, no text, undecodable) or a bad
    /// argument (a method the index does not store, ...) is the request's fault; a locked index
    /// is busy; anything else (I/O, corruption) is ours.
    fn from(e: Error) -> Self {
        match &e {
            Error::Document { .. } => ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "bad_document",
                e.to_string(),
            ),
            Error::InvalidArgument(_) | Error::OptionConflict { .. } => {
                ApiError::bad_request("bad_argument", e.to_string())
            }
            Error::Locked { .. } => ApiError::unavailable(e.to_string(), 1),
            _ => ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string()),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = Body {
            error: self.code,
            message: &self.message,
            status: self.status.as_u16(),
        };
        let mut r = (self.status, axum::Json(body)).into_response();
        if let Some(s) = self.retry_after {
            r.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(s.max(1)));
        }
        r
    }
}

/// Turns an error answer produced outside our handlers (the router's 405, the timeout layer's
/// 408, hyper-level rejections passed through tower-http) into our JSON shape, so a client
/// always gets `{"error", "message"}`.
pub async fn jsonify_errors(r: Response) -> Response {
    let s = r.status();
    let is_json = r
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if (s.is_client_error() || s.is_server_error()) && !is_json {
        let (code, message) = match s {
            StatusCode::METHOD_NOT_ALLOWED => {
                ("method_not_allowed", "method not allowed on this path")
            }
            StatusCode::REQUEST_TIMEOUT => (
                "timeout",
                "the request took longer than the server's request timeout",
            ),
            StatusCode::PAYLOAD_TOO_LARGE => (
                "body_too_large",
                "the body is larger than the server's --max-body",
            ),
            StatusCode::NOT_FOUND => ("not_found", "no such path"),
            _ => ("error", s.canonical_reason().unwrap_or("error")),
        };
        let mut out = ApiError::new(s, code, message).into_response();
        if let Some(v) = r.headers().get(header::RETRY_AFTER) {
            out.headers_mut().insert(header::RETRY_AFTER, v.clone());
        }
        return out;
    }
    r
}
