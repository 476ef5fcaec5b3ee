//! The HTTP stack's ceiling for BENCHMARKS.md: a minimal axum server (`axum::serve`, one
//! worker thread, no layers) answering `GET /v1/id` with a fixed body of the service's
//! shape and `GET /healthz`; with a file as its second argument, `GET /v1/ids` answers
//! that file's bytes (a batch `flakeid serve` made, served as a static body). What
//! `flakeid serve` adds (minting, metrics, timeouts, the connection cap) is the difference.
//!
//! ```sh
//! cargo run --release -p flakeid-serve --example minimal_axum -- 127.0.0.1:18190 [BODY_FILE]
//! ```

use axum::Router;
use axum::http::header;
use axum::routing::get;

#[tokio::main(flavor = "multi_thread", worker_threads = 1)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:18190".into());
    let batch = match std::env::args().nth(2) {
        Some(path) => bytes::Bytes::from(std::fs::read(path)?),
        None => bytes::Bytes::new(),
    };
    let app = Router::new()
        .route(
            "/v1/ids",
            get(move || {
                let body = batch.clone();
                async move { ([(header::CONTENT_TYPE, "application/json")], body) }
            }),
        )
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
