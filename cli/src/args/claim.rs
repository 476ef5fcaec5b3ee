//! The claim flags: where node ids are claimed (`gen`, `serve`, `claims`), how a holder
//! claims, and what `claims` lists or repairs.

use clap::Args;

use super::values::{duration, node_range, non_negative};

/// Where node ids are claimed: shared by `gen` and `claims`.
#[derive(Args, Default)]
pub(crate) struct ClaimStoreArgs {
    /// The claim store: file:DIR (one host: OS locks and fsynced reservations in DIR),
    /// etcd://HOST:PORT[,HOST:PORT...], zookeeper://HOST:PORT[,HOST:PORT...],
    /// postgres://ROLE@HOST[:PORT][,HOST[:PORT]...]/DB, memory: (this process only),
    /// static:N (node N, no fence), static:pod[+K] (a StatefulSet pod's ordinal from
    /// $POD_NAME or $HOSTNAME, plus K; no fence). TLS and auth in the query:
    /// etcds://HOST:PORT?ca=FILE&cert=FILE&key=FILE&user=NAME,
    /// zookeeper://HOST:PORT?user=NAME&read=open|creator,
    /// postgres://ROLE@HOST/DB?sslmode=verify-full&sslrootcert=FILE&schema=NAME.
    #[arg(long, value_name = "URL", env = "FLAKEID_CLAIM")]
    pub(crate) claim: Option<String>,
    /// The password of the --claim URL's user (etcd user, ZooKeeper digest, PostgreSQL
    /// role), read from FILE; or set FLAKEID_CLAIM_PASSWORD in the environment. Never on
    /// the command line.
    #[arg(
        long,
        value_name = "FILE",
        requires = "claim",
        env = "FLAKEID_CLAIM_PASSWORD_FILE"
    )]
    pub(crate) claim_password_file: Option<std::path::PathBuf>,
    /// The namespace claims live in: one ID space, of one layout. Generators whose IDs go
    /// into the same table must share it; node ids of different namespaces are independent
    /// (two namespaces can hold equal IDs). Default: "default" (`claims` without it lists
    /// every namespace).
    #[arg(long, env = "FLAKEID_NAMESPACE")]
    pub(crate) namespace: Option<String>,
}

impl ClaimStoreArgs {
    /// The namespace given, else the default one.
    pub(crate) fn namespace(&self) -> &str {
        self.namespace
            .as_deref()
            .unwrap_or(flakeid::claim::DEFAULT_NAMESPACE)
    }
}

#[derive(Args, Default)]
pub(crate) struct ClaimArgs {
    #[command(flatten)]
    pub(crate) store: ClaimStoreArgs,
    /// With --claim: the pool of node ids, A..B (B excluded); the lowest free one is taken.
    /// Default: the layout's whole node field.
    #[arg(long, value_parser = node_range, requires = "claim", env = "FLAKEID_NODES")]
    pub(crate) nodes: Option<std::ops::Range<u64>>,
    /// With --claim: how far ahead of the clock the reservation runs (renewed every third
    /// of it). Longer: fewer writes, a longer wait for a dead holder's id.
    #[arg(long, value_parser = duration, requires = "claim", env = "FLAKEID_WINDOW")]
    pub(crate) window: Option<std::time::Duration>,
    /// With --claim: this process's name in the store (default host:pid).
    #[arg(long, requires = "claim", env = "FLAKEID_INSTANCE")]
    pub(crate) instance: Option<String>,
    /// With --claim on a coordinator (etcd://, zookeeper://): the lease TTL (ZooKeeper:
    /// the session timeout). A holder that stops
    /// renewing (paused, cut off, killed) loses its id this long after its last renewal.
    #[arg(long, value_parser = duration, requires = "claim", env = "FLAKEID_TTL")]
    pub(crate) ttl: Option<std::time::Duration>,
    /// With --claim: how long to wait for an id when every id of the pool is held (a dead
    /// holder's lease runs out after its TTL).
    #[arg(long, value_parser = duration, requires = "claim", env = "FLAKEID_POOL_WAIT")]
    pub(crate) pool_wait: Option<std::time::Duration>,
}

#[derive(Args)]
pub(crate) struct ClaimsArgs {
    #[command(flatten)]
    pub(crate) store: ClaimStoreArgs,
    /// One JSON object per line instead of a table: one per node id with --namespace, one
    /// per namespace (with its node ids) without.
    #[arg(long)]
    pub(crate) json: bool,
    /// Repair node NODE of --namespace (its reservation unreadable, or removed by hand):
    /// store a reservation --window past now and past what was stored, so the next holder
    /// starts after anything its last holder could have minted. Refused while it is held.
    #[arg(long, value_name = "NODE", value_parser = non_negative, requires = "namespace")]
    pub(crate) repair: Option<u64>,
    /// With --repair: how far past now the repaired reservation reaches. Give at least the
    /// longest --window the namespace's holders use, plus how far their clocks may run
    /// ahead of this one.
    #[arg(long, value_parser = duration, default_value = "5s", requires = "repair")]
    pub(crate) window: std::time::Duration,
}
