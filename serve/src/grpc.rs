//! The gRPC service `flakeid.v1.IdService` ([`IdGrpc`]): `Next`, `Stream` and `Decode`,
//! errors as `INVALID_ARGUMENT` or `UNAVAILABLE` with the same messages as HTTP; plus the
//! descriptor set for server reflection ([`FILE_DESCRIPTOR_SET`]).

use std::pin::Pin;
use std::sync::Arc;

use flakeid::{Id, MintError};
use tokio_stream::Stream;
use tonic::{Request, Response, Status};

use crate::{MAX_BATCH, MAX_DECODE, Service};

/// The code generated from `proto/flakeid/v1/flakeid.proto`: messages, the server trait
/// and a client.
#[allow(missing_docs, clippy::all)]
pub mod v1 {
    tonic::include_proto!("flakeid.v1");
}

/// The encoded file descriptor set of `flakeid.v1`, for `tonic-reflection`.
pub const FILE_DESCRIPTOR_SET: &[u8] = tonic::include_file_descriptor_set!("flakeid_v1_descriptor");

use v1::id_service_server::IdService;
use v1::{DecodeRequest, DecodeResponse, DecodedId, NextRequest, NextResponse, StreamRequest};

/// `flakeid.v1.IdService` over a [`Service`]; serve it with
/// `v1::id_service_server::IdServiceServer::new(IdGrpc::new(service))`.
#[derive(Debug, Clone)]
pub struct IdGrpc {
    service: Arc<Service>,
}

impl IdGrpc {
    /// The gRPC service over `service`.
    pub fn new(service: Arc<Service>) -> IdGrpc {
        IdGrpc { service }
    }
}

/// The interceptor of the ID service: `UNAUTHENTICATED` unless the call's `authorization`
/// metadata is `Bearer <token>` (when the service has a token). Health and reflection are
/// served without it.
pub fn require_token(
    service: Arc<Service>,
) -> impl FnMut(Request<()>) -> Result<Request<()>, Status> + Clone {
    move |request: Request<()>| {
        let value = request
            .metadata()
            .get("authorization")
            .map(|v| v.as_bytes());
        if service.admits(value) {
            Ok(request)
        } else {
            Err(Status::unauthenticated(
                "missing or wrong bearer token: send the metadata authorization: Bearer <token> with the server's token",
            ))
        }
    }
}

/// A minting error as gRPC reports it: `UNAVAILABLE`, the retry delay in the message.
fn unavailable(e: MintError) -> Status {
    let retry = e
        .retry_after()
        .map(|d| format!(" (retry after {} ms)", d.as_millis().max(1)))
        .unwrap_or_default();
    Status::unavailable(format!("{e}{retry}"))
}

/// `count` IDs, minted on this worker thread (blocking is allowed here: see the HTTP
/// batch route).
fn mint(service: &Service, count: usize) -> Result<Vec<u64>, Status> {
    let mut ids = vec![Id::default(); count];
    tokio::task::block_in_place(|| service.minter().fill(&mut ids)).map_err(unavailable)?;
    metrics::counter!("flakeid_ids_minted_total").increment(count as u64);
    Ok(ids.into_iter().map(Id::get).collect())
}

type IdStream = Pin<Box<dyn Stream<Item = Result<NextResponse, Status>> + Send>>;

#[tonic::async_trait]
impl IdService for IdGrpc {
    async fn next(&self, request: Request<NextRequest>) -> Result<Response<NextResponse>, Status> {
        let count = request.into_inner().count.max(1) as usize;
        if count > MAX_BATCH {
            return Err(Status::invalid_argument(format!(
                "count {count} is more than one call may ask for: give 1 to {MAX_BATCH}, or use Stream"
            )));
        }
        if count == 1 {
            let id = self.service.minter().next_id().await.map_err(unavailable)?;
            metrics::counter!("flakeid_ids_minted_total").increment(1);
            return Ok(Response::new(NextResponse {
                ids: vec![id.get()],
            }));
        }
        Ok(Response::new(NextResponse {
            ids: mint(&self.service, count)?,
        }))
    }

    type StreamStream = IdStream;

    async fn stream(
        &self,
        request: Request<StreamRequest>,
    ) -> Result<Response<Self::StreamStream>, Status> {
        let StreamRequest { count, batch } = request.into_inner();
        if count == 0 {
            return Err(Status::invalid_argument(
                "count 0 asks for nothing: give the number of IDs to stream",
            ));
        }
        let batch = match batch {
            0 => 4096,
            b if b as usize > MAX_BATCH => {
                return Err(Status::invalid_argument(format!(
                    "batch {b} is more than one message may carry: give 1 to {MAX_BATCH}"
                )));
            }
            b => b as u64,
        };
        let service = Arc::clone(&self.service);
        let (tx, rx) = tokio::sync::mpsc::channel(4);
        tokio::spawn(async move {
            let mut left = count;
            while left > 0 {
                let n = left.min(batch);
                let sent = match mint(&service, n as usize) {
                    Ok(ids) => tx.send(Ok(NextResponse { ids })).await,
                    Err(status) => {
                        let _ = tx.send(Err(status)).await;
                        return;
                    }
                };
                if sent.is_err() {
                    return; // the client went away
                }
                left -= n;
            }
        });
        let stream = tokio_stream::wrappers::ReceiverStream::new(rx);
        Ok(Response::new(Box::pin(stream)))
    }

    async fn decode(
        &self,
        request: Request<DecodeRequest>,
    ) -> Result<Response<DecodeResponse>, Status> {
        let ids = request.into_inner().ids;
        if ids.len() > MAX_DECODE {
            return Err(Status::invalid_argument(format!(
                "{} IDs is more than one call may carry: send at most {MAX_DECODE}",
                ids.len()
            )));
        }
        let layout = *self.service.layout();
        let rows = self
            .service
            .decode(&ids)
            .map_err(Status::invalid_argument)?;
        let fields = flakeid_text::NodeFields::of(&layout);
        let (split, machine) = (fields.datacenter_worker, fields.machine);
        let out = rows
            .into_iter()
            .map(|r| {
                let (datacenter, worker) = if split {
                    let (d, w) = layout.split_node(r.node);
                    (Some(d), Some(w))
                } else {
                    (None, None)
                };
                DecodedId {
                    id: r.id,
                    ticks: r.ticks,
                    unix_ms: r.unix_ms,
                    time: flakeid::rfc3339::Timestamp(i128::from(r.unix_ms) * 1_000_000)
                        .to_string(),
                    sequence: r.sequence,
                    node: r.node,
                    datacenter,
                    worker,
                    machine: machine.then_some(r.node),
                }
            })
            .collect();
        Ok(Response::new(DecodeResponse { ids: out }))
    }
}
