//! Claims on a real etcd (feature `etcd`), started here on 127.0.0.1 with free ports and a
//! temporary data dir, with real `flakeid gen` processes: a race for a pool, a holder
//! paused past its lease, `kill -9` and the next holder, the store stopped mid-run and
//! brought back, namespaces, and an unreachable store.
//!
//! Without an `etcd` binary each test prints why it skips; with `FLAKEID_REQUIRE_SERVERS`
//! set (CI sets it) a missing server fails the test instead.
#![cfg(feature = "etcd")]

use flakeid_fleet::procs;
use flakeid_fleet::scenarios as fleet;
use flakeid_fleet::{gen_scenarios, scenarios};

use std::process::Command;

use flakeid::claim::OpenOptions;
use std::time::Duration;

use fleet::{Process, Server, free_port, holders_keep_minting, stop_and_check_unique};

use flakeid_fleet::etcd::{Etcd, answers, etcd_available, member};
use flakeid_fleet::service::until;

scenarios!(Etcd::start, "etcd");

/// Three etcd members on loopback, one cluster; each its own process and data.
struct Cluster {
    members: Vec<(Process, u16, u16)>,
}

impl Cluster {
    fn start(name: &str) -> Option<Cluster> {
        if !etcd_available(name) {
            return None;
        }
        let ports: Vec<(u16, u16)> = (0..3).map(|_| (free_port(), free_port())).collect();
        let initial = ports
            .iter()
            .enumerate()
            .map(|(i, (_, peer))| format!("m{i}=http://127.0.0.1:{peer}"))
            .collect::<Vec<_>>()
            .join(",");
        let mut members = Vec::new();
        for (i, &ports) in ports.iter().enumerate() {
            let mut process = Process::new("etcd", &format!("{name}-m{i}"));
            let mut command = member(&process, &format!("m{i}"), ports, &initial, None);
            command.args(["--initial-cluster-state", "new"]);
            process.start(&mut command);
            members.push((process, ports.0, ports.1));
        }
        let cluster = Cluster { members };
        let (first, port) = (&cluster.members[0].0, cluster.members[0].1);
        {
            let url = cluster.url();
            fleet::wait_until_answers(
                port,
                Duration::from_secs(30),
                &first.dir.join("server.log"),
                || fleet::lists(flakeid_stores::open, &url),
            );
        }
        Some(cluster)
    }

    fn url(&self) -> String {
        let endpoints: Vec<String> = self
            .members
            .iter()
            .map(|(_, port, _)| format!("127.0.0.1:{port}"))
            .collect();
        format!("etcd://{}", endpoints.join(","))
    }
}

/// One member of a three-member cluster stops answering (SIGSTOP: a follower or the
/// leader, whichever it is), later another is killed: the holders, which were given all
/// three endpoints, keep minting throughout. Then a SIGTERM releases each claim (exit 143).
#[test]
fn holders_keep_minting_through_a_stalled_and_a_killed_etcd_member() {
    let _one = fleet::one_at_a_time();
    let Some(mut cluster) = Cluster::start("cluster") else {
        return;
    };
    let url = cluster.url();
    let holders: Vec<procs::Gen> = (0..2)
        .map(|_| {
            procs::spawn(&fleet::gen_args(
                &url,
                "cluster",
                &[
                    "--nodes",
                    "0..4",
                    "--ttl",
                    "10s",
                    "--window",
                    "5s",
                    "--max-wait",
                    "30s",
                    "-n",
                    "100000000",
                    "--rate",
                    "100",
                ],
            ))
        })
        .collect();
    for h in &holders {
        h.claimed_node();
        h.wait_for_ids(50);
    }
    cluster.members[0].0.signal("STOP");
    holders_keep_minting(&holders, Duration::from_secs(20), "member 0 stalled");
    cluster.members[0].0.signal("CONT");
    // Member 1 goes only once member 0 serves a linearizable read again (it has caught up
    // with the leader): otherwise the cluster would be left without a quorum.
    let first = format!("http://127.0.0.1:{}", cluster.members[0].1);
    assert!(
        until(Duration::from_secs(30), || answers(&first)),
        "member 0 did not rejoin after SIGCONT"
    );
    cluster.members[1].0.stop();
    holders_keep_minting(&holders, Duration::from_secs(20), "member 1 killed");
    let mut all = Vec::new();
    for h in holders {
        h.signal("TERM");
        let (status, ids) = h.finish(Duration::from_secs(20));
        assert_eq!(status.code(), Some(143), "SIGTERM: {status:?}");
        all.extend(ids);
    }
    let unique: std::collections::HashSet<_> = all.iter().collect();
    assert_eq!(unique.len(), all.len(), "a duplicate ID");
    let infos = flakeid_stores::open(&url, &OpenOptions::default())
        .unwrap()
        .list("cluster")
        .unwrap();
    assert!(
        infos
            .iter()
            .all(|i| i.state == flakeid::claim::NodeState::Released),
        "SIGTERM released every claim: {infos:?}"
    );
}

use flakeid_fleet::proxy;

/// A claim whose reply was lost (the connection cut right after the transaction that bound
/// node 0 to the claim's lease) is retried: the retry finds node 0 bound to its own lease
/// and takes it, instead of claiming node 1 and leaving node 0 to a lease nobody renews.
#[test]
fn a_claim_whose_reply_was_lost_finds_its_id_again() {
    let _one = fleet::one_at_a_time();
    let Some(server) = Etcd::start("lost-claim") else {
        return;
    };
    let proxy = proxy::Proxy::start(server.client_port);
    let through = flakeid_stores::open(
        &format!("etcd://127.0.0.1:{}", proxy.port),
        &OpenOptions::default(),
    )
    .unwrap();
    proxy.cut_after_request_containing(b"cut-me");
    let claimed = through
        .claim(&flakeid::claim::store::ClaimRequest {
            namespace: "lost-claim",
            pool: 0..2,
            instance: "cut-me",
        })
        .unwrap();
    assert_eq!(proxy.cuts(), 1, "the claim's transaction was not cut");
    assert_eq!(claimed.node, 0);
    let direct = flakeid_stores::open(&server.url(), &OpenOptions::default()).unwrap();
    let held: Vec<u64> = direct
        .list("lost-claim")
        .unwrap()
        .iter()
        .filter(|i| i.state == flakeid::claim::NodeState::Held)
        .map(|i| i.node)
        .collect();
    assert_eq!(held, [0], "an id held by a lease nobody renews");
    through.release(&claimed, 0).unwrap();
}

use flakeid_fleet::certs;

/// The password the secured servers' `flakeid` user has: every output is grepped for it.
const ETCD_PASSWORD: &str = "pw-etcd-7f3a9c";

/// An etcd that takes only TLS clients with a certificate its CA signed
/// (`--client-cert-auth`), with `auth enable`: `root`, and a user `flakeid` whose role
/// may read and write `flakeid/` only. Its auth tokens live 2 s (`--auth-token-ttl`), so
/// a holder's client must refresh its token between renewals.
struct SecuredEtcd {
    process: Process,
    client_port: u16,
    peer_port: u16,
    certs: certs::Certs,
    password_file: std::path::PathBuf,
    auth_on: bool,
}

impl SecuredEtcd {
    fn start(name: &str) -> Option<SecuredEtcd> {
        if !etcd_available(name) {
            return None;
        }
        let process = Process::new("etcds", name);
        let certs = certs::make(&process.dir.join("tls"), "ok", "flakeid-client");
        let password_file = process.dir.join("tls/etcd-password");
        flakeid_fleet::write_secret(&password_file, &format!("{ETCD_PASSWORD}\n"));
        let mut etcd = SecuredEtcd {
            process,
            client_port: free_port(),
            peer_port: free_port(),
            certs,
            password_file,
            auth_on: false,
        };
        etcd.launch();
        etcd.enable_auth();
        Some(etcd)
    }

    /// The URL with the TLS files and no user.
    fn tls_url(&self) -> String {
        format!(
            "etcds://127.0.0.1:{}?ca={}&cert={}&key={}",
            self.client_port,
            self.certs.ca.display(),
            self.certs.client_cert.display(),
            self.certs.client_key.display()
        )
    }

    /// Users, a role limited to `flakeid/`, and `auth enable`, through etcd's own client
    /// (over TLS, with the client certificate).
    fn enable_auth(&mut self) {
        use etcd_client::{Certificate, ConnectOptions, Identity, Permission, TlsOptions};
        let read = |p: &std::path::Path| std::fs::read(p).unwrap();
        let tls = TlsOptions::new()
            .ca_certificate(Certificate::from_pem(read(&self.certs.ca)))
            .identity(Identity::from_pem(
                read(&self.certs.client_cert),
                read(&self.certs.client_key),
            ));
        let endpoint = format!("https://127.0.0.1:{}", self.client_port);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let mut c =
                etcd_client::Client::connect([endpoint], Some(ConnectOptions::new().with_tls(tls)))
                    .await
                    .unwrap();
            c.user_add("root", "root-pw-1", None).await.unwrap();
            c.user_grant_role("root", "root").await.unwrap();
            c.role_add("flakeid").await.unwrap();
            c.role_grant_permission("flakeid", Permission::read_write("flakeid/").with_prefix())
                .await
                .unwrap();
            c.user_add("flakeid", ETCD_PASSWORD, None).await.unwrap();
            c.user_grant_role("flakeid", "flakeid").await.unwrap();
            c.user_add("outsider", ETCD_PASSWORD, None).await.unwrap();
            c.auth_enable().await.unwrap();
        });
        self.auth_on = true;
    }
}

impl Server for SecuredEtcd {
    fn url(&self) -> String {
        format!(
            "{}&user=flakeid&password-file={}",
            self.tls_url(),
            self.password_file.display()
        )
    }

    fn stop(&mut self) {
        self.process.stop();
    }

    fn launch(&mut self) {
        let peer = format!("flakeid-test=http://127.0.0.1:{}", self.peer_port);
        let mut command = member(
            &self.process,
            "flakeid-test",
            (self.client_port, self.peer_port),
            &peer,
            Some(&self.certs),
        );
        command.args(["--auth-token-ttl", "2"]);
        let url = if self.auth_on {
            self.url()
        } else {
            self.tls_url()
        };
        self.process.spawn(
            &mut command,
            self.client_port,
            Duration::from_secs(20),
            || fleet::lists(flakeid_stores::open, &url),
        );
    }
}

/// The fleet scenarios again, on the secured etcd: TLS with client
/// certificates, and a user whose tokens expire every 2 s.
mod over_tls {
    use super::*;
    gen_scenarios!(SecuredEtcd::start);
}

/// A secured etcd whose every answer comes 150 ms late (a slow link, or a busy host): the
/// connect (TCP, TLS, the user's authentication, the first request) takes longer than one
/// attempt (400 ms with a lease of 2 s), each round trip well within it. The store opens,
/// rather than beginning the handshake again at every attempt, then claims and renews.
#[test]
fn a_handshake_longer_than_one_attempt_still_ends() {
    let _one = fleet::one_at_a_time();
    let Some(server) = SecuredEtcd::start("slow-link") else {
        return;
    };
    let link = proxy::Proxy::start(server.client_port);
    link.set_reply_delay(Duration::from_millis(150));
    let url = server.url().replacen(
        &format!(":{}", server.client_port),
        &format!(":{}", link.port),
        1,
    );
    let options = OpenOptions::default().ttl(Duration::from_secs(2));
    let started = std::time::Instant::now();
    let store = flakeid_stores::open(&url, &options)
        .unwrap_or_else(|e| panic!("a slow link refused after {:?}: {e}", started.elapsed()));
    let took = started.elapsed();
    assert!(
        took > Duration::from_millis(400),
        "the connect took {took:?}, within one attempt: the link was not slow enough to test this"
    );
    // The link at full speed again: each request of a claim is several round trips.
    link.set_reply_delay(Duration::ZERO);
    fleet::claims_and_renews(&*store, "slow-link");
}

/// Claims with the right CA, certificate, user and password; each wrong credential its
/// own refusal; the token refreshed after etcd expired it.
#[test]
fn a_secured_etcd_takes_the_right_credentials_and_refuses_each_wrong_one() {
    use flakeid::claim::store::ClaimRequest;
    use flakeid::claim::{ClaimErrorKind, OpenOptions, Secret};
    let _one = fleet::one_at_a_time();
    let Some(server) = SecuredEtcd::start("refusals") else {
        return;
    };
    let options = OpenOptions::default().ttl(Duration::from_secs(10));
    let store = flakeid_stores::open(&server.url(), &options).unwrap();
    let request = ClaimRequest {
        namespace: "secured",
        pool: 0..4,
        instance: "tls-holder",
    };
    let claimed = store.claim(&request).unwrap();
    // Idle past the token's 2 s life: the renewal's client authenticates again.
    std::thread::sleep(Duration::from_secs(4));
    store.renew(&claimed, 1).unwrap();
    let infos = store.list("secured").unwrap();
    assert_eq!(infos[0].holder.as_deref(), Some("tls-holder"), "{infos:?}");
    store.release(&claimed, 1).unwrap();

    let certs = &server.certs;
    let other = certs::make(&server.process.dir.join("other"), "other", "flakeid-client");
    let port = server.client_port;
    let pw = format!("password-file={}", server.password_file.display());
    let wrong_pw = server.process.dir.join("tls/wrong");
    flakeid_fleet::write_secret(&wrong_pw, "not-the-password");
    let cases = [
        (
            "a CA that did not sign the server",
            format!(
                "etcds://127.0.0.1:{port}?ca={}&cert={}&key={}&user=flakeid&{pw}",
                other.ca.display(),
                certs.client_cert.display(),
                certs.client_key.display()
            ),
            "server's certificate is not trusted",
        ),
        (
            "no client certificate",
            format!(
                "etcds://127.0.0.1:{port}?ca={}&user=flakeid&{pw}",
                certs.ca.display()
            ),
            "client certificate",
        ),
        (
            "a client certificate of another CA",
            format!(
                "etcds://127.0.0.1:{port}?ca={}&cert={}&key={}&user=flakeid&{pw}",
                certs.ca.display(),
                other.client_cert.display(),
                other.client_key.display()
            ),
            // The alert (BadCertificate) arrives, or under TLS 1.3 only a closed
            // connection: either way a refusal naming the client certificate.
            "client certificate",
        ),
        (
            "a wrong password",
            format!(
                "{}&user=flakeid&password-file={}",
                server.tls_url(),
                wrong_pw.display()
            ),
            "the user or its password was refused",
        ),
        (
            "a user without a role on flakeid/",
            format!("{}&user=outsider&{pw}", server.tls_url()),
            "permission denied",
        ),
        (
            "plain text to a TLS server",
            format!("etcd://127.0.0.1:{port}"),
            "",
        ),
    ];
    for (what, url, says) in cases {
        let started = std::time::Instant::now();
        let err = flakeid_stores::open(&url, &options)
            .and_then(|s| s.claim(&request))
            .err()
            .unwrap_or_else(|| panic!("{what}: the claim was taken"));
        let text = format!("{err} / {err:?}");
        assert!(!text.contains(ETCD_PASSWORD), "{what}: {text}");
        if says.is_empty() {
            assert!(
                !matches!(err.kind(), ClaimErrorKind::Settings),
                "{what}: {text}"
            );
            continue;
        }
        assert_eq!(err.kind(), ClaimErrorKind::Access, "{what}: {text}");
        assert!(text.contains(says), "{what}: {text}");
        // A refusal is an answer: it is not retried until the timeout (but a connection
        // closed after the handshake is, until it is clear it always is).
        let bound = if says.contains("client certificate") {
            options.timeout * 2
        } else {
            options.timeout
        };
        assert!(
            started.elapsed() < bound,
            "{what}: took {:?}",
            started.elapsed()
        );
    }
    // The password from the options instead of a file.
    let url = format!("{}&user=flakeid", server.tls_url());
    let with = options.clone().password(Secret::new(ETCD_PASSWORD));
    let store = flakeid_stores::open(&url, &with).unwrap();
    let claimed = store.claim(&request).unwrap();
    store.release(&claimed, 1).unwrap();
    assert!(!format!("{store:?} {with:?}").contains(ETCD_PASSWORD));
}

/// Secrets hygiene (`flakeid_fleet::hygiene`): the etcd password never shows.
#[test]
fn the_etcd_password_shows_nowhere() {
    let _one = fleet::one_at_a_time();
    let Some(server) = SecuredEtcd::start("hygiene") else {
        return;
    };
    let without_password = format!("{}&user=flakeid", server.tls_url());
    flakeid_fleet::hygiene::the_password_shows_nowhere(&flakeid_fleet::hygiene::Secured {
        url: &server.url(),
        without_password: &without_password,
        password_file: &server.password_file.display().to_string(),
        password: ETCD_PASSWORD,
    });
}

use flakeid_fleet::stale_member;

/// A keep-alive answered with a TTL of 0, or not answered at all, by a member whose lessor
/// does not know the lease (a leader just elected and still applying its log, a stale
/// leader resumed from a pause) is not proof that the lease is gone: the transaction that
/// follows finds `nodes/N` still bound to it. The holder keeps its lease alive through
/// another member and goes on minting.
#[test]
fn a_keep_alive_answered_by_a_member_that_does_not_know_the_lease_loses_nothing() {
    let _one = fleet::one_at_a_time();
    let Some(server) = Etcd::start("stale") else {
        return;
    };
    let stale = stale_member::StaleMember::start(server.client_port);
    let url = format!(
        "etcd://127.0.0.1:{},127.0.0.1:{}",
        stale.port, server.client_port
    );
    for mode in [stale_member::Mode::TtlZero, stale_member::Mode::Silent] {
        stale.set_mode(stale_member::Mode::Forward);
        let ns = format!("stale-{}", mode as u8);
        let args = [
            "--nodes",
            "0..4",
            "--ttl",
            "3s",
            "--window",
            "3s",
            "--max-wait",
            "10s",
            "-n",
            "100000000",
            "--rate",
            "100",
        ];
        let holders = fleet::holders(&url, &ns, &args, 2);
        let before = stale.answered();
        stale.set_mode(mode);
        // Three TTLs: every holder meets the answer at its first renewal, moves on, and
        // keeps its lease.
        holders_keep_minting(&holders, Duration::from_secs(9), &format!("{mode:?}"));
        assert!(
            stale.answered() >= before + 2,
            "{mode:?}: the stale member answered {} keep-alives: the holders never met it",
            stale.answered() - before
        );
        stop_and_check_unique(holders);
    }
}

/// Three members behind proxies of the tests' own, in the order given: the URL lists the
/// proxies.
struct Proxied {
    cluster: Cluster,
    proxies: Vec<proxy::Proxy>,
}

impl Proxied {
    fn start(name: &str) -> Option<Proxied> {
        let cluster = Cluster::start(name)?;
        let proxies = cluster
            .members
            .iter()
            .map(|(_, port, _)| proxy::Proxy::start(*port))
            .collect();
        Some(Proxied { cluster, proxies })
    }

    /// The index of the member that leads now, as the members say.
    fn leader(&self) -> usize {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let mut ids = Vec::new();
            let mut leader = None;
            for (_, port, _) in &self.cluster.members {
                let mut client = etcd_client::Client::connect([format!("127.0.0.1:{port}")], None)
                    .await
                    .unwrap();
                let status = client.status().await.unwrap();
                ids.push(status.header().unwrap().member_id());
                leader = Some(status.leader());
            }
            ids.iter().position(|id| Some(*id) == leader).unwrap()
        })
    }

    /// The URL through the proxies, `first` in front.
    fn url_from(&self, first: usize) -> String {
        let order = (0..self.proxies.len()).map(|i| (first + i) % self.proxies.len());
        let endpoints: Vec<String> = order
            .map(|i| format!("127.0.0.1:{}", self.proxies[i].port))
            .collect();
        format!("etcd://{}", endpoints.join(","))
    }
}

/// The per-attempt bound follows from the lease TTL, so at the smallest TTL the
/// tool accepts (2 s; 1 s is refused, naming 2 s), a renewal that meets the member in use
/// blackholed reaches the next member with time left. The member in use (each holder's
/// first endpoint) is blackholed for four TTLs, the leader in one round and a follower in
/// the other: every holder keeps minting.
#[test]
fn at_the_smallest_ttl_a_blackholed_member_in_use_loses_no_holder() {
    let _one = fleet::one_at_a_time();
    let Some(proxied) = Proxied::start("blackhole") else {
        return;
    };
    let refused = Command::new(env!("CARGO_BIN_EXE_flakeid"))
        .args([
            "gen",
            "-n",
            "1",
            "--claim",
            &proxied.url_from(0),
            "--ttl",
            "1s",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--ttl") && stderr.contains("too short") && stderr.contains("at least 2s"),
        "{stderr}"
    );
    for role in ["leader", "follower"] {
        let leader = proxied.leader();
        let in_use = match role {
            "leader" => leader,
            _ => (leader + 1) % 3,
        };
        let url = proxied.url_from(in_use);
        let args = [
            "--nodes",
            "0..4",
            "--ttl",
            "2s",
            "--max-wait",
            "10s",
            "-n",
            "100000000",
            "--rate",
            "100",
        ];
        let holders = fleet::holders(&url, role, &args, 2);
        assert!(
            proxied.proxies[in_use].connections() > 0,
            "{role}: the holders do not use member {in_use}"
        );
        proxied.proxies[in_use].set_blackholed(true);
        holders_keep_minting(
            &holders,
            Duration::from_secs(8),
            &format!("{role} blackholed"),
        );
        proxied.proxies[in_use].set_blackholed(false);
        stop_and_check_unique(holders);
    }
}

/// The leases the holders' node keys are bound to, by node id.
fn leases_of(endpoint: &str, ns: &str) -> std::collections::BTreeMap<String, i64> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut client = etcd_client::Client::connect([endpoint], None)
            .await
            .unwrap();
        let prefix = format!("flakeid/{ns}/nodes/");
        let found = client
            .get(
                prefix.as_str(),
                Some(etcd_client::GetOptions::new().with_prefix()),
            )
            .await
            .unwrap();
        found
            .kvs()
            .iter()
            .map(|kv| (String::from_utf8_lossy(kv.key()).into_owned(), kv.lease()))
            .collect()
    })
}

/// A lease the cluster revokes under a live holder that kept it alive (what etcd 3.4 does
/// when a leader resumes after a pause longer than the TTL: it revokes every lease it
/// thinks expired, after it stepped down; seen here as "claim lost" in the stalled-member
/// scenario), while nobody else takes the id, does not end the holder: its next renewal
/// finds `nodes/N` gone and `reserved/N` as it wrote it, attaches the claim to a new lease,
/// and it goes on minting. Here the revocation is made by a client of the test's own.
#[test]
fn a_lease_revoked_under_a_live_holder_is_attached_again() {
    let _one = fleet::one_at_a_time();
    let Some(server) = Etcd::start("revoked") else {
        return;
    };
    let url = server.url();
    let endpoint = format!("127.0.0.1:{}", server.client_port);
    let args = [
        "--nodes",
        "0..4",
        "--ttl",
        "3s",
        "--max-wait",
        "10s",
        "-n",
        "100000000",
        "--rate",
        "100",
    ];
    let holders = fleet::holders(&url, "revoked", &args, 2);
    let before = leases_of(&endpoint, "revoked");
    assert_eq!(before.len(), 2, "{before:?}");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut client = etcd_client::Client::connect([endpoint.as_str()], None)
            .await
            .unwrap();
        for lease in before.values() {
            client.lease_revoke(*lease).await.unwrap();
        }
    });
    assert!(
        leases_of(&endpoint, "revoked").is_empty(),
        "the revocation left the node keys"
    );
    // Past the window: a holder that lost its claim would have stopped at its fence.
    holders_keep_minting(&holders, Duration::from_secs(5), "leases revoked");
    let after = leases_of(&endpoint, "revoked");
    assert_eq!(
        after.keys().collect::<Vec<_>>(),
        before.keys().collect::<Vec<_>>(),
        "the holders hold the same ids again; they said {:?}",
        holders
            .iter()
            .map(procs::Gen::lines_now)
            .collect::<Vec<_>>()
    );
    assert!(
        after.iter().all(|(key, lease)| before[key] != *lease),
        "on new leases: {before:?} -> {after:?}"
    );
    stop_and_check_unique(holders);
}

impl flakeid_fleet::campaign::Ensemble for Proxied {
    fn url(&self) -> String {
        self.url_from(0)
    }

    fn kill_member(&mut self, i: usize) {
        self.cluster.members[i].0.stop();
    }

    fn restart_member(&mut self, i: usize) {
        let initial = self
            .cluster
            .members
            .iter()
            .enumerate()
            .map(|(k, (_, _, peer))| format!("m{k}=http://127.0.0.1:{peer}"))
            .collect::<Vec<_>>()
            .join(",");
        let (process, client, peer) = &mut self.cluster.members[i];
        let mut command = member(process, &format!("m{i}"), (*client, *peer), &initial, None);
        process.start(&mut command);
        {
            let url = format!("etcd://127.0.0.1:{client}");
            fleet::wait_until_answers(
                *client,
                Duration::from_secs(30),
                &process.dir.join("server.log"),
                || fleet::lists(flakeid_stores::open, &url),
            );
        }
    }

    fn set_partitioned(&self, i: usize, cut: bool) {
        self.proxies[i].set_blackholed(cut);
    }

    fn take_claim_away(&self, namespace: &str, node: u64) {
        let key = format!("flakeid/{namespace}/nodes/{node}");
        let endpoints = self.direct();
        flakeid_fleet::block_on(async move {
            if let Ok(mut client) = etcd_client::Client::connect(endpoints, None).await {
                let _ =
                    tokio::time::timeout(Duration::from_secs(5), client.delete(key, None)).await;
            }
        });
    }

    fn revoke_lease(&self, namespace: &str, node: u64) -> bool {
        let key = format!("flakeid/{namespace}/nodes/{node}");
        let endpoints = self.direct();
        flakeid_fleet::block_on(async move {
            let Ok(mut client) = etcd_client::Client::connect(endpoints, None).await else {
                return true;
            };
            let got = tokio::time::timeout(Duration::from_secs(5), client.get(key, None)).await;
            if let Ok(Ok(got)) = got
                && let Some(kv) = got.kvs().first()
                && kv.lease() != 0
            {
                let _ =
                    tokio::time::timeout(Duration::from_secs(5), client.lease_revoke(kv.lease()))
                        .await;
            }
            true
        })
    }
}

impl Proxied {
    /// The members' own client addresses (not through the proxies).
    fn direct(&self) -> Vec<String> {
        self.cluster
            .members
            .iter()
            .map(|(_, port, _)| format!("127.0.0.1:{port}"))
            .collect()
    }
}

/// The fault campaign (`flakeid_fleet::campaign`) on a three-member cluster: servers
/// killed and paused, members killed and partitioned, claims deleted by hand and their
/// leases revoked, streams held open; no ID handed out twice. Long: run by hand.
#[test]
#[ignore = "a long campaign: cargo test -p flakeid-cli --test etcd -- --ignored campaign (FLAKEID_CAMPAIGN_SECONDS)"]
fn campaign_on_a_three_member_cluster() {
    let _one = fleet::one_at_a_time();
    let Some(mut proxied) = Proxied::start("campaign") else {
        return;
    };
    flakeid_fleet::campaign::campaign(&mut proxied);
}
