//! Claims on a real ZooKeeper (feature `zookeeper`), started here in standalone mode on
//! 127.0.0.1 with a free port and a temporary config and data dir, with real `flakeid gen`
//! processes: the same scenarios as `etcd.rs` (the `flakeid-fleet` harness).
//!
//! Without `java` and Debian's ZooKeeper jars each test prints why it skips; with
//! `FLAKEID_REQUIRE_SERVERS` set (CI sets it) a missing server fails the test instead.
#![cfg(feature = "zookeeper")]

use flakeid_fleet::procs;
use flakeid_fleet::scenarios as fleet;
use flakeid_fleet::scenarios;

use std::process::Command;
use std::time::Duration;

use fleet::{Process, Server, free_port, holders_keep_minting, stop_and_check_unique};

use flakeid_fleet::zookeeper::ZooKeeper;

scenarios!(ZooKeeper::start, "zookeeper");

use flakeid_fleet::{lost_replies, proxy};

use flakeid::claim::store::ClaimRequest;
use flakeid::claim::{Claims, OpenOptions};

/// 2027-01-15T08:00:00Z.
const T: u64 = 1_800_000_000_000_000_000;

/// A renewal whose write ZooKeeper applied but whose reply was lost (the connection reset
/// right after the multi, which carries the reservation's `held`) is not a lost claim: the
/// next renewal reads back, sees its session still owns the claim, adopts the version and
/// goes on.
#[test]
fn a_lost_reply_to_a_renewal_does_not_lose_the_claim() {
    let _one = fleet::one_at_a_time();
    let Some(zk) = ZooKeeper::start("lost-reply") else {
        return;
    };
    lost_replies::a_lost_reply_to_a_renewal_does_not_lose_the_claim(
        flakeid_stores::open,
        &zk.url(),
        zk.port,
        b" held ",
    );
}

/// A claim whose reply was lost (the multi carries the claim's record, `HOLDER\nclaim
/// TOKEN`) is recognised as this claim's by its token when read back: taken, not left as
/// an id held by the process's own session while it claims another.
#[test]
fn a_lost_reply_to_a_claim_takes_the_claim_it_made() {
    let _one = fleet::one_at_a_time();
    let Some(zk) = ZooKeeper::start("lost-claim-reply") else {
        return;
    };
    lost_replies::a_lost_reply_to_a_claim_takes_the_claim_it_made(
        flakeid_stores::open,
        &zk.url(),
        zk.port,
        b"\nclaim ",
    );
}

/// A holder that exits without releasing (after "claim lost", say) leaves no ephemeral node
/// for a session timeout: dropping the store closes its session, so the node goes at once.
#[test]
fn dropping_the_store_closes_its_session_and_frees_its_ids() {
    let _one = fleet::one_at_a_time();
    let Some(zk) = ZooKeeper::start("close") else {
        return;
    };
    let url = zk.url();
    let options = OpenOptions::default().ttl(Duration::from_secs(20));
    let store = flakeid_stores::open(&url, &options).unwrap();
    let claimed = store
        .claim(&ClaimRequest {
            namespace: "close",
            pool: 0..1,
            instance: "gone",
        })
        .unwrap();
    assert_eq!(claimed.node, 0);
    drop(store);
    let other = flakeid_stores::open(&url, &OpenOptions::default()).unwrap();
    let listed = other.list("close").unwrap();
    assert_ne!(
        listed[0].state,
        flakeid::claim::NodeState::Held,
        "the ephemeral node outlived its store (a 20 s session): {listed:?}"
    );
}

/// The digest password the holder's identity has: every output is grepped for it.
const ZK_PASSWORD: &str = "pw-zk-41b7e2";

/// With digest auth the store's znodes are creator-only for writes: a second identity
/// gets NoAuth on setting or deleting `reserved/N` (through ZooKeeper's own client), an
/// unauthenticated store cannot take an id (a refusal, not a claim), while the holder
/// claims, renews, releases and claims again; `read=creator` hides the znodes from
/// others too.
#[test]
fn with_digest_auth_no_other_identity_can_rewrite_a_reservation() {
    use flakeid::claim::ClaimErrorKind;
    use zookeeper_client::Error as ZkError;
    let _one = fleet::one_at_a_time();
    let Some(zk) = ZooKeeper::start("digest") else {
        return;
    };
    let password_file = zk.process.dir.join("zk-password");
    flakeid_fleet::write_secret(&password_file, &format!("{ZK_PASSWORD}\n"));
    let url = format!(
        "{}?user=flakeid&password-file={}",
        zk.url(),
        password_file.display()
    );
    let options = OpenOptions::default().ttl(Duration::from_secs(10));
    let holder = flakeid_stores::open(&url, &options).unwrap();
    assert!(holder.warnings().is_empty(), "{:?}", holder.warnings());
    let request = ClaimRequest {
        namespace: "digest",
        pool: 0..2,
        instance: "holder",
    };
    let claimed = holder.claim(&request).unwrap();
    holder.renew(&claimed, T).unwrap();
    let reserved = format!("/flakeid/digest/reserved/{}", claimed.node);

    // A second identity, and no identity at all, through ZooKeeper's own client.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let hosts = format!("127.0.0.1:{}", zk.port);
    for auth in [Some(&b"intruder:guess"[..]), None] {
        runtime.block_on(async {
            let mut connector = zookeeper_client::Client::connector();
            if let Some(auth) = auth {
                connector = connector.with_auth("digest", auth);
            }
            let other = connector.connect(&hosts).await.unwrap();
            let (data, _) = other.get_data(&reserved).await.unwrap();
            assert!(data.starts_with(T.to_string().as_bytes()), "read is open");
            assert_eq!(
                other.set_data(&reserved, b"0 released x", None).await,
                Err(ZkError::NoAuth),
                "{auth:?} set {reserved}"
            );
            assert_eq!(
                other.delete(&reserved, None).await,
                Err(ZkError::NoAuth),
                "{auth:?} deleted {reserved}"
            );
        });
    }
    // An unauthenticated store, and a wrong password: refused, whether the id is held or
    // free.
    let wrong_file = zk.process.dir.join("zk-wrong");
    flakeid_fleet::write_secret(&wrong_file, "not-it");
    let wrong = format!(
        "{}?user=flakeid&password-file={}",
        zk.url(),
        wrong_file.display()
    );
    for round in ["held", "released"] {
        for other_url in [zk.url(), wrong.clone()] {
            let other = flakeid_stores::open(&other_url, &options).unwrap();
            let err = other.claim(&request).unwrap_err();
            assert_eq!(err.kind(), ClaimErrorKind::Access, "{round}: {err}");
            let text = format!("{err} {err:?}");
            assert!(text.contains("NoAuth"), "{text}");
            assert!(!text.contains(ZK_PASSWORD), "{text}");
        }
        if round == "held" {
            holder.release(&claimed, T + 1).unwrap();
        }
    }
    let unauthenticated = flakeid_stores::open(&zk.url(), &OpenOptions::default()).unwrap();
    assert!(
        unauthenticated.warnings()[0].contains("without a user"),
        "{:?}",
        unauthenticated.warnings()
    );
    // The holder's identity claims again, and reads its reservation back.
    let again = holder.claim(&request).unwrap();
    assert_eq!(again.node, claimed.node);
    assert_eq!(again.not_before_unix_ns, T + 1);
    holder.release(&again, T + 2).unwrap();

    // read=creator: others cannot even read.
    let closed = format!("{url}&read=creator");
    let hidden = flakeid_stores::open(&closed, &options).unwrap();
    let c = hidden
        .claim(&ClaimRequest {
            namespace: "hidden",
            pool: 0..2,
            instance: "holder",
        })
        .unwrap();
    runtime.block_on(async {
        let other = zookeeper_client::Client::connector()
            .connect(&hosts)
            .await
            .unwrap();
        assert_eq!(
            other
                .get_data(&format!("/flakeid/hidden/reserved/{}", c.node))
                .await
                .map(|_| ()),
            Err(ZkError::NoAuth)
        );
    });
    hidden.release(&c, T).unwrap();

    // Another identity in a root of its own (a chroot that exists) claims the same
    // namespace and ids, apart from the first.
    runtime.block_on(async {
        let admin = zookeeper_client::Client::connector()
            .connect(&hosts)
            .await
            .unwrap();
        let open = zookeeper_client::CreateMode::Persistent
            .with_acls(zookeeper_client::Acls::anyone_all());
        admin.create("/tenant-b", b"", &open).await.unwrap();
    });
    let tenant = format!(
        "zookeeper://127.0.0.1:{}/tenant-b?user=tenant-b&password-file={}",
        zk.port,
        wrong_file.display()
    );
    let other = flakeid_stores::open(&tenant, &options).unwrap();
    let theirs = other.claim(&request).unwrap();
    assert_eq!(theirs.node, 0);
    assert_eq!(
        theirs.not_before_unix_ns, 0,
        "a reservation of the other root"
    );
    other.release(&theirs, T).unwrap();
    let missing = format!("zookeeper://127.0.0.1:{}/no-such-root", zk.port);
    let err = flakeid_stores::open(&missing, &options)
        .and_then(|s| s.claim(&request))
        .unwrap_err();
    assert!(err.to_string().contains("chroot"), "{err}");

    // The tool with the digest URL: the password shows in no output, refused or not.
    let mut all = format!("{holder:?}{options:?}");
    for (args, ok) in [
        (
            vec![
                "gen",
                "-n",
                "2",
                "--claim",
                url.as_str(),
                "--namespace",
                "tool",
            ],
            true,
        ),
        (
            vec!["claims", "--claim", url.as_str(), "--namespace", "digest"],
            true,
        ),
        (
            vec![
                "claims",
                "--json",
                "--claim",
                url.as_str(),
                "--namespace",
                "digest",
            ],
            true,
        ),
        (
            vec![
                "gen",
                "-n",
                "2",
                "--claim",
                wrong.as_str(),
                "--namespace",
                "tool",
            ],
            false,
        ),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_flakeid"))
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(out.status.success(), ok, "{args:?}: {out:?}");
        all += &String::from_utf8_lossy(&out.stdout);
        all += &String::from_utf8_lossy(&out.stderr);
    }
    assert!(all.contains("holder"), "{all}");
    assert!(!all.contains(ZK_PASSWORD), "the password showed: {all}");
}

/// A client of ZooKeeper's own on `port`, authenticated as `digest` (`user:password`) or
/// not at all.
fn raw_client(
    runtime: &tokio::runtime::Runtime,
    port: u16,
    digest: Option<&str>,
) -> zookeeper_client::Client {
    runtime.block_on(async {
        let mut connector = zookeeper_client::Client::connector();
        if let Some(digest) = digest {
            connector = connector.with_auth("digest", digest.as_bytes());
        }
        connector
            .connect(&format!("127.0.0.1:{port}"))
            .await
            .unwrap()
    })
}

/// A digest URL of the test server for `user`, its password in a file of the test's.
fn user_url(zk: &ZooKeeper, user: &str, extra: &str) -> String {
    let file = zk.process.dir.join(format!("{user}-password"));
    flakeid_fleet::write_secret(&file, &format!("{user}-pw-51c9\n"));
    format!(
        "{}?user={user}&password-file={}{extra}",
        zk.url(),
        file.display()
    )
}

/// What another identity (none, or a digest of its own) tries against the holder's
/// znodes, each refused by ZooKeeper: delete the live claim and the reservation, rewrite
/// the reservation, create a claim of its own beside, open the ACL of the parents.
fn attacks_fail(
    runtime: &tokio::runtime::Runtime,
    other: &zookeeper_client::Client,
    ns: &str,
    node: u64,
) {
    use zookeeper_client::Error as ZkError;
    let base = format!("/flakeid/{ns}");
    runtime.block_on(async {
        let nodes = format!("{base}/nodes/{node}");
        let reserved = format!("{base}/reserved/{node}");
        assert_eq!(
            other.delete(&nodes, None).await,
            Err(ZkError::NoAuth),
            "delete {nodes}"
        );
        assert_eq!(
            other.delete(&reserved, None).await,
            Err(ZkError::NoAuth),
            "delete {reserved}"
        );
        assert_eq!(
            other
                .set_data(&reserved, b"0 released x", None)
                .await
                .map(drop),
            Err(ZkError::NoAuth),
            "set {reserved}"
        );
        let open = zookeeper_client::CreateMode::Persistent
            .with_acls(zookeeper_client::Acls::anyone_all());
        assert_eq!(
            other
                .create(&format!("{base}/nodes/{}", node + 100), b"x", &open)
                .await
                .map(drop),
            Err(ZkError::NoAuth),
            "create under {base}/nodes"
        );
        for path in [
            "/flakeid".to_string(),
            base.clone(),
            format!("{base}/nodes"),
            format!("{base}/reserved"),
        ] {
            assert_eq!(
                other
                    .set_acl(&path, &zookeeper_client::Acls::anyone_all(), None)
                    .await
                    .map(drop),
                Err(ZkError::NoAuth),
                "setAcl {path}"
            );
        }
    });
}

/// Under a user, a namespace whose znodes are open to all (made by a deployment
/// that ran without a user, or by a squatter before the first claim) is not taken as it is:
/// the claim makes every znode it relies on creator-only and says so, naming each. Then an
/// unauthenticated client and a second identity can neither delete the holder's live claim
/// or its reservation nor rewrite it, nor take the id through flakeid, while the holder
/// keeps minting; `read=creator` closes reads of znodes that were open too.
#[test]
fn open_znodes_under_a_user_are_repaired_and_stay_closed_to_others() {
    let _one = fleet::one_at_a_time();
    let Some(zk) = ZooKeeper::start("acl-repair") else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let options = OpenOptions::default().ttl(Duration::from_secs(10));
    // Before the user: the fleet ran without one (`migrate`), and a squatter made `squat`'s
    // parents open before the first claim.
    let open_store = flakeid_stores::open(&zk.url(), &options).unwrap();
    let c = open_store
        .claim(&ClaimRequest {
            namespace: "migrate",
            pool: 0..2,
            instance: "old",
        })
        .unwrap();
    // A reservation a moment ago, which the holder after it starts at.
    let past = flakeid::Clock::unix_ns(&flakeid::clock::SystemClock) - 1_000_000_000;
    open_store.renew(&c, past).unwrap();
    open_store.release(&c, past).unwrap();
    drop(open_store);
    let squatter = raw_client(&runtime, zk.port, None);
    runtime.block_on(async {
        let open = zookeeper_client::CreateMode::Persistent
            .with_acls(zookeeper_client::Acls::anyone_all());
        squatter.mkdir("/flakeid/squat/nodes", &open).await.unwrap();
        squatter
            .mkdir("/flakeid/squat/reserved", &open)
            .await
            .unwrap();
    });
    let alice_url = user_url(&zk, "alice", "");
    let mallory_url = user_url(&zk, "mallory", "");
    let layout = flakeid::Layout::snowflake();
    for (ns, first_not_before) in [("migrate", past), ("squat", 0)] {
        let alice = flakeid_stores::open(&alice_url, &options).unwrap();
        let generator = flakeid::Generator::builder(layout)
            .build_claimed(
                Claims::new(alice.clone())
                    .namespace(ns)
                    .nodes(0..2)
                    .window(Duration::from_secs(2)),
            )
            .unwrap();
        let status = generator.claim_status();
        assert_eq!(status.node, 0, "{ns}");
        assert_eq!(
            status.not_before_unix_ns, first_not_before,
            "{ns}: the reservation kept"
        );
        let repaired = alice.warnings().join("\n");
        for path in ["", "/nodes", "/reserved"] {
            let znode = format!("/flakeid/{ns}{path} let identities other than alice change it");
            assert!(repaired.contains(&znode), "{ns}: {znode} not in {repaired}");
        }
        assert!(repaired.contains("world:anyone:cdrwa"), "{repaired}");
        // The intruders, while alice mints.
        let before = generator.next_id().unwrap();
        for digest in [None, Some("mallory:mallory-pw-51c9")] {
            let other = raw_client(&runtime, zk.port, digest);
            attacks_fail(&runtime, &other, ns, 0);
        }
        for url in [zk.url(), mallory_url.clone()] {
            let other = flakeid_stores::open(&url, &options).unwrap();
            let refused = flakeid::Generator::builder(layout).build_claimed(
                Claims::new(other)
                    .namespace(ns)
                    .nodes(0..2)
                    .pool_wait(Duration::from_secs(1))
                    .manual_renewal(),
            );
            match refused {
                Err(e) => assert_eq!(
                    e.kind(),
                    flakeid::claim::ClaimErrorKind::Access,
                    "{url}: {e}"
                ),
                Ok(g) => panic!("{url} took node {} of {ns}", g.node()),
            }
        }
        generator.renew_claim().unwrap();
        let after = generator.next_id().unwrap();
        assert!(after > before);
        assert_eq!(
            generator.claim_status().state,
            flakeid::claim::ClaimState::Active
        );
    }
    // read=creator: the open znodes of `migrate` are closed to readers too.
    let hidden = flakeid_stores::open(&user_url(&zk, "alice", "&read=creator"), &options).unwrap();
    let c = hidden
        .claim(&ClaimRequest {
            namespace: "migrate",
            pool: 0..2,
            instance: "alice",
        })
        .unwrap();
    let reader = raw_client(&runtime, zk.port, None);
    runtime.block_on(async {
        for path in [
            "/flakeid/migrate/nodes",
            "/flakeid/migrate/reserved/0",
            "/flakeid/migrate/layout",
        ] {
            assert_eq!(
                reader.get_data(path).await.map(drop),
                Err(zookeeper_client::Error::NoAuth),
                "{path} is still readable by anyone"
            );
        }
    });
    hidden.release(&c, T).unwrap();
}

/// Under a user, an open parent this identity may not repair (a squatter kept
/// ADMIN for itself) refuses the claim, naming the znode, its ACL and the `setAcl` that
/// fixes it; once an operator runs that `setAcl` (here as ZooKeeper's super user), the
/// claim goes through and the znode is closed to others.
#[test]
fn an_open_parent_that_cannot_be_repaired_refuses_the_claim_with_the_fix() {
    let _one = fleet::one_at_a_time();
    let Some(zk) = ZooKeeper::start("acl-refuse") else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let squatter = raw_client(&runtime, zk.port, Some("squatter:sq"));
    runtime.block_on(async {
        use zookeeper_client::{Acl, AuthId, Permission};
        let own_root = zookeeper_client::CreateMode::Persistent
            .with_acls(zookeeper_client::Acls::anyone_all());
        squatter.mkdir("/flakeid/held", &own_root).await.unwrap();
        // Anyone may create and delete children, only the squatter may change the ACL.
        let acls = [
            Acl::new(Permission::ALL, AuthId::authed()),
            Acl::new(
                Permission::READ | Permission::WRITE | Permission::CREATE | Permission::DELETE,
                AuthId::anyone(),
            ),
        ];
        let sly =
            zookeeper_client::CreateMode::Persistent.with_acls(zookeeper_client::Acls::new(&acls));
        squatter
            .create("/flakeid/held/nodes", b"", &sly)
            .await
            .unwrap();
    });
    let alice_url = user_url(&zk, "alice", "");
    let options = OpenOptions::default().ttl(Duration::from_secs(10));
    let alice = flakeid_stores::open(&alice_url, &options).unwrap();
    let request = ClaimRequest {
        namespace: "held",
        pool: 0..2,
        instance: "alice",
    };
    let e = alice.claim(&request).unwrap_err();
    assert_eq!(e.kind(), flakeid::claim::ClaimErrorKind::Access, "{e}");
    let text = e.to_string();
    assert!(
        text.contains("znode /flakeid/held/nodes")
            && text.contains("world:anyone:cdrw")
            && text.contains("setAcl /flakeid/held/nodes digest:alice:"),
        "{text}"
    );
    assert!(
        !text.contains("alice-pw-51c9"),
        "the password showed: {text}"
    );
    // The fix the message gives, run by the super user.
    let acl_text = text
        .split("setAcl /flakeid/held/nodes ")
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();
    let admin = raw_client(&runtime, zk.port, Some("super:test"));
    runtime.block_on(async {
        use zookeeper_client::{Acl, AuthId, Permission};
        let acls: Vec<Acl> = acl_text
            .split(',')
            .map(|entry| {
                let (id, perms) = entry.rsplit_once(':').unwrap();
                let (scheme, id) = id.split_once(':').unwrap();
                let mut p = Permission::NONE;
                for (c, bit) in [
                    ('c', Permission::CREATE),
                    ('d', Permission::DELETE),
                    ('r', Permission::READ),
                    ('w', Permission::WRITE),
                    ('a', Permission::ADMIN),
                ] {
                    if perms.contains(c) {
                        p = p | bit;
                    }
                }
                Acl::new(p, AuthId::new(scheme, id))
            })
            .collect();
        admin
            .set_acl("/flakeid/held/nodes", &acls, None)
            .await
            .unwrap();
    });
    let c = alice.claim(&request).unwrap();
    let intruder = raw_client(&runtime, zk.port, None);
    runtime.block_on(async {
        assert_eq!(
            intruder
                .delete(&format!("/flakeid/held/nodes/{}", c.node), None)
                .await,
            Err(zookeeper_client::Error::NoAuth)
        );
    });
    alice.release(&c, T).unwrap();
}

/// Three ZooKeeper servers on loopback, one ensemble (ticks of 1 s: sessions of 2 s to
/// 30 s), each behind a proxy of the tests' own; stopped on drop.
struct Ensemble {
    servers: Vec<(Process, u16)>,
    proxies: Vec<proxy::Proxy>,
    classpath: String,
}

impl Ensemble {
    fn start(name: &str) -> Option<Ensemble> {
        // Made (and checked) by the single server's start: java and the jars are there.
        let probe = ZooKeeper::start(&format!("{name}-probe"))?;
        let classpath = probe.classpath.clone();
        drop(probe);
        let ports: Vec<(u16, u16, u16)> = (0..3)
            .map(|_| (free_port(), free_port(), free_port()))
            .collect();
        let peers: String = ports
            .iter()
            .enumerate()
            .map(|(i, (_, quorum, election))| {
                format!("server.{}=127.0.0.1:{quorum}:{election}\n", i + 1)
            })
            .collect();
        let mut servers = Vec::new();
        // Ticks of 1 s unless a measurement asks otherwise.
        let tick: u64 = std::env::var("FLAKEID_ZK_TICK_MS")
            .ok()
            .and_then(|t| t.parse().ok())
            .unwrap_or(1000);
        let min_session = 2 * tick;
        for (i, (client, _, _)) in ports.iter().enumerate() {
            let mut process = Process::new("zk", &format!("{name}-s{i}"));
            let data = process.dir.join("data");
            std::fs::create_dir_all(&data).unwrap();
            std::fs::write(data.join("myid"), format!("{}\n", i + 1)).unwrap();
            let config = format!(
                "tickTime={tick}\ninitLimit=10\nsyncLimit=5\nminSessionTimeout={min_session}\nmaxSessionTimeout=30000\ndataDir={}\nclientPort={client}\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\n4lw.commands.whitelist=ruok,srvr\n{peers}",
                data.display()
            );
            std::fs::write(process.dir.join("zoo.cfg"), config).unwrap();
            process.start(&mut member_command(&classpath, &process));
            servers.push((process, *client));
        }
        for (process, port) in &servers {
            {
                let url = format!("zookeeper://127.0.0.1:{port}");
                fleet::wait_until_answers(
                    *port,
                    Duration::from_secs(60),
                    &process.dir.join("server.log"),
                    || fleet::lists(flakeid_stores::open, &url),
                );
            }
        }
        let proxies = servers
            .iter()
            .map(|(_, port)| proxy::Proxy::start(*port))
            .collect();
        Some(Ensemble {
            servers,
            proxies,
            classpath,
        })
    }

    /// The server that leads (`role` "leader") or a follower, and `gen` holders with
    /// `args` in namespace `role`, started until two of them use that server (the client
    /// picks a server at random).
    fn holders_on(&self, role: &str, args: &[&str]) -> (usize, Vec<procs::Gen>) {
        let target = (0..3)
            .find(|&i| self.leads(i) == (role == "leader"))
            .unwrap();
        let url = self.url();
        let mut holders: Vec<procs::Gen> = Vec::new();
        while self.proxies[target].connections() < 2 {
            assert!(
                holders.len() < 24,
                "{role}: no holder came to server {target}"
            );
            let h = procs::spawn(&fleet::gen_args(&url, role, args));
            h.claimed_node();
            h.wait_for_ids(10);
            holders.push(h);
        }
        (target, holders)
    }

    /// Kills server `i` (`kill -9`: its clients' connections reset, its peers see it go).
    fn kill(&mut self, i: usize) {
        self.servers[i].0.stop();
    }

    /// Starts server `i` again on its data and waits (bounded) until it answers.
    fn restart(&mut self, i: usize) {
        let (process, port) = &mut self.servers[i];
        process.start(&mut member_command(&self.classpath, process));
        {
            let url = format!("zookeeper://127.0.0.1:{port}");
            fleet::wait_until_answers(
                *port,
                Duration::from_secs(60),
                &process.dir.join("server.log"),
                || fleet::lists(flakeid_stores::open, &url),
            );
        }
    }

    /// The URL through the proxies.
    fn url(&self) -> String {
        let hosts: Vec<String> = self
            .proxies
            .iter()
            .map(|p| format!("127.0.0.1:{}", p.port))
            .collect();
        format!("zookeeper://{}", hosts.join(","))
    }

    /// Whether server `i` leads, as it says (`srvr`).
    fn leads(&self, i: usize) -> bool {
        use std::io::{Read, Write};
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", self.servers[i].1)).unwrap();
        stream.write_all(b"srvr").unwrap();
        let mut out = String::new();
        let _ = stream.read_to_string(&mut out);
        out.contains("Mode: leader")
    }
}

/// The command that runs one member of an ensemble from its directory's `zoo.cfg`.
fn member_command(classpath: &str, process: &Process) -> Command {
    let mut command = Command::new("java");
    command
        .args(["-Xmx256m", "-cp", classpath])
        .arg("org.apache.zookeeper.server.quorum.QuorumPeerMain")
        .arg(process.dir.join("zoo.cfg"));
    command
}

/// On an ensemble, a TTL too short to survive a member's loss (an election, or a move
/// away from a server that stopped answering) is refused, naming the smallest that does
/// (4 s); at that TTL, the server a holder uses blackholed for four sessions (the leader in
/// one round, a follower in the other) loses no holder: each moves to another server within
/// its session and keeps minting.
#[test]
fn at_the_smallest_ttl_a_blackholed_server_in_use_loses_no_holder() {
    let _one = fleet::one_at_a_time();
    let Some(ensemble) = Ensemble::start("blackhole") else {
        return;
    };
    for short in ["2s", "3s"] {
        let refused = Command::new(env!("CARGO_BIN_EXE_flakeid"))
            .args(["gen", "-n", "1", "--claim", &ensemble.url(), "--ttl", short])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert_eq!(refused.status.code(), Some(2), "--ttl {short}: {stderr}");
        assert!(
            stderr.contains("--ttl")
                && stderr.contains("too short")
                && stderr.contains("at least 4s"),
            "--ttl {short}: {stderr}"
        );
    }
    let args = [
        "--nodes",
        "0..64",
        "--ttl",
        "4s",
        "--max-wait",
        "10s",
        "-n",
        "100000000",
        "--rate",
        "100",
    ];
    for role in ["leader", "follower"] {
        let (target, holders) = ensemble.holders_on(role, &args);
        ensemble.proxies[target].set_blackholed(true);
        holders_keep_minting(
            &holders,
            Duration::from_secs(8),
            &format!("{role} blackholed"),
        );
        ensemble.proxies[target].set_blackholed(false);
        stop_and_check_unique(holders);
    }
}

/// At the smallest TTL an ensemble accepts (4 s) and a window of 2 s, a member
/// killed under its holders (`kill -9`: the leader in one round, so the ensemble elects
/// another, a follower in the other) loses no holder: each reconnects to a member that
/// runs, its session and claim intact, and keeps minting; nothing was minted twice.
#[test]
fn at_the_smallest_ttl_a_killed_member_loses_no_holder() {
    let _one = fleet::one_at_a_time();
    let Some(mut ensemble) = Ensemble::start("member-kill") else {
        return;
    };
    let args = [
        "--nodes",
        "0..64",
        "--ttl",
        "4s",
        "--window",
        "2s",
        "--max-wait",
        "10s",
        "-n",
        "100000000",
        "--rate",
        "100",
    ];
    for role in ["leader", "follower"] {
        let (target, holders) = ensemble.holders_on(role, &args);
        ensemble.kill(target);
        holders_keep_minting(&holders, Duration::from_secs(8), &format!("{role} killed"));
        ensemble.restart(target);
        stop_and_check_unique(holders);
    }
}

impl flakeid_fleet::campaign::Ensemble for Ensemble {
    fn url(&self) -> String {
        Ensemble::url(self)
    }

    fn kill_member(&mut self, i: usize) {
        self.kill(i);
    }

    fn restart_member(&mut self, i: usize) {
        self.restart(i);
    }

    fn set_partitioned(&self, i: usize, cut: bool) {
        self.proxies[i].set_blackholed(cut);
    }

    fn take_claim_away(&self, namespace: &str, node: u64) {
        let path = format!("/flakeid/{namespace}/nodes/{node}");
        let hosts: String = self
            .servers
            .iter()
            .map(|(_, port)| format!("127.0.0.1:{port}"))
            .collect::<Vec<_>>()
            .join(",");
        flakeid_fleet::block_on(async move {
            let connector = zookeeper_client::Client::connector();
            let connect = connector
                .with_session_timeout(Duration::from_secs(4))
                .connect(&hosts);
            if let Ok(Ok(client)) = tokio::time::timeout(Duration::from_secs(5), connect).await {
                let _ =
                    tokio::time::timeout(Duration::from_secs(5), client.delete(&path, None)).await;
            }
        });
    }
}

/// The fault campaign (`flakeid_fleet::campaign`) on a three-server ensemble: servers
/// killed and paused, members killed and partitioned, claims deleted by hand, streams held
/// open; no ID handed out twice. Long: run by hand.
#[test]
#[ignore = "a long campaign: cargo test -p flakeid-cli --test zookeeper -- --ignored campaign (FLAKEID_CAMPAIGN_SECONDS)"]
fn campaign_on_a_three_server_ensemble() {
    let _one = fleet::one_at_a_time();
    let Some(mut ensemble) = Ensemble::start("campaign") else {
        return;
    };
    flakeid_fleet::campaign::campaign(&mut ensemble);
}

/// What a member's loss costs a ZooKeeper session (the figure behind
/// `flakeid_zookeeper::LEADER_LOSS`): six clients with sessions of `FLAKEID_ZK_SESSION_MS`
/// (3000) read every 20 ms while the leader, then a follower, is killed (four times
/// each), until a member leads again and each client has answered a read begun after
/// that; printed per kill, the longest time each went without an answer and whether its
/// session lived. `FLAKEID_ZK_TICK_MS` sets the ensemble's tick (1000). A measurement:
/// run by hand.
#[test]
#[ignore = "a measurement: cargo test -p flakeid-cli --test zookeeper -- --ignored member_loss --nocapture"]
fn what_a_member_loss_costs_a_session() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Instant;
    let _one = fleet::one_at_a_time();
    let Some(mut ensemble) = Ensemble::start("member-loss") else {
        return;
    };
    let session: u64 = std::env::var("FLAKEID_ZK_SESSION_MS")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(3000);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    for round in 0..8 {
        let leader = (0..3).find(|&i| ensemble.leads(i)).unwrap();
        let (target, role) = match round % 2 {
            0 => (leader, "leader"),
            _ => ((leader + 1) % 3, "follower"),
        };
        let hosts = ensemble.url()["zookeeper://".len()..].to_string();
        let stop = Arc::new(AtomicBool::new(false));
        // When the ensemble led again after the kill; a client whose read begun after it
        // answers is back.
        let settled: Arc<std::sync::Mutex<Option<Instant>>> = Arc::default();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (back_tx, back_rx) = std::sync::mpsc::channel();
        let clients: Vec<_> = (0..6)
            .map(|_| {
                let (hosts, stop, ready) = (hosts.clone(), Arc::clone(&stop), ready_tx.clone());
                let (settled, back) = (Arc::clone(&settled), back_tx.clone());
                runtime.spawn(async move {
                    // As the store opens its sessions.
                    let client = zookeeper_client::Client::connector()
                        .with_session_timeout(Duration::from_millis(session))
                        .with_connection_timeout(Duration::from_millis(session * 2 / 5))
                        .with_fail_eagerly()
                        .connect(&hosts)
                        .await
                        .unwrap();
                    ready.send(()).unwrap();
                    let (mut last, mut longest) = (Instant::now(), Duration::ZERO);
                    let mut said_back = false;
                    while !stop.load(Ordering::Relaxed) {
                        let began = Instant::now();
                        match client.check_stat("/").await {
                            Ok(_) => {
                                longest = longest.max(last.elapsed());
                                last = Instant::now();
                                let after = settled.lock().unwrap().is_some_and(|t| began > t);
                                if after && !said_back {
                                    said_back = true;
                                    let _ = back.send(());
                                }
                            }
                            Err(zookeeper_client::Error::SessionExpired) => {
                                let _ = back.send(());
                                return (last.elapsed(), "expired");
                            }
                            Err(_) => {}
                        }
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                    (longest.max(last.elapsed()), "lived")
                })
            })
            .collect();
        for _ in 0..6 {
            ready_rx.recv_timeout(Duration::from_secs(30)).unwrap();
        }
        ensemble.kill(target);
        // Until a member that runs leads (at once after a follower's loss), then until
        // every client has an answer to a read begun after that.
        let bound = Instant::now() + Duration::from_secs(60);
        while !(0..3).filter(|&i| i != target).any(|i| ensemble.leads(i)) {
            assert!(Instant::now() < bound, "no member leads after the kill");
            std::thread::sleep(Duration::from_millis(20));
        }
        *settled.lock().unwrap() = Some(Instant::now());
        for _ in 0..6 {
            back_rx
                .recv_timeout(Duration::from_millis(2 * session) + Duration::from_secs(30))
                .expect("a client never answered again");
        }
        stop.store(true, Ordering::Relaxed);
        let seen: Vec<String> = clients
            .into_iter()
            .map(|c| {
                let (gap, fate) = runtime.block_on(c).unwrap();
                format!("{} ms {fate}", gap.as_millis())
            })
            .collect();
        eprintln!("session {session} ms, {role} killed: {}", seen.join(", "));
        ensemble.restart(target);
    }
}
