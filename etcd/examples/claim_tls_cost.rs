//! The cost of TLS and authentication on claims, for BENCHMARKS.md: two etcd servers on
//! loopback, one plain and one with TLS, client certificates (`--client-cert-auth`) and
//! `auth enable` (certificates made here with rcgen); on each, ROUNDS claims, renewals and
//! releases through flakeid's etcd store, one at a time; the median and the worst of each.
//!
//! `cargo run --release -p flakeid-etcd --example claim_tls_cost [ROUNDS]` (needs `etcd`
//! on the PATH: Debian's etcd-server).

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use flakeid::claim::store::ClaimRequest;
use flakeid::claim::store::{FromUrl, StoreUrl};
use flakeid::claim::{ClaimStore, OpenOptions};
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose, SanType,
};

const PASSWORD: &str = "bench-pw";

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A CA, and a server and a client certificate it signs, as PEM files in `dir`.
fn certs(dir: &Path) {
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.distinguished_name.push(DnType::CommonName, "bench CA");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().unwrap()).unwrap();
    std::fs::write(dir.join("ca.pem"), ca.pem()).unwrap();
    for (name, purpose) in [
        ("server", ExtendedKeyUsagePurpose::ServerAuth),
        // etcd takes a client certificate's common name as the user when a request
        // carries no token.
        ("flakeid", ExtendedKeyUsagePurpose::ClientAuth),
    ] {
        let mut p = CertificateParams::new(vec!["localhost".to_string()]).unwrap();
        p.subject_alt_names
            .push(SanType::IpAddress([127, 0, 0, 1].into()));
        p.distinguished_name.push(DnType::CommonName, name);
        let name = if name == "flakeid" { "client" } else { name };
        p.extended_key_usages = vec![purpose];
        let key = KeyPair::generate().unwrap();
        let cert = p.signed_by(&key, &ca).unwrap();
        std::fs::write(dir.join(format!("{name}.pem")), cert.pem()).unwrap();
        std::fs::write(dir.join(format!("{name}-key.pem")), key.serialize_pem()).unwrap();
    }
}

/// Starts etcd in `dir`, over TLS with client certificates if `tls`.
fn etcd(dir: &Path, tls: bool) -> (Child, u16) {
    let (client, peer) = (free_port(), free_port());
    let scheme = if tls { "https" } else { "http" };
    let client_url = format!("{scheme}://127.0.0.1:{client}");
    let peer_url = format!("http://127.0.0.1:{peer}");
    let mut c = Command::new("etcd");
    c.args(["--name", "bench", "--data-dir"])
        .arg(dir.join("data"))
        .args(["--listen-client-urls", &client_url])
        .args(["--advertise-client-urls", &client_url])
        .args(["--listen-peer-urls", &peer_url])
        .args(["--initial-advertise-peer-urls", &peer_url])
        .args(["--initial-cluster", &format!("bench={peer_url}")])
        .args(["--logger", "zap", "--log-level", "error"]);
    if tls {
        c.arg("--cert-file")
            .arg(dir.join("server.pem"))
            .arg("--key-file")
            .arg(dir.join("server-key.pem"))
            .arg("--trusted-ca-file")
            .arg(dir.join("ca.pem"))
            .arg("--client-cert-auth");
    }
    let child = c
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("etcd on the PATH (Debian: apt-get install etcd-server)");
    (child, client)
}

/// Opens `url`, retrying while the server starts (at most 20 s).
fn open(url: &str) -> std::sync::Arc<dyn ClaimStore> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let store = StoreUrl::parse(url)
            .and_then(|u| flakeid_etcd::EtcdStore::from_url(&u, &OpenOptions::default()));
        match store {
            Ok(s) if s.list("probe").is_ok() => return std::sync::Arc::new(s),
            other if Instant::now() > deadline => panic!("{url}: {:?}", other.err()),
            _ => std::thread::sleep(Duration::from_millis(100)),
        }
    }
}

/// `auth enable` with a user `flakeid` limited to `flakeid/`.
fn enable_auth(dir: &Path, port: u16) {
    use etcd_client::{Certificate, ConnectOptions, Identity, Permission, TlsOptions};
    let read = |f: &str| std::fs::read(dir.join(f)).unwrap();
    let tls = TlsOptions::new()
        .ca_certificate(Certificate::from_pem(read("ca.pem")))
        .identity(Identity::from_pem(
            read("client.pem"),
            read("client-key.pem"),
        ));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let opts = ConnectOptions::new().with_tls(tls);
        let mut c = etcd_client::Client::connect([format!("https://127.0.0.1:{port}")], Some(opts))
            .await
            .unwrap();
        c.user_add("root", "root-pw", None).await.unwrap();
        c.user_grant_role("root", "root").await.unwrap();
        c.role_add("flakeid").await.unwrap();
        c.role_grant_permission("flakeid", Permission::read_write("flakeid/").with_prefix())
            .await
            .unwrap();
        c.user_add("flakeid", PASSWORD, None).await.unwrap();
        c.user_grant_role("flakeid", "flakeid").await.unwrap();
        c.auth_enable().await.unwrap();
    });
}

/// Median and worst, in milliseconds.
fn summary(mut d: Vec<Duration>) -> String {
    d.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    format!("{:.2} / {:.2}", ms(d[d.len() / 2]), ms(d[d.len() - 1]))
}

/// ROUNDS claim, renewal and release times on `store`.
fn measure(store: &dyn ClaimStore, rounds: usize) -> [String; 3] {
    let (mut claim, mut renew, mut release) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..rounds {
        let request = ClaimRequest {
            namespace: "bench",
            pool: 0..4,
            instance: "bench",
        };
        let t = Instant::now();
        let c = store.claim(&request).unwrap();
        claim.push(t.elapsed());
        let t = Instant::now();
        store.renew(&c, 1_000 + i as u64).unwrap();
        renew.push(t.elapsed());
        let t = Instant::now();
        store.release(&c, 1_000 + i as u64).unwrap();
        release.push(t.elapsed());
    }
    [summary(claim), summary(renew), summary(release)]
}

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .map_or(50, |n| n.parse().expect("ROUNDS, a number"));
    let root = std::env::temp_dir().join(format!("flakeid-tls-cost-{}", std::process::id()));
    let (plain_dir, tls_dir) = (root.join("plain"), root.join("tls"));
    std::fs::create_dir_all(&plain_dir).unwrap();
    std::fs::create_dir_all(&tls_dir).unwrap();
    certs(&tls_dir);
    std::fs::write(tls_dir.join("pw"), PASSWORD).unwrap();
    let (mut plain, plain_port) = etcd(&plain_dir, false);
    let (mut secured, tls_port) = etcd(&tls_dir, true);
    let plain_url = format!("etcd://127.0.0.1:{plain_port}");
    let files = |f: &str| tls_dir.join(f).display().to_string();
    let tls_url = format!(
        "etcds://127.0.0.1:{tls_port}?ca={}&cert={}&key={}",
        files("ca.pem"),
        files("client.pem"),
        files("client-key.pem")
    );
    let plain_store = open(&plain_url);
    let tls_store = open(&tls_url);
    enable_auth(&tls_dir, tls_port);
    let auth_url = format!("{tls_url}&user=flakeid&password-file={}", files("pw"));
    let auth_store = open(&auth_url);
    // One round each first, to warm the connections.
    for s in [&plain_store, &tls_store, &auth_store] {
        measure(s.as_ref(), 1);
    }
    println!("{rounds} rounds each, one at a time; median / worst, ms");
    println!("| etcd 3.4 on loopback | claim | renewal | release |");
    println!("|---|---|---|---|");
    for (name, store) in [
        ("plain", &plain_store),
        ("TLS, client certificate (its name the user)", &tls_store),
        ("TLS, client certificate, user and password", &auth_store),
    ] {
        let [c, r, l] = measure(store.as_ref(), rounds);
        println!("| {name} | {c} | {r} | {l} |");
    }
    drop((plain_store, tls_store, auth_store));
    for child in [&mut plain, &mut secured] {
        let _ = child.kill();
        let _ = child.wait();
    }
    let _ = std::fs::remove_dir_all(&root);
}
