//! [`Authorized`]: the bearer-token check of the `/v1/*` routes, as an extractor.

use std::sync::Arc;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderValue, header};

use crate::{Service, ServiceError};

/// A request that carries a bearer token the service accepts (when it has any): the mint,
/// decode and layout routes take it first, so a refused request is read no further.
pub(crate) struct Authorized;

impl FromRequestParts<Arc<Service>> for Authorized {
    type Rejection = ServiceError;

    async fn from_request_parts(parts: &mut Parts, s: &Arc<Service>) -> Result<Self, ServiceError> {
        // Without tokens every request is admitted: no header to look up.
        if !s.takes_tokens() {
            return Ok(Authorized);
        }
        let value = parts
            .headers
            .get(header::AUTHORIZATION)
            .map(HeaderValue::as_bytes);
        if s.admits(value) {
            Ok(Authorized)
        } else {
            Err(ServiceError::Unauthorized)
        }
    }
}
