//! [`Authorized`]: the bearer-token check of the `/v1/*` routes, as an extractor.

use std::sync::Arc;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, header};

use crate::{Service, ServiceError};

/// A request that carries a bearer token the service accepts (when it has any): the mint,
/// decode and layout routes take it first, so a refused request is read no further.
pub(crate) struct Authorized;

impl FromRequestParts<Arc<Service>> for Authorized {
    type Rejection = ServiceError;

    async fn from_request_parts(parts: &mut Parts, s: &Arc<Service>) -> Result<Self, ServiceError> {
        if admitted(s, &parts.headers) {
            Ok(Authorized)
        } else {
            Err(ServiceError::Unauthorized)
        }
    }
}

/// Whether a request with `headers` carries a bearer token `s` accepts; without tokens
/// every request is admitted, and no header is looked up.
pub(crate) fn admitted(s: &Service, headers: &HeaderMap) -> bool {
    !s.takes_tokens()
        || s.admits(
            headers
                .get(header::AUTHORIZATION)
                .map(HeaderValue::as_bytes),
        )
}
