//! The gRPC listener's routes and layers: health (following readiness, for the service's
//! name and for the whole server, `""`), reflection v1 and v1alpha, the ID service
//! behind its token; around them one layer that times and counts every call by method
//! and status code (read from the trailers, whenever the call ends) and bounds it by its
//! deadline: the client's `grpc-timeout`, and for unary calls also the server's request
//! timeout. A call past its deadline ends with `DEADLINE_EXCEEDED`, a stream included.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderMap, Request, Response};
use tonic::body::Body;
use tonic::service::Routes;

use crate::Service;
use crate::grpc::IdGrpc;
use crate::grpc::v1::id_service_server::IdServiceServer;
use crate::metrics::GRPC_METHODS;

/// The name health reports the ID service under.
pub(crate) fn service_name() -> &'static str {
    <IdServiceServer<IdGrpc> as tonic::server::NamedService>::NAME
}

/// The routes of the gRPC listener, inside its layer, and the health reporter the
/// readiness watch sets.
pub(crate) fn routes(service: &Arc<Service>) -> (GrpcEdges, tonic_health::server::HealthReporter) {
    let (health, health_service) = tonic_health::server::health_reporter();
    // Reflection in both versions: v1, and v1alpha for the clients that ask only it
    // (grpcurl before 1.8, Python's and older Java's).
    let reflection = || {
        tonic_reflection::server::Builder::configure()
            .register_encoded_file_descriptor_set(crate::grpc::FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
    };
    let v1 = reflection()
        .build_v1()
        .expect("the descriptor sets are valid");
    let v1alpha = reflection()
        .build_v1alpha()
        .expect("the descriptor sets are valid");
    let ids = IdServiceServer::with_interceptor(
        IdGrpc::new(Arc::clone(service)),
        crate::grpc::require_token(Arc::clone(service)),
    );
    let routes = Routes::new(health_service)
        .add_service(v1)
        .add_service(v1alpha)
        .add_service(ids)
        .prepare();
    (
        GrpcEdges {
            inner: routes,
            service: Arc::clone(service),
        },
        health,
    )
}

/// The layer around the gRPC routes: metrics, access log, deadline.
#[derive(Clone)]
pub(crate) struct GrpcEdges {
    inner: Routes,
    service: Arc<Service>,
}

/// A call's method as the metrics name it: one of the ID service's, health, reflection,
/// or `unknown` (so that no client can make new series).
fn method_label(path: &str) -> &'static str {
    let name = path.trim_start_matches('/');
    if let Some(m) = GRPC_METHODS.iter().find(|m| **m == name) {
        return m;
    }
    match name {
        "grpc.health.v1.Health/Check" => "grpc.health.v1.Health/Check",
        "grpc.health.v1.Health/Watch" => "grpc.health.v1.Health/Watch",
        "grpc.reflection.v1.ServerReflection/ServerReflectionInfo" => {
            "grpc.reflection.v1.ServerReflection/ServerReflectionInfo"
        }
        "grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo" => {
            "grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"
        }
        _ => "unknown",
    }
}

/// Whether calls of this method may last as long as the client wants (a stream).
fn streaming(method: &str) -> bool {
    matches!(
        method,
        "flakeid.v1.IdService/Stream"
            | "grpc.health.v1.Health/Watch"
            | "grpc.reflection.v1.ServerReflection/ServerReflectionInfo"
            | "grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"
    )
}

/// The `grpc-timeout` header: digits (at most 8) and a unit, `H`, `M`, `S`, `m`, `u`
/// or `n` (the gRPC over HTTP/2 protocol). `None` when absent or malformed.
pub(crate) fn grpc_timeout(headers: &HeaderMap) -> Option<Duration> {
    let v = headers.get("grpc-timeout")?.to_str().ok()?;
    let (digits, unit) = v.split_at_checked(v.len().checked_sub(1)?)?;
    if digits.is_empty() || digits.len() > 8 {
        return None;
    }
    let n: u64 = digits.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(n * 3600),
        "M" => Duration::from_secs(n * 60),
        "S" => Duration::from_secs(n),
        "m" => Duration::from_millis(n),
        "u" => Duration::from_micros(n),
        "n" => Duration::from_nanos(n),
        _ => return None,
    })
}

/// A gRPC status code as a label.
fn code_label(code: tonic::Code) -> &'static str {
    use tonic::Code::*;
    match code {
        Ok => "OK",
        Cancelled => "CANCELLED",
        Unknown => "UNKNOWN",
        InvalidArgument => "INVALID_ARGUMENT",
        DeadlineExceeded => "DEADLINE_EXCEEDED",
        NotFound => "NOT_FOUND",
        AlreadyExists => "ALREADY_EXISTS",
        PermissionDenied => "PERMISSION_DENIED",
        ResourceExhausted => "RESOURCE_EXHAUSTED",
        FailedPrecondition => "FAILED_PRECONDITION",
        Aborted => "ABORTED",
        OutOfRange => "OUT_OF_RANGE",
        Unimplemented => "UNIMPLEMENTED",
        Internal => "INTERNAL",
        Unavailable => "UNAVAILABLE",
        DataLoss => "DATA_LOSS",
        Unauthenticated => "UNAUTHENTICATED",
    }
}

/// The status a set of headers or trailers carries, if any.
fn status_of(headers: &HeaderMap) -> Option<tonic::Code> {
    headers
        .get("grpc-status")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<i32>().ok())
        .map(tonic::Code::from_i32)
}

/// A call, counted and timed once, when it ends.
struct Call {
    method: &'static str,
    started: Instant,
    code: Option<tonic::Code>,
    access: Option<Option<std::net::SocketAddr>>,
}

impl Drop for Call {
    fn drop(&mut self) {
        // A body dropped before its trailers: the client went away.
        let code = self.code.unwrap_or(tonic::Code::Cancelled);
        let elapsed = self.started.elapsed();
        metrics::counter!("flakeid_grpc_requests_total", "method" => self.method, "code" => code_label(code))
            .increment(1);
        metrics::histogram!("flakeid_grpc_request_duration_seconds", "method" => self.method)
            .record(elapsed.as_secs_f64());
        if let Some(peer) = self.access {
            tracing::info!(
                target: "flakeid_serve::access",
                method = self.method,
                code = code_label(code),
                micros = elapsed.as_micros() as u64,
                peer = ?peer,
                "grpc call"
            );
        }
    }
}

pin_project_lite::pin_project! {
    /// A call's response body: reads its status from the trailers, and ends it with
    /// `DEADLINE_EXCEEDED` when the deadline passes first.
    pub(crate) struct Observed {
        #[pin]
        inner: Body,
        #[pin]
        deadline: Option<tokio::time::Sleep>,
        call: Call,
        done: bool,
    }
}

impl http_body::Body for Observed {
    type Data = Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, tonic::Status>>> {
        let mut this = self.project();
        if *this.done {
            return Poll::Ready(None);
        }
        if let Some(deadline) = this.deadline.as_mut().as_pin_mut()
            && deadline.poll(cx).is_ready()
        {
            *this.done = true;
            this.call.code = Some(tonic::Code::DeadlineExceeded);
            let mut trailers = HeaderMap::new();
            let status = tonic::Status::deadline_exceeded(
                "the call did not finish within its deadline (grpc-timeout)",
            );
            let _ = status.add_header(&mut trailers);
            return Poll::Ready(Some(Ok(http_body::Frame::trailers(trailers))));
        }
        let frame = std::task::ready!(this.inner.poll_frame(cx));
        match &frame {
            Some(Ok(f)) => {
                if let Some(code) = f.trailers_ref().and_then(status_of) {
                    this.call.code = Some(code);
                }
            }
            Some(Err(s)) => this.call.code = Some(s.code()),
            None => *this.done = true,
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.done || self.inner.is_end_stream()
    }
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<B> tower::Service<Request<B>> for GrpcEdges
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Response = Response<Observed>;
    type Error = Infallible;
    type Future = BoxFuture<Result<Response<Observed>, Infallible>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        tower::Service::<Request<B>>::poll_ready(&mut self.inner, cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let method = method_label(request.uri().path());
        let client = grpc_timeout(request.headers());
        let server = (!streaming(method)).then_some(self.service.limits().request_timeout);
        let bound = match (client, server) {
            (Some(c), Some(s)) => Some(c.min(s)),
            (c, s) => c.or(s),
        };
        let access = self.service.access_log.then(|| {
            request
                .extensions()
                .get::<Arc<crate::conn::Conn>>()
                .map(|c| c.peer)
        });
        let started = Instant::now();
        let response = tower::Service::call(&mut self.inner, request);
        Box::pin(async move {
            let mut call = Call {
                method,
                started,
                code: None,
                access,
            };
            let response = match bound {
                Some(d) => match tokio::time::timeout(d, response).await {
                    Ok(r) => r,
                    Err(_) => {
                        call.code = Some(tonic::Code::DeadlineExceeded);
                        let r: Response<Body> = tonic::Status::deadline_exceeded(format!(
                            "the call did not finish within its deadline of {} ms",
                            d.as_millis()
                        ))
                        .into_http();
                        Ok(r)
                    }
                },
                None => response.await,
            }?;
            // A trailers-only answer (an error before any message) has its status in
            // the headers, and nothing more to bound.
            let trailers_only = status_of(response.headers());
            call.code = call.code.or(trailers_only);
            let deadline = bound
                .filter(|_| trailers_only.is_none())
                .map(|d| tokio::time::sleep_until((started + d).into()));
            Ok(response.map(|inner| Observed {
                inner,
                deadline,
                call,
                done: false,
            }))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `grpc-timeout` in each of its units; malformed values (no unit, a bad unit, more than
    /// eight digits, none) are no deadline rather than a wrong one.
    #[test]
    fn grpc_timeout_reads_every_unit_and_refuses_malformed_values() {
        let read = |v: &str| {
            let mut h = HeaderMap::new();
            h.insert("grpc-timeout", v.parse().unwrap());
            grpc_timeout(&h)
        };
        assert_eq!(read("2H"), Some(Duration::from_secs(7200)));
        assert_eq!(read("3M"), Some(Duration::from_secs(180)));
        assert_eq!(read("10S"), Some(Duration::from_secs(10)));
        assert_eq!(read("250m"), Some(Duration::from_millis(250)));
        assert_eq!(read("99999999u"), Some(Duration::from_micros(99_999_999)));
        assert_eq!(read("5n"), Some(Duration::from_nanos(5)));
        for bad in ["10", "10s", "S", "123456789S", "-1S", "1.5S"] {
            assert_eq!(read(bad), None, "{bad}");
        }
        assert_eq!(grpc_timeout(&HeaderMap::new()), None);
    }

    /// Methods are labelled from a fixed set, so no client can add series.
    #[test]
    fn method_labels_are_bounded() {
        assert_eq!(
            method_label("/flakeid.v1.IdService/Next"),
            "flakeid.v1.IdService/Next"
        );
        assert_eq!(
            method_label("/grpc.health.v1.Health/Check"),
            "grpc.health.v1.Health/Check"
        );
        assert_eq!(
            method_label("/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"),
            "grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"
        );
        assert_eq!(
            method_label("/grpc.reflection.v1alpha.ServerReflection/Other"),
            "unknown"
        );
        assert_eq!(method_label("/evil.Service/random-123"), "unknown");
        assert!(
            streaming("flakeid.v1.IdService/Stream") && !streaming("flakeid.v1.IdService/Next")
        );
    }
}
