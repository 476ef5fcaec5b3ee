//! The HTTP stack's ceiling for BENCHMARKS.md: a minimal axum server (`axum::serve`, one
//! worker thread, no layers) answering `GET /v1/id` with a fixed body of the service's
//! shape and `GET /healthz`. What `flakeid serve` adds (minting, metrics, timeouts, the
//! connection cap) is the difference.
//!
//! ```sh
//! cargo run --release -p flakeid-serve --example minimal_axum -- 127.0.0.1:18190
//! ```

use axum::Router;
use axum::http::header;
use axum::routing::get;

#[tokio::main(flavor = "multi_thread", worker_threads = 1)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:18190".into());
    let app = Router::new()
        .route(
            "/v1/id",
            get(|| async {
                (
                    [(header::CONTENT_TYPE, "application/json")],
                    "{\"id\":\"2128398635996553216\"}",
                )
            }),
        )
        .route(
            "/healthz",
            get(|| async {
                (
                    [(header::CONTENT_TYPE, "application/json")],
                    "{\"status\":\"alive\"}",
                )
            }),
        );
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    eprintln!("minimal axum on {addr}");
    axum::serve(listener, app).await?;
    Ok(())
}
