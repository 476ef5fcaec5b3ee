//! `flakeid serve` over TLS, with certificates the test makes (rcgen): HTTPS (HTTP/1.1 and
//! HTTP/2 by ALPN) with reqwest and curl, gRPC with tonic's client, the token on both; the
//! certificate reloaded on SIGHUP and on a file change while a connection made before
//! stays open; a broken pair refused and the one in use kept.

use flakeid_fleet::certs;
use flakeid_fleet::service;

use std::path::Path;
use std::time::{Duration, Instant};

use service::serve;

const START: Duration = Duration::from_secs(20);
const TOKEN: &str = "tok-tls-5e1d-a9c0";

fn get(
    c: &reqwest::blocking::Client,
    url: &str,
    token: Option<&str>,
) -> reqwest::Result<(u16, String)> {
    let mut r = c.get(url);
    if let Some(t) = token {
        r = r.header("Authorization", format!("Bearer {t}"));
    }
    let r = r.send()?;
    let status = r.status().as_u16();
    Ok((status, r.text()?))
}

/// Puts `from`'s server certificate and key in place of the served files, as a secret
/// rotation does: written aside, then renamed over.
fn install(from: &certs::Certs, cert: &Path, key: &Path) {
    for (src, dst) in [(&from.server_cert, cert), (&from.server_key, key)] {
        let tmp = dst.with_extension("new");
        std::fs::copy(src, &tmp).unwrap();
        std::fs::rename(&tmp, dst).unwrap();
    }
}

/// Waits (bounded) for a line on the server's standard error containing `text`.
fn wait_for_line(s: &service::Served, text: &str, seen: &mut Vec<String>) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if let Ok(line) = s.stderr.recv_timeout(Duration::from_millis(100)) {
            let found = line.contains(text);
            seen.push(line);
            if found {
                return;
            }
        }
    }
    panic!("no line with {text:?} within 10s: {seen:?}");
}

#[test]
fn https_and_grpc_over_tls_with_the_token_and_a_reloaded_certificate() {
    let dir = std::env::temp_dir().join(format!("flakeid-serve-tls-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let a = certs::make(&dir, "a", "client");
    let b = certs::make(&dir, "b", "client");
    let (cert, key) = (dir.join("live-cert.pem"), dir.join("live-key.pem"));
    install(&a, &cert, &key);
    let token_file = dir.join("token");
    flakeid_fleet::write_secret(&token_file, TOKEN);
    let (cert_s, key_s, token_s) = (
        cert.display().to_string(),
        key.display().to_string(),
        token_file.display().to_string(),
    );
    let mut s = serve(
        &[
            "--node",
            "1",
            "--shards",
            "1",
            "--grpc-listen",
            "127.0.0.1:0",
            "--tls-cert",
            &cert_s,
            "--tls-key",
            &key_s,
            "--token-file",
            &token_s,
        ],
        START,
    );
    let mut seen = s.before.clone();
    assert!(s.http.starts_with("https://"), "{:?}", s.before);
    let url = |path: &str| format!("{}{path}", s.http);

    // HTTPS: the token guards the mint route, the probes stay open; HTTP/2 by ALPN.
    let c = service::https_client(&a.ca, false);
    let r = c
        .get(url("/v1/id"))
        .header("Authorization", format!("Bearer {TOKEN}"))
        .send()
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.version(), reqwest::Version::HTTP_2, "ALPN chose h2");
    assert!(r.text().unwrap().starts_with("{\"id\":\""));
    for token in [None, Some("wrong")] {
        assert_eq!(get(&c, &url("/v1/id"), token).unwrap().0, 401, "{token:?}");
    }
    for probe in ["/healthz", "/readyz", "/metrics"] {
        assert_eq!(get(&c, &url(probe), None).unwrap().0, 200, "{probe}");
    }
    // Plain HTTP to the TLS listener gets no answer.
    let plain = url("/healthz").replace("https://", "http://");
    assert!(
        service::client().get(&plain).send().is_err(),
        "plain HTTP answered"
    );

    // curl, as a user would.
    match std::process::Command::new("curl").arg("--version").output() {
        Ok(_) => {
            let curl = |extra: &[&str]| {
                let out = std::process::Command::new("curl")
                    .args(["-sS", "--max-time", "10", "-o", "-", "-w", " %{http_code}"])
                    .arg("--cacert")
                    .arg(&a.ca)
                    .args(extra)
                    .arg(url("/v1/id"))
                    .output()
                    .unwrap();
                String::from_utf8_lossy(&out.stdout).into_owned()
            };
            let auth = format!("Authorization: Bearer {TOKEN}");
            let ok = curl(&["-H", &auth]);
            assert!(ok.starts_with("{\"id\":\"") && ok.ends_with(" 200"), "{ok}");
            assert!(curl(&[]).ends_with(" 401"), "curl without the token");
        }
        Err(_) => eprintln!("no curl: its part of the test is skipped"),
    }

    // gRPC over TLS, the token as metadata.
    let grpc = s.grpc.clone().expect("a gRPC listener");
    assert!(grpc.starts_with("https://"), "{grpc}");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        use flakeid_serve::grpc::v1::NextRequest;
        use flakeid_serve::grpc::v1::id_service_client::IdServiceClient;
        let tls = tonic::transport::ClientTlsConfig::new()
            .ca_certificate(tonic::transport::Certificate::from_pem(
                std::fs::read(&a.ca).unwrap(),
            ))
            .domain_name("localhost");
        let channel = tonic::transport::Channel::from_shared(grpc.clone())
            .unwrap()
            .tls_config(tls)
            .unwrap()
            .connect()
            .await
            .unwrap();
        let mut c = IdServiceClient::new(channel);
        let e = c.next(NextRequest { count: 1 }).await.unwrap_err();
        assert_eq!(e.code(), tonic::Code::Unauthenticated);
        let mut req = tonic::Request::new(NextRequest { count: 3 });
        req.metadata_mut()
            .insert("authorization", format!("Bearer {TOKEN}").parse().unwrap());
        assert_eq!(c.next(req).await.unwrap().into_inner().ids.len(), 3);
    });

    // Reload on SIGHUP: new handshakes present B's certificate; a connection made
    // before keeps working.
    let kept = service::https_client(&a.ca, true);
    assert_eq!(get(&kept, &url("/healthz"), None).unwrap().0, 200);
    install(&b, &cert, &key);
    s.signal("HUP");
    wait_for_line(&s, "TLS certificate reloaded", &mut seen);
    assert_eq!(
        get(&kept, &url("/v1/id"), Some(TOKEN)).unwrap().0,
        200,
        "the connection made before the reload"
    );
    assert!(
        get(&service::https_client(&a.ca, true), &url("/healthz"), None).is_err(),
        "a new connection still saw A's certificate"
    );
    assert_eq!(
        get(&service::https_client(&b.ca, true), &url("/healthz"), None)
            .unwrap()
            .0,
        200
    );

    // Reload on a file change alone (no signal), within a few seconds.
    install(&a, &cert, &key);
    let deadline = Instant::now() + Duration::from_secs(10);
    while get(&service::https_client(&a.ca, true), &url("/healthz"), None).is_err() {
        assert!(
            Instant::now() < deadline,
            "the changed files were not reloaded"
        );
        std::thread::sleep(Duration::from_millis(200));
    }

    // A broken pair is refused on SIGHUP and the one in use stays.
    std::fs::write(&key, "not a key").unwrap();
    s.signal("HUP");
    wait_for_line(
        &s,
        "TLS certificate reload failed; the pair in use stays",
        &mut seen,
    );
    assert_eq!(
        get(&service::https_client(&a.ca, true), &url("/healthz"), None)
            .unwrap()
            .0,
        200
    );
    let metrics = get(&c, &url("/metrics"), None).unwrap().1;
    assert!(metrics.contains("flakeid_tls_reloads_total"), "{metrics}");

    s.signal("TERM");
    let (status, rest) = s.wait(Duration::from_secs(20));
    assert!(status.success(), "{status:?}");
    seen.extend(rest);
    let all = format!("{seen:?}{metrics}");
    assert!(!all.contains(TOKEN), "the token showed: {all}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_certificate_that_does_not_load_is_a_clear_error() {
    let dir = std::env::temp_dir().join(format!("flakeid-serve-badtls-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let a = certs::make(&dir, "a", "client");
    let b = certs::make(&dir, "b", "client");
    let missing = dir.join("missing.pem");
    // A certificate given as the key, in a file as private as a key's.
    let cert_as_key = dir.join("cert-as-key.pem");
    flakeid_fleet::write_secret(
        &cert_as_key,
        &std::fs::read_to_string(&a.server_cert).unwrap(),
    );
    // A key other users may read: refused before it is parsed, with what to do.
    let open_key = dir.join("open-key.pem");
    std::fs::copy(&a.server_key, &open_key).unwrap();
    std::fs::set_permissions(
        &open_key,
        std::os::unix::fs::PermissionsExt::from_mode(0o644),
    )
    .unwrap();
    for (cert, key, says) in [
        (&missing, &a.server_key, "cannot read the TLS certificate"),
        (&a.server_key, &a.server_key, "holds no certificate"),
        (&a.server_cert, &cert_as_key, "holds no PEM private key"),
        (
            &a.server_cert,
            &open_key,
            "lets other users read or change it: chmod 600",
        ),
        (
            &a.server_cert,
            &b.server_key,
            "does not go with the certificate",
        ),
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_flakeid"))
            .args(["serve", "--node", "1", "--listen", "127.0.0.1:0"])
            .arg("--tls-cert")
            .arg(cert)
            .arg("--tls-key")
            .arg(key)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.contains(says) && err.contains("--tls-cert"),
            "{says}: {err}"
        );
        assert!(
            !err.contains("PRIVATE KEY"),
            "a key's content showed: {err}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
