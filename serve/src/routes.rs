//! The bottom of the HTTP side: the routes as the metrics name them and the JSON content
//! type, used by the handlers (`http.rs`, `decode.rs`), the edges, the errors and the
//! metrics without any of them reaching into another.

/// The JSON content type.
pub(crate) const JSON: &str = "application/json";

/// The routes, as the metrics name them (the matched route's pattern).
pub(crate) const ROUTES: [&str; 8] = [
    "/v1/id",
    "/v1/ids",
    "/v1/decode",
    "/v1/layout",
    "/v1/range",
    "/healthz",
    "/readyz",
    "/metrics",
];
