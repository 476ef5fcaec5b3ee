//! [`ServiceError`]: every error the service answers, mapped once to an HTTP status with a
//! JSON body (`{"error": "..."}`, plus `Retry-After`, `WWW-Authenticate` where they apply)
//! and once to a gRPC status. Handlers return `Result<_, ServiceError>`; nothing else
//! spells a status or an error body.

use std::time::Duration;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use flakeid::MintError;

/// An error the service answers with. Each message says what to send or do instead.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServiceError {
    /// The request is malformed: a bad count, a bad ID, a batch over the limit.
    /// HTTP 400, gRPC `INVALID_ARGUMENT`.
    BadRequest(String),
    /// No or a wrong bearer token. HTTP 401 with `WWW-Authenticate: Bearer`, gRPC
    /// `UNAUTHENTICATED`.
    Unauthorized,
    /// No route at this path. HTTP 404.
    NotFound,
    /// The path is served, not with this method (axum adds `Allow`). HTTP 405.
    MethodNotAllowed {
        /// The method asked for.
        method: String,
    },
    /// The body is larger than the route takes. HTTP 413.
    TooLarge {
        /// The most bytes the body may have.
        limit: usize,
        /// What that is in the route's terms.
        hint: String,
    },
    /// The request target is longer than the server reads. HTTP 414.
    UriTooLong {
        /// The most bytes of path and query.
        limit: usize,
    },
    /// The request's headers are larger than the server reads. HTTP 431.
    HeadersTooLarge {
        /// The most bytes of header names and values together.
        limit: usize,
    },
    /// No ID can be minted now (at a fence, a wait past the bound, a clock behind).
    /// HTTP 503 with `Retry-After`, gRPC `UNAVAILABLE`.
    Mint(MintError),
    /// The server does not mint now: it is claiming its node ids, re-claiming them after
    /// a lost claim, or draining. HTTP 503 with `Retry-After`, gRPC `UNAVAILABLE`.
    NotServing(String),
    /// The request did not finish within its deadline (the server's, or gRPC's
    /// `grpc-timeout`). HTTP 503 with `Retry-After`, gRPC `DEADLINE_EXCEEDED`.
    Deadline(Duration),
    /// This connection has as many streams open as it may: HTTP 429, gRPC
    /// `RESOURCE_EXHAUSTED`.
    Busy(String),
    /// A handler failed (a panic, caught). HTTP 500, gRPC `INTERNAL`.
    Internal(String),
}

impl std::fmt::Display for ServiceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServiceError::BadRequest(m) | ServiceError::NotServing(m) | ServiceError::Busy(m) => {
                f.write_str(m)
            }
            ServiceError::Unauthorized => f.write_str(
                "missing or wrong bearer token: send the header Authorization: Bearer <token> with the server's token",
            ),
            ServiceError::NotFound => f.write_str(
                "no such route: GET /v1/id, GET /v1/ids?count=N, POST /v1/decode, GET /v1/layout, GET /v1/range?from=T&to=T, /healthz, /readyz, /metrics",
            ),
            ServiceError::MethodNotAllowed { method } => write!(
                f,
                "{method} is not served at this path: use a method the Allow header names"
            ),
            ServiceError::TooLarge { limit, hint } => {
                write!(f, "the body is larger than {limit} bytes: {hint}")
            }
            ServiceError::UriTooLong { limit } => write!(
                f,
                "the path and query are longer than {limit} bytes: send a shorter request target"
            ),
            ServiceError::HeadersTooLarge { limit } => write!(
                f,
                "the headers are larger than {limit} bytes together: send fewer or shorter headers"
            ),
            ServiceError::Mint(e) => write!(f, "{e}"),
            ServiceError::Deadline(d) => write!(
                f,
                "the request did not finish within its deadline of {} ms: retry, or allow a longer deadline",
                d.as_millis()
            ),
            ServiceError::Internal(m) => write!(f, "internal error: {m}; this is a bug, please report it"),
        }
    }
}

impl std::error::Error for ServiceError {}

impl From<MintError> for ServiceError {
    fn from(e: MintError) -> ServiceError {
        ServiceError::Mint(e)
    }
}

impl ServiceError {
    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        match self {
            ServiceError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ServiceError::Unauthorized => StatusCode::UNAUTHORIZED,
            ServiceError::NotFound => StatusCode::NOT_FOUND,
            ServiceError::MethodNotAllowed { .. } => StatusCode::METHOD_NOT_ALLOWED,
            ServiceError::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            ServiceError::UriTooLong { .. } => StatusCode::URI_TOO_LONG,
            ServiceError::HeadersTooLarge { .. } => StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            ServiceError::Mint(_) | ServiceError::NotServing(_) | ServiceError::Deadline(_) => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            ServiceError::Busy(_) => StatusCode::TOO_MANY_REQUESTS,
            ServiceError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// When a retry may succeed, for `Retry-After` (whole seconds, at least 1).
    fn retry_after(&self) -> Option<u64> {
        match self {
            ServiceError::Mint(e) => Some(
                e.retry_after()
                    .map_or(1, |d| d.as_secs_f64().ceil().max(1.0) as u64),
            ),
            ServiceError::NotServing(_) | ServiceError::Deadline(_) | ServiceError::Busy(_) => {
                Some(1)
            }
            _ => None,
        }
    }

    /// The gRPC status code.
    pub fn code(&self) -> tonic::Code {
        match self {
            ServiceError::BadRequest(_) => tonic::Code::InvalidArgument,
            ServiceError::Unauthorized => tonic::Code::Unauthenticated,
            ServiceError::NotFound | ServiceError::MethodNotAllowed { .. } => {
                tonic::Code::Unimplemented
            }
            ServiceError::TooLarge { .. }
            | ServiceError::UriTooLong { .. }
            | ServiceError::HeadersTooLarge { .. }
            | ServiceError::Busy(_) => tonic::Code::ResourceExhausted,
            ServiceError::Mint(_) | ServiceError::NotServing(_) => tonic::Code::Unavailable,
            ServiceError::Deadline(_) => tonic::Code::DeadlineExceeded,
            ServiceError::Internal(_) => tonic::Code::Internal,
        }
    }
}

/// The JSON body `{"error": message}`.
pub(crate) fn error_body(message: &str) -> String {
    serde_json::json!({ "error": message }).to_string()
}

impl IntoResponse for ServiceError {
    fn into_response(self) -> Response {
        let mut r = (
            self.status(),
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static(crate::routes::JSON),
            )],
            error_body(&self.to_string()),
        )
            .into_response();
        if let Some(secs) = self.retry_after() {
            r.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        if self == ServiceError::Unauthorized {
            r.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        r
    }
}

impl From<ServiceError> for tonic::Status {
    fn from(e: ServiceError) -> tonic::Status {
        let message = match &e {
            ServiceError::Unauthorized => "missing or wrong bearer token: send the metadata authorization: Bearer <token> with the server's token".to_string(),
            ServiceError::Mint(m) => match m.retry_after() {
                Some(d) => format!("{e} (retry after {} ms)", d.as_millis().max(1)),
                None => e.to_string(),
            },
            _ => e.to_string(),
        };
        tonic::Status::new(e.code(), message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each error keeps one status per protocol, a JSON body and the headers its status
    /// promises: `Retry-After` where a retry can succeed, `WWW-Authenticate` on 401.
    #[tokio::test]
    async fn every_error_maps_to_json_and_a_grpc_code() {
        let all = [
            ServiceError::BadRequest("count=0 asks for nothing".into()),
            ServiceError::Unauthorized,
            ServiceError::NotFound,
            ServiceError::MethodNotAllowed {
                method: "PUT".into(),
            },
            ServiceError::TooLarge {
                limit: 10,
                hint: "send fewer IDs".into(),
            },
            ServiceError::UriTooLong { limit: 8192 },
            ServiceError::HeadersTooLarge { limit: 16384 },
            ServiceError::Mint(MintError::WouldBlock {
                wait_ns: 2_500_000_000,
            }),
            ServiceError::NotServing("claiming node ids".into()),
            ServiceError::Deadline(Duration::from_secs(10)),
            ServiceError::Busy("4 streams open".into()),
            ServiceError::Internal("a panic".into()),
        ];
        let statuses: Vec<u16> = all.iter().map(|e| e.status().as_u16()).collect();
        assert_eq!(
            statuses,
            [400, 401, 404, 405, 413, 414, 431, 503, 503, 503, 429, 500]
        );
        for e in all {
            let status = tonic::Status::from(e.clone());
            assert_eq!(status.code(), e.code());
            assert!(!status.message().is_empty());
            let r = e.clone().into_response();
            assert_eq!(r.headers()[header::CONTENT_TYPE], crate::routes::JSON);
            let retry = r.headers().get(header::RETRY_AFTER);
            assert_eq!(
                retry.is_some(),
                r.status() == 503 || r.status() == 429,
                "{e:?}"
            );
            if let ServiceError::Mint(_) = e {
                assert_eq!(retry.unwrap(), "3", "2.5 s rounds up");
            }
            assert_eq!(
                r.headers().contains_key(header::WWW_AUTHENTICATE),
                r.status() == 401
            );
            let body = axum::body::to_bytes(r.into_body(), 1 << 16).await.unwrap();
            let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
            assert_eq!(v["error"], e.to_string());
        }
    }
}
