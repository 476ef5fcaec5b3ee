//! The service's routes in process (no binary, no socket): the router of a `Service` over a
//! plain sharded generator, called as a tower service. The same routes through the built
//! binary and real clients are in `cli/tests/serve.rs`. The runtime is multi-threaded, as
//! the server's is.

use std::sync::Arc;

use axum::body::{Body, to_bytes};
use axum::http::{Request, StatusCode, header};
use flakeid::{Layout, ShardedGenerator};
use flakeid_serve::{Minter, Service, Token, Tokens};
use tower::ServiceExt;

fn service(token: Option<Token>) -> Arc<Service> {
    let shards = ShardedGenerator::builder(Layout::snowflake())
        .nodes(4..6)
        .shards(2)
        .build()
        .unwrap();
    let mut b = Service::builder(Layout::snowflake()).minter(Minter::plain(shards));
    if let Some(t) = token {
        b = b.tokens(Tokens::fixed(t));
    }
    b.build()
}

/// One request through the router: its status and body.
async fn call(service: &Arc<Service>, request: Request<Body>) -> (StatusCode, String) {
    let response = flakeid_serve::router(Arc::clone(service))
        .oneshot(request)
        .await
        .unwrap();
    let status = response.status();
    let body = to_bytes(response.into_body(), 1 << 24).await.unwrap();
    (status, String::from_utf8(body.to_vec()).unwrap())
}

fn get(uri: &str) -> Request<Body> {
    Request::get(uri).body(Body::empty()).unwrap()
}

/// Quoted decimal IDs in a JSON text, in order.
fn ids_in(text: &str) -> Vec<u64> {
    text.split('"')
        .filter_map(|s| s.parse::<u64>().ok())
        .filter(|&v| v > 1 << 22)
        .collect()
}

/// `/v1/id` and `/v1/ids` mint strictly increasing IDs on the service's node ids, which
/// `/v1/decode` decodes back to those nodes; the health routes answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_routes_mint_decode_and_answer_health_in_process() {
    let s = service(None);
    let (status, body) = call(&s, get("/v1/id")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let first = ids_in(&body);
    assert_eq!(first.len(), 1, "{body}");
    let (status, body) = call(&s, get("/v1/ids?count=50")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let many = ids_in(&body);
    assert_eq!(many.len(), 50, "{body}");
    assert!(many.windows(2).all(|w| w[0] < w[1]), "{many:?}");
    let layout = Layout::snowflake();
    let decode = Request::post("/v1/decode")
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(format!("[\"{}\",\"{}\"]", first[0], many[49])))
        .unwrap();
    let (status, body) = call(&s, decode).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    for id in [first[0], many[49]] {
        let node = layout.decompose(id).unwrap().node;
        assert!((4..6).contains(&node), "{id} on node {node}");
        assert!(body.contains(&format!("\"node\":{node}")), "{body}");
    }
    assert_eq!(call(&s, get("/healthz")).await.0, StatusCode::OK);
    assert_eq!(call(&s, get("/readyz")).await.0, StatusCode::OK);
    s.drain();
    assert_eq!(
        call(&s, get("/readyz")).await.0,
        StatusCode::SERVICE_UNAVAILABLE
    );
}

/// With a token, the mint routes refuse a request without it (401) and serve one with it;
/// bad input is a 400 that says what is wrong.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_token_guards_the_routes_and_bad_input_is_a_clear_400() {
    let s = service(Some(Token::new("sesame").unwrap()));
    assert_eq!(call(&s, get("/v1/id")).await.0, StatusCode::UNAUTHORIZED);
    let authorized = Request::get("/v1/id")
        .header(header::AUTHORIZATION, "Bearer sesame")
        .body(Body::empty())
        .unwrap();
    assert_eq!(call(&s, authorized).await.0, StatusCode::OK);
    let s = service(None);
    let (status, body) = call(&s, get("/v1/ids?count=0")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body.contains("error"), "{body}");
}
