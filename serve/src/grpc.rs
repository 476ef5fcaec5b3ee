//! The gRPC service `flakeid.v1.IdService` ([`IdGrpc`]): `Next`, `Stream`, `Decode` and
//! `Layout`, errors mapped from [`ServiceError`] (the HTTP messages,
//! as `INVALID_ARGUMENT`, `UNAVAILABLE`, `RESOURCE_EXHAUSTED`, ...); the token's
//! interceptor ([`require_token`]); the descriptor set for server reflection
//! ([`FILE_DESCRIPTOR_SET`]). The listener's layers (metrics by method and code, the
//! deadline with `grpc-timeout`) are in `grpc_edges`.

use std::pin::Pin;
use std::sync::Arc;

use flakeid::Id;
use tokio_stream::Stream;
use tonic::{Request, Response, Status};

use crate::{MAX_BATCH, Service, ServiceError};

/// The code generated from `proto/flakeid/v1/flakeid.proto`: messages, the server trait
/// and a client.
#[allow(missing_docs, clippy::all)]
pub mod v1 {
    tonic::include_proto!("flakeid.v1");
}

/// The encoded file descriptor set of `flakeid.v1`, for `tonic-reflection`.
pub const FILE_DESCRIPTOR_SET: &[u8] = tonic::include_file_descriptor_set!("flakeid_v1_descriptor");

use v1::id_service_server::IdService;
use v1::{
    DecodeRequest, DecodeResponse, DecodedId, LayoutRequest, LayoutResponse, NextRequest,
    NextResponse, StreamRequest,
};

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
/// metadata is `Bearer <token>` with a token the service accepts (when it has any).
/// Health and reflection are served without it.
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
            Err(ServiceError::Unauthorized.into())
        }
    }
}

/// `count` IDs from shard `shard` of `minter`, as the wire carries them.
async fn mint(
    service: &Service,
    minter: &crate::Minter,
    shard: usize,
    count: usize,
) -> Result<Vec<u64>, Status> {
    let mut ids = vec![Id::default(); count];
    minter
        .fill(shard, &mut ids)
        .await
        .map_err(|e| Status::from(ServiceError::from(e)))?;
    service.count_minted(count as u64);
    Ok(ids.into_iter().map(Id::get).collect())
}

/// About how many IDs a `Stream` mints at a time, in whole messages (at least one).
const STREAM_AHEAD: u64 = 1024;

type IdStream = Pin<Box<dyn Stream<Item = Result<NextResponse, Status>> + Send>>;

#[tonic::async_trait]
impl IdService for IdGrpc {
    async fn next(&self, request: Request<NextRequest>) -> Result<Response<NextResponse>, Status> {
        let count = request.into_inner().count.max(1) as usize;
        if count > MAX_BATCH {
            return Err(ServiceError::BadRequest(format!(
                "count {count} is more than one call may ask for: give 1 to {MAX_BATCH}, or use Stream"
            ))
            .into());
        }
        let minter = self.service.minter()?;
        let ids = if count == 1 {
            let id = minter.next_id().await.map_err(ServiceError::from)?;
            self.service.count_minted(1);
            vec![id.get()]
        } else {
            mint(&self.service, &minter, minter.home(), count).await?
        };
        Ok(Response::new(NextResponse { ids }))
    }

    type StreamStream = IdStream;

    async fn stream(
        &self,
        request: Request<StreamRequest>,
    ) -> Result<Response<Self::StreamStream>, Status> {
        // Streams per connection are bounded: one client cannot open them without end.
        let limit = self.service.limits().streams_per_connection;
        let permit = match request.extensions().get::<Arc<crate::conn::Conn>>() {
            Some(conn) => Some(Arc::clone(&conn.streams).try_acquire_owned().map_err(|_| {
                ServiceError::Busy(format!(
                    "this connection has {limit} streams open, the most it may: wait for one to end"
                ))
            })?),
            None => None,
        };
        let StreamRequest { count, batch } = request.into_inner();
        // One rule with Next: 0 (proto3's unset) means one ID.
        let count = count.max(1);
        let batch = match batch {
            0 => 4096,
            b if b as usize > MAX_BATCH => {
                return Err(ServiceError::BadRequest(format!(
                    "batch {b} is more than one message may carry: give 1 to {MAX_BATCH}"
                ))
                .into());
            }
            b => u64::from(b),
        };
        let minter = self.service.minter()?;
        // The whole stream mints on one shard, so that its IDs increase across messages
        // whichever worker thread the task runs on. The task mints chunks of whole
        // messages, about `STREAM_AHEAD` IDs (one message of a large batch, many small
        // ones), and the channel holds one chunk: the stream mints no further ahead of the
        // client than two chunks, and each chunk yields to the other tasks and to
        // single-ID requests. A chunk's messages are ready together, so tonic's encoder
        // puts them in one DATA frame: small messages never go out one frame each, which
        // a client's h2 takes for a flood and hangs up on.
        let shard = minter.home();
        let chunk = batch * (STREAM_AHEAD / batch).max(1);
        let (tx, rx) = tokio::sync::mpsc::channel(1);
        let ended = self.service.ended.clone();
        let service = Arc::clone(&self.service);
        self.service.tasks.spawn(async move {
            let _permit = permit;
            let mut left = count;
            while left > 0 {
                let n = left.min(chunk);
                let minted = tokio::select! {
                    m = mint(&service, &minter, shard, n as usize) => m,
                    _ = ended.cancelled() => Err(ServiceError::NotServing(
                        "the server stopped: open the stream again on another server".into(),
                    ).into()),
                };
                let last = minted.is_err();
                if tx.send(minted).await.is_err() || last {
                    return; // the client went away, or the stream failed
                }
                left -= n;
            }
        });
        let messages = move |chunk: Result<Vec<u64>, Status>| {
            let messages: Vec<Result<NextResponse, Status>> = match chunk {
                Ok(ids) => ids
                    .chunks(batch as usize)
                    .map(|ids| Ok(NextResponse { ids: ids.to_vec() }))
                    .collect(),
                Err(status) => vec![Err(status)],
            };
            futures_util::stream::iter(messages)
        };
        let stream = futures_util::StreamExt::flat_map(
            tokio_stream::wrappers::ReceiverStream::new(rx),
            messages,
        );
        Ok(Response::new(Box::pin(stream)))
    }

    async fn decode(
        &self,
        request: Request<DecodeRequest>,
    ) -> Result<Response<DecodeResponse>, Status> {
        let ids = request.into_inner().ids;
        let max = self.service.limits().max_decode;
        if ids.len() > max {
            return Err(ServiceError::BadRequest(format!(
                "{} IDs is more than one call may carry: send at most {max}",
                ids.len()
            ))
            .into());
        }
        let layout = *self.service.layout();
        let mut batch = self.service.batch();
        self.service.decode_into(&ids, 0, &mut batch)?;
        let fields = layout.node_fields();
        let (split, machine) = (fields.parts().is_some(), fields.machine());
        let out = (0..batch.decoded())
            .filter_map(|i| batch.row(i))
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

    async fn layout(&self, _: Request<LayoutRequest>) -> Result<Response<LayoutResponse>, Status> {
        let l = *self.service.layout();
        let nodes = self
            .service
            .minter()
            .map(|m| m.nodes().into_iter().map(|n| n.node).collect())
            .unwrap_or_default();
        Ok(Response::new(LayoutResponse {
            layout: l.to_string(),
            preset: flakeid_text::layout::preset_of(&l).map(|p| p.name.to_string()),
            time_bits: l.time_bits(),
            sequence_bits: l.sequence_bits(),
            node_bits: l.node_bits(),
            datacenter_bits: l.datacenter_bits(),
            worker_bits: l.worker_bits(),
            order: flakeid_text::layout::order_name(l.order()).into(),
            grid: flakeid_text::layout::grid_name(l.grid()).into(),
            unit_ns: l.unit_ns(),
            epoch_unix_ms: l.epoch_unix_ms(),
            nodes,
            json: flakeid_text::layout::layout_json(&l),
        }))
    }
}
