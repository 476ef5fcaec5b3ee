//! [`Service`]: what the routes share (the minter, the layout and its decoder, the
//! metrics handle, the tokens, the limits, the drain), built by [`ServiceBuilder`].

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use arc_swap::ArcSwapOption;
use flakeid::Layout;
use flakeid::decode::Decoder;
use flakeid_text::batch::Batch;
use metrics_exporter_prometheus::PrometheusHandle;

use crate::{Limits, Minter, Readiness, ServiceError, TlsKeys, Tokens};

/// What the routes share: the minter (absent while node ids are being claimed), the
/// layout and its batch decoder, the metrics handle, the tokens, the limits, and whether
/// the server is draining.
pub struct Service {
    minter: ArcSwapOption<Minter>,
    /// Why there is no minter (claiming, re-claiming), for readiness and 503s.
    waiting: Mutex<String>,
    layout: Layout,
    decoder: Decoder,
    pub(crate) metrics: Option<PrometheusHandle>,
    tokens: Option<Arc<Tokens>>,
    tls: Option<Arc<TlsKeys>>,
    limits: Limits,
    pub(crate) access_log: bool,
    /// How long before the layout's end `/readyz` warns (zero: never).
    end_warning: std::time::Duration,
    draining: AtomicBool,
    /// The tasks a request starts that outlive it (gRPC streams), awaited at the drain.
    pub(crate) tasks: tokio_util::task::TaskTracker,
    /// Cancelled when the drain bound has passed: streams still open end.
    pub(crate) ended: tokio_util::sync::CancellationToken,
    http_metrics: std::sync::OnceLock<crate::metrics::HttpMetrics>,
    minted: std::sync::OnceLock<::metrics::Counter>,
}

impl std::fmt::Debug for Service {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Service")
            .field("layout", &self.layout)
            .field("minter", &self.minter.load().as_deref().map(Minter::shards))
            .field("tokens", &self.tokens)
            .field("draining", &self.draining.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// Builds a [`Service`]: [`Service::builder`].
#[derive(Debug)]
pub struct ServiceBuilder {
    layout: Layout,
    minter: Option<Minter>,
    pub(crate) metrics: Option<PrometheusHandle>,
    tokens: Option<Arc<Tokens>>,
    tls: Option<Arc<TlsKeys>>,
    limits: Limits,
    pub(crate) access_log: bool,
    end_warning: std::time::Duration,
}

impl ServiceBuilder {
    /// Mints with `minter` from the start (else the service answers 503 "claiming" until
    /// [`Service::install`]).
    pub fn minter(mut self, minter: Minter) -> Self {
        self.minter = Some(minter);
        self
    }

    /// `/metrics` renders this recorder's handle (else it answers 404).
    pub fn metrics(mut self, handle: PrometheusHandle) -> Self {
        self.metrics = Some(handle);
        self
    }

    /// The mint and decode routes (HTTP and gRPC) require `Authorization: Bearer <token>`
    /// with one of these tokens; the probes and `/metrics` stay open.
    pub fn tokens(mut self, tokens: Arc<Tokens>) -> Self {
        self.tokens = Some(tokens);
        self
    }

    /// The TLS pair [`Service::reload`] reads again.
    pub fn tls(mut self, tls: Arc<TlsKeys>) -> Self {
        self.tls = Some(tls);
        self
    }

    /// The bounds the routes apply (decode size, concurrent batches, streams per
    /// connection, the request deadline).
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// One `info` event per request (target `flakeid_serve::access`).
    pub fn access_log(mut self, on: bool) -> Self {
        self.access_log = on;
        self
    }

    /// How long before the layout runs out `/readyz` says so (default
    /// [`END_WARNING`](flakeid::layout::END_WARNING), a year; zero never): a `warning`
    /// beside `"status":"ready"`, also past the end (the service still decodes; mints are
    /// refused with the layout's end).
    pub fn end_warning(mut self, margin: std::time::Duration) -> Self {
        self.end_warning = margin;
        self
    }

    /// The service.
    pub fn build(self) -> Arc<Service> {
        Arc::new(Service {
            decoder: Decoder::new(&self.layout),
            layout: self.layout,
            minter: ArcSwapOption::from(self.minter.map(Arc::new)),
            waiting: Mutex::new("claiming node ids".into()),
            metrics: self.metrics,
            tokens: self.tokens,
            tls: self.tls,
            limits: self.limits,
            access_log: self.access_log,
            end_warning: self.end_warning,
            draining: AtomicBool::new(false),
            tasks: tokio_util::task::TaskTracker::new(),
            ended: tokio_util::sync::CancellationToken::new(),
            http_metrics: std::sync::OnceLock::new(),
            minted: std::sync::OnceLock::new(),
        })
    }
}

impl Service {
    /// A service minting with `minter`; `/metrics` renders `metrics` if given (the
    /// handle of the Prometheus recorder the process installed), else answers 404.
    pub fn new(minter: Minter, metrics: Option<PrometheusHandle>) -> Arc<Service> {
        let mut b = Service::builder(*minter.layout()).minter(minter);
        b.metrics = metrics;
        b.build()
    }

    /// A service of `layout`, to set up step by step.
    pub fn builder(layout: Layout) -> ServiceBuilder {
        ServiceBuilder {
            layout,
            minter: None,
            metrics: None,
            tokens: None,
            tls: None,
            limits: Limits::default(),
            access_log: false,
            end_warning: flakeid::layout::END_WARNING,
        }
    }

    /// What `/readyz` says beside "ready" when the layout runs out within the service's
    /// end warning ([`ServiceBuilder::end_warning`]), or ran out: its end and the days
    /// left. A layout that ran out stays ready: its IDs still decode, and a mint request
    /// gets the error that says the layout ended.
    pub fn layout_warning(&self) -> Option<String> {
        flakeid_text::layout::ending_text(&self.layout, self.end_warning, now_unix_ns())
    }

    /// Whether requests must carry a token (`--token`): without, every request is admitted.
    pub(crate) fn takes_tokens(&self) -> bool {
        self.tokens.is_some()
    }

    /// Whether a request with this `Authorization` header value may mint and decode.
    pub fn admits(&self, authorization: Option<&[u8]>) -> bool {
        self.tokens.as_ref().is_none_or(|t| t.admits(authorization))
    }

    /// The minter, or why the service does not mint now (its node ids are being claimed).
    pub fn minter(&self) -> Result<Arc<Minter>, ServiceError> {
        match self.minter.load_full() {
            Some(m) => Ok(m),
            None => Err(ServiceError::NotServing(self.waiting_reason())),
        }
    }

    /// Calls `f` with the minter without taking a reference count (the single-ID fast
    /// path), or says why there is none.
    #[inline]
    pub(crate) fn with_minter<T>(&self, f: impl FnOnce(&Minter) -> T) -> Result<T, ServiceError> {
        match &*self.minter.load() {
            Some(m) => Ok(f(m)),
            None => Err(ServiceError::NotServing(self.waiting_reason())),
        }
    }

    fn waiting_reason(&self) -> String {
        self.waiting
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Counts `n` IDs handed out (`flakeid_ids_minted_total`, its handle made once).
    pub(crate) fn count_minted(&self, n: u64) {
        self.minted
            .get_or_init(|| ::metrics::counter!("flakeid_ids_minted_total"))
            .increment(n);
    }

    /// The HTTP series' handles.
    pub(crate) fn http_metrics(&self) -> &crate::metrics::HttpMetrics {
        self.http_metrics
            .get_or_init(crate::metrics::HttpMetrics::new)
    }

    /// What readiness and 503s say while there is no minter.
    pub(crate) fn set_waiting(&self, why: String) {
        *self.waiting.lock().unwrap_or_else(|e| e.into_inner()) = why;
    }

    /// Mints with `minter` from now on.
    pub fn install(&self, minter: Minter) {
        self.minter.store(Some(Arc::new(minter)));
    }

    /// Stops minting, saying `why` in readiness and 503s, and gives back the minter (its
    /// claims are released when the last request using it lets go).
    pub fn uninstall(&self, why: impl Into<String>) -> Option<Arc<Minter>> {
        self.set_waiting(why.into());
        self.minter.swap(None)
    }

    /// The layout IDs are minted and decoded in.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The limits the routes apply.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Reads the token file and the TLS certificate and key again (SIGHUP): the new ones
    /// serve from the next request and handshake on; ones that do not load leave those
    /// in use, and the error says why. Logged either way.
    pub fn reload(&self) -> Vec<String> {
        let tokens = self.tokens.as_deref().map(crate::token::reload_tokens);
        let tls = self.tls.as_deref().map(crate::tls::reload_tls);
        tokens
            .into_iter()
            .chain(tls)
            .filter_map(Result::err)
            .collect()
    }

    /// Marks the service draining: `/readyz` answers 503 from now on, so load balancers
    /// stop sending to it while in-flight requests finish.
    pub fn drain(&self) {
        self.draining.store(true, Ordering::SeqCst);
    }

    /// Whether [`Service::drain`] was called.
    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst)
    }

    /// An empty batch on this service's decoder, for [`Service::decode_into`].
    pub fn batch(&self) -> Batch {
        Batch::new(self.decoder.clone())
    }

    /// Decodes `ids` into `batch`, or says which ID does not fit the layout (the message
    /// the HTTP and gRPC routes answer with): its element number is `offset` plus its
    /// index in `ids`, for a request decoded a part at a time.
    pub fn decode_into(
        &self,
        ids: &[u64],
        offset: usize,
        batch: &mut Batch,
    ) -> Result<(), ServiceError> {
        batch.decode_slice(ids).map_err(|e| {
            let bad = match e {
                flakeid::Error::IdOutOfLayout {
                    id, index: Some(i), ..
                } => format!("ID {id} (element {}): ", offset + i),
                _ => String::new(),
            };
            ServiceError::BadRequest(format!(
                "{bad}{e}; send IDs of the server's layout ({})",
                self.layout
            ))
        })
    }

    /// Whether every node id can mint now, and if not why.
    pub fn readiness(&self) -> Readiness {
        if self.is_draining() {
            return Readiness::NotReady("draining: the server is shutting down".into());
        }
        match &*self.minter.load() {
            Some(m) => m.readiness(),
            None => Readiness::NotReady(self.waiting_reason()),
        }
    }
}

/// The wall clock, in Unix nanoseconds.
fn now_unix_ns() -> i128 {
    i128::from(flakeid::Clock::unix_ns(&flakeid::clock::SystemClock))
}
