//! The deployment recipes in `deploy/` checked against the server and against the
//! security guide: the Kubernetes example (etcd over TLS with a user, TLS and a token on
//! the listeners, all from Secrets; probes, preStop, a non-root read-only pod, limits and
//! the shard count that fits them, a disruption budget, a headless Service for gRPC), a
//! server started with its settings; the Containerfile (multi-stage, locked, non-root,
//! small base, a build context without build outputs); the systemd unit (hardened, reloads
//! with SIGHUP; `systemd-analyze verify`); and every file through the tools operators use:
//! `kubernetes-validate`, `checkov`, `hadolint`, `systemd-analyze security`.

use flakeid_fleet::{certs, service};

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn deploy(file: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../deploy")
        .join(file);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn documents() -> Vec<serde_yaml::Value> {
    serde_yaml::Deserializer::from_str(&deploy("flakeid-serve.yaml"))
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .collect()
}

fn serve_help() -> String {
    let help = std::process::Command::new(env!("CARGO_BIN_EXE_flakeid"))
        .args(["serve", "--help"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&help.stdout).into_owned()
}

/// A duration as the tool writes it (`15s`), in seconds.
fn seconds(text: &str) -> u64 {
    text.trim_end_matches('s').parse().unwrap()
}

#[test]
fn the_kubernetes_example_follows_the_security_guide() {
    let docs = documents();
    let kind = |k: &'static str| docs.iter().filter(move |d| d["kind"] == k);
    let deployment = kind("Deployment").next().expect("a Deployment");
    let pod = &deployment["spec"]["template"]["spec"];
    let labels = &deployment["spec"]["template"]["metadata"]["labels"];
    let container = &pod["containers"][0];
    assert_eq!(container["args"][0], "serve");
    let env: HashMap<&str, &serde_yaml::Value> = container["env"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|v| (v["name"].as_str().unwrap(), v))
        .collect();
    let value = |name: &str| {
        env.get(name)
            .and_then(|v| v["value"].as_str())
            .unwrap_or_else(|| panic!("no {name}"))
    };
    // Every variable set is one the server reads.
    let help = serve_help();
    for name in env.keys() {
        assert!(
            help.contains(&format!("env: {name}")),
            "flakeid serve does not read {name}"
        );
    }
    // The store: etcd over TLS with a client certificate and a user, the password from a file.
    let claim = value("FLAKEID_CLAIM");
    assert!(claim.starts_with("etcds://"), "{claim}");
    for part in ["ca=", "cert=", "key=", "user="] {
        assert!(claim.contains(part), "{claim} lacks {part}");
    }
    assert!(!claim.contains("password="), "a password in the URL");
    // TLS and the token on the listeners, from files.
    for name in [
        "FLAKEID_CLAIM_PASSWORD_FILE",
        "FLAKEID_TOKEN_FILE",
        "FLAKEID_TLS_CERT",
        "FLAKEID_TLS_KEY",
    ] {
        assert!(value(name).starts_with("/etc/flakeid/"), "{name}");
    }
    assert!(
        !env.contains_key("FLAKEID_TOKEN"),
        "the token inline in the manifest"
    );
    // Each mounted path under a volume from a Secret.
    let volumes: HashMap<&str, &serde_yaml::Value> = pod["volumes"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|v| (v["name"].as_str().unwrap(), v))
        .collect();
    let mounts = container["volumeMounts"].as_sequence().unwrap();
    let files: Vec<&str> = [
        "FLAKEID_CLAIM_PASSWORD_FILE",
        "FLAKEID_TOKEN_FILE",
        "FLAKEID_TLS_CERT",
        "FLAKEID_TLS_KEY",
    ]
    .iter()
    .map(|n| value(n))
    .chain(
        claim
            .split(['?', '&'])
            .filter_map(|p| p.split_once('='))
            .map(|(_, v)| v)
            .filter(|v| v.starts_with('/')),
    )
    .collect();
    for file in files {
        let mount = mounts
            .iter()
            .find(|m| file.starts_with(m["mountPath"].as_str().unwrap()))
            .unwrap_or_else(|| panic!("{file} is on no volume"));
        assert_eq!(mount["readOnly"], true);
        let volume = volumes[mount["name"].as_str().unwrap()];
        assert!(
            volume["secret"]["secretName"].is_string(),
            "{file} is not from a Secret"
        );
        // The user may read it: the Secret's files are the pod's fsGroup's and readable
        // by that group (root owns them otherwise, and 0400 shuts the user out); nobody
        // else may.
        // Kubernetes reads YAML 1.1, where 0440 is octal; serde_yaml keeps it as text.
        let mode = match &volume["secret"]["defaultMode"] {
            serde_yaml::Value::String(octal) => u64::from_str_radix(octal, 8).unwrap(),
            other => other.as_u64().expect("a defaultMode"),
        };
        assert_eq!(
            pod["securityContext"]["fsGroup"], pod["securityContext"]["runAsGroup"],
            "{file}: no fsGroup of the user's group"
        );
        assert!(
            mode & 0o040 != 0 && mode & 0o007 == 0,
            "{file}: mode {mode:o} is not readable by the group alone"
        );
    }
    // Memory: the limit holds a server at its connection cap on both listeners (about
    // 64 KiB a connection, 42 KiB measured on HTTP/2) above a 64 MiB base.
    let mebibytes = |q: &str| -> u64 {
        match q.strip_suffix("Gi") {
            Some(g) => g.parse::<u64>().unwrap() * 1024,
            None => q.strip_suffix("Mi").unwrap().parse().unwrap(),
        }
    };
    let limit = mebibytes(container["resources"]["limits"]["memory"].as_str().unwrap());
    let cap: u64 = value("FLAKEID_MAX_CONNECTIONS").parse().unwrap();
    assert!(
        limit * 1024 >= 64 * 1024 + 2 * cap * 64,
        "a {limit} MiB limit under {cap} connections per listener"
    );
    // The image names a placeholder registry, and the file says how to build your own.
    let image = container["image"].as_str().unwrap();
    assert!(image.starts_with("registry.example.com/"), "{image}");
    let yaml = deploy("flakeid-serve.yaml");
    assert!(yaml.contains("podman build -f deploy/Containerfile") && yaml.contains("podman push"));
    // Only the clients in, only etcd and DNS out.
    let policy = kind("NetworkPolicy").next().expect("a NetworkPolicy");
    assert_eq!(&policy["spec"]["podSelector"]["matchLabels"], labels);
    assert_eq!(
        policy["spec"]["policyTypes"].as_sequence().unwrap().len(),
        2
    );
    let container_ports: Vec<u64> = container["ports"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|p| p["containerPort"].as_u64().unwrap())
        .collect();
    let ingress = policy["spec"]["ingress"].as_sequence().unwrap();
    assert_eq!(ingress.len(), 1);
    assert!(ingress[0]["from"][0]["namespaceSelector"].is_mapping());
    for port in ingress[0]["ports"].as_sequence().unwrap() {
        assert!(container_ports.contains(&port["port"].as_u64().unwrap()));
    }
    let egress_ports: Vec<u64> = policy["spec"]["egress"]
        .as_sequence()
        .unwrap()
        .iter()
        .flat_map(|rule| rule["ports"].as_sequence().unwrap())
        .map(|p| p["port"].as_u64().unwrap())
        .collect();
    assert_eq!(egress_ports, [2379, 53, 53], "egress beyond etcd and DNS");
    // Shards: one per CPU of the limit, the request equal to the limit.
    let resources = &container["resources"];
    let cpu = resources["limits"]["cpu"].as_str().unwrap();
    assert_eq!(resources["requests"]["cpu"].as_str(), Some(cpu));
    assert_eq!(
        value("FLAKEID_SHARDS"),
        cpu,
        "one shard per CPU of the limit"
    );
    assert!(
        resources["limits"]["memory"].is_string() && resources["requests"]["memory"].is_string()
    );
    // Probes on the routes the server answers, over HTTPS (the listener has TLS).
    let probe = |p: &str| &container[p]["httpGet"];
    assert_eq!(probe("startupProbe")["path"], "/healthz");
    assert_eq!(probe("livenessProbe")["path"], "/healthz");
    assert_eq!(probe("readinessProbe")["path"], "/readyz");
    for p in ["startupProbe", "livenessProbe", "readinessProbe"] {
        assert_eq!(probe(p)["scheme"], "HTTPS", "{p}");
    }
    let readiness = &container["readinessProbe"];
    assert!(
        readiness["failureThreshold"].as_u64().unwrap() >= 2,
        "one slow probe drains the pod"
    );
    // The end: preStop, then the drain, within the grace period.
    let pre_stop = container["lifecycle"]["preStop"]["sleep"]["seconds"]
        .as_u64()
        .unwrap();
    let grace = pod["terminationGracePeriodSeconds"].as_u64().unwrap();
    assert!(
        pre_stop + seconds(value("FLAKEID_DRAIN")) < grace,
        "preStop + drain >= grace"
    );
    // Non-root, read-only, no privileges.
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    assert_eq!(
        pod["securityContext"]["seccompProfile"]["type"],
        "RuntimeDefault"
    );
    let sc = &container["securityContext"];
    assert_eq!(sc["readOnlyRootFilesystem"], true);
    assert_eq!(sc["allowPrivilegeEscalation"], false);
    assert_eq!(sc["capabilities"]["drop"][0], "ALL");
    assert_eq!(pod["automountServiceAccountToken"], false);
    // A disruption budget and a headless Service for gRPC over the same pods.
    let pdb = kind("PodDisruptionBudget")
        .next()
        .expect("a PodDisruptionBudget");
    assert_eq!(&pdb["spec"]["selector"]["matchLabels"], labels);
    let headless = kind("Service")
        .find(|s| s["spec"]["clusterIP"] == "None")
        .expect("a headless Service");
    assert_eq!(&headless["spec"]["selector"], labels);
    assert_eq!(headless["spec"]["ports"][0]["targetPort"], "grpc");
    let ports: Vec<&str> = container["ports"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    for s in kind("Service") {
        for p in s["spec"]["ports"].as_sequence().unwrap() {
            assert!(ports.contains(&p["targetPort"].as_str().unwrap()));
        }
    }
}

/// A server started with the example's settings (on loopback, the store in memory, the
/// Secrets' files made by the test) starts with TLS and a token on both listeners and so
/// without a warning, logs JSON, and claims as the pod's name.
#[test]
fn a_server_starts_with_the_kubernetes_settings() {
    let dir = std::env::temp_dir().join(format!("flakeid-deploy-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let c = certs::make(&dir, "k8s", "client");
    let token = dir.join("token");
    flakeid_fleet::write_secret(&token, "k8s-token-0f3a\n");
    let docs = documents();
    let deployment = docs.iter().find(|d| d["kind"] == "Deployment").unwrap();
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    let mut env: Vec<(String, String)> = Vec::new();
    for var in container["env"].as_sequence().unwrap() {
        let (name, v) = (var["name"].as_str().unwrap(), var["value"].as_str());
        let path = |p: &PathBuf| p.display().to_string();
        let value = match (name, v) {
            ("FLAKEID_LISTEN" | "FLAKEID_GRPC_LISTEN", _) => "127.0.0.1:0".to_string(),
            ("FLAKEID_CLAIM", _) => "memory:".into(),
            ("FLAKEID_CLAIM_PASSWORD_FILE", _) => continue, // the memory store has no user
            ("FLAKEID_TOKEN_FILE", _) => path(&token),
            ("FLAKEID_TLS_CERT", _) => path(&c.server_cert),
            ("FLAKEID_TLS_KEY", _) => path(&c.server_key),
            (_, Some(v)) => v.to_string(),
            (_, None) => "pod-0".into(), // a fieldRef
        };
        env.push((name.to_string(), value));
    }
    let pairs: Vec<(&str, &str)> = env.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    let s = service::serve_env(&[], &pairs, Duration::from_secs(20));
    assert!(s.http.starts_with("https://"), "{:?}", s.before);
    assert!(
        s.grpc
            .as_deref()
            .is_some_and(|g| g.starts_with("https://127.0.0.1:"))
    );
    let events: Vec<serde_json::Value> = s
        .before
        .iter()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert!(
        events.iter().all(|e| e["level"] != "WARN"),
        "a warning with TLS and a token: {events:#?}"
    );
    assert!(
        events.iter().any(|e| e["message"] == "claimed node id"
            && e["namespace"] == "orders"
            && e["instance"] == "pod-0"),
        "{events:#?}"
    );
    assert!(events.iter().any(|e| e["shards"] == 2), "{events:#?}");
    drop(s);
    std::fs::remove_dir_all(&dir).ok();
}

/// The Containerfile: a build stage with the locked versions, a small final base, a
/// non-root user, the tool as the entry point, the example's ports exposed.
#[test]
fn the_containerfile_builds_a_small_non_root_image() {
    let text = deploy("Containerfile");
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let froms: Vec<&&str> = lines.iter().filter(|l| l.starts_with("FROM ")).collect();
    assert!(froms.len() >= 2, "not multi-stage: {froms:?}");
    assert!(froms[0].contains(" AS build"), "{froms:?}");
    let last = froms.last().unwrap();
    assert!(
        ["distroless", "scratch", "alpine", "chainguard"]
            .iter()
            .any(|b| last.contains(b)),
        "a large final base: {last}"
    );
    assert!(text.contains("cargo build --release --locked -p flakeid-cli"));
    let final_stage = &text[text.rfind("FROM ").unwrap()..];
    assert!(final_stage.contains("COPY --from=build"));
    let user = final_stage
        .lines()
        .find_map(|l| l.strip_prefix("USER "))
        .expect("a USER in the final stage");
    assert!(
        !user.starts_with("0") && !user.starts_with("root"),
        "{user}"
    );
    assert!(final_stage.contains(r#"ENTRYPOINT ["/usr/local/bin/flakeid"]"#));
    let yaml = deploy("flakeid-serve.yaml");
    for port in ["8443", "9443"] {
        assert!(
            yaml.contains(port) && final_stage.contains(port),
            "port {port}"
        );
    }
    assert!(!text.to_lowercase().contains("password") && !text.contains("TOKEN"));
    // The build context (`COPY . .`) leaves out build outputs and the git history.
    let ignore = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../.containerignore"),
    )
    .expect("a .containerignore at the root, the build context");
    for left_out in ["target/", "**/target/", ".git/"] {
        assert!(ignore.lines().any(|l| l == left_out), "{left_out}");
    }
}

/// The systemd unit: the tool's service with its reload, a dynamic user, and the
/// sandboxing options; `systemd-analyze verify` passes where systemd is installed.
#[test]
fn the_systemd_unit_is_hardened_and_verifies() {
    let text = deploy("flakeid-serve.service");
    let mut keys: HashMap<&str, Vec<&str>> = HashMap::new();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && l.contains('='))
    {
        let (k, v) = line.split_once('=').unwrap();
        keys.entry(k).or_default().push(v);
    }
    let one = |k: &str| {
        keys.get(k)
            .map(|v| v[0])
            .unwrap_or_else(|| panic!("no {k}="))
    };
    assert_eq!(one("ExecStart"), "/usr/local/bin/flakeid serve");
    assert_eq!(one("ExecReload"), "/bin/kill -HUP $MAINPID");
    assert_eq!(one("KillSignal"), "SIGTERM");
    for k in [
        "DynamicUser",
        "NoNewPrivileges",
        "ProtectHome",
        "PrivateTmp",
        "PrivateDevices",
        "ProtectKernelTunables",
        "ProtectKernelModules",
        "ProtectControlGroups",
        "RestrictNamespaces",
        "RestrictSUIDSGID",
        "LockPersonality",
        "MemoryDenyWriteExecute",
    ] {
        assert_eq!(one(k), "yes", "{k}");
    }
    assert_eq!(one("ProtectSystem"), "strict");
    assert_eq!(one("CapabilityBoundingSet"), "");
    assert!(one("RestrictAddressFamilies").contains("AF_INET6"));
    assert!(keys["SystemCallFilter"].contains(&"@system-service"));
    // Every variable the unit sets is one the server reads.
    let help = serve_help();
    for v in keys.get("Environment").into_iter().flatten() {
        let name = v.split('=').next().unwrap();
        assert!(help.contains(&format!("env: {name}")), "{name}");
    }
    let Ok(out) = std::process::Command::new("systemd-analyze")
        .arg("--version")
        .output()
    else {
        assert!(
            std::env::var_os("FLAKEID_REQUIRE_SERVERS").is_none(),
            "systemd-analyze is not installed and FLAKEID_REQUIRE_SERVERS is set (Debian: apt-get install systemd)"
        );
        eprintln!("systemd-analyze is not installed: the unit is checked by its text only");
        return;
    };
    assert!(out.status.success());
    // Verified with ExecStart pointing at the built tool.
    let dir = std::env::temp_dir().join(format!("flakeid-unit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let unit = dir.join("flakeid-serve.service");
    std::fs::write(
        &unit,
        text.replace("/usr/local/bin/flakeid", env!("CARGO_BIN_EXE_flakeid")),
    )
    .unwrap();
    let out = std::process::Command::new("systemd-analyze")
        .arg("verify")
        .arg(&unit)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    let complaints: Vec<&str> = said
        .lines()
        .filter(|l| l.contains("flakeid-serve.service"))
        .collect();
    assert!(out.status.success() && complaints.is_empty(), "{said}");
    std::fs::remove_dir_all(&dir).ok();
}

/// The unit's secrets are read where they are (group-readable under /etc/flakeid/secrets,
/// the dynamic user in their group), not copied at start as `LoadCredential=` copies them:
/// so the documented rotation works. A server started with the unit's environment (the
/// secrets directory made here) takes a token rollover on the unit's reload (`kill -HUP`),
/// and a new TLS pair with it.
#[test]
fn the_systemd_units_reload_takes_rotated_secrets() {
    let text = deploy("flakeid-serve.service");
    let settings: String = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        !settings.contains("LoadCredential") && !settings.contains("%d/"),
        "a secret copied at start: a reload would read the old copy"
    );
    assert!(text.contains("\nSupplementaryGroups=flakeid-secrets\n"));
    let env: Vec<(&str, &str)> = text
        .lines()
        .filter_map(|l| l.strip_prefix("Environment="))
        .filter_map(|kv| kv.split_once('='))
        .collect();
    let dir = std::env::temp_dir().join(format!("flakeid-unit-secrets-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let c = certs::make(&dir, "unit", "client");
    let secret = |unit_path: &str| -> String {
        let name = unit_path
            .strip_prefix("/etc/flakeid/secrets/")
            .unwrap_or_else(|| panic!("{unit_path} is not under /etc/flakeid/secrets"));
        dir.join(name).display().to_string()
    };
    let mut pairs: Vec<(String, String)> = vec![
        ("FLAKEID_LISTEN".into(), "127.0.0.1:0".into()),
        ("FLAKEID_NODE".into(), "1".into()),
    ];
    for (name, value) in &env {
        let value = match *name {
            "FLAKEID_TOKEN_FILE" | "FLAKEID_TLS_CERT" | "FLAKEID_TLS_KEY" => secret(value),
            _ => value.to_string(),
        };
        pairs.push((name.to_string(), value));
    }
    let file = |name: &str| pairs.iter().find(|(n, _)| n == name).unwrap().1.clone();
    let token = file("FLAKEID_TOKEN_FILE");
    flakeid_fleet::write_secret(std::path::Path::new(&token), "unit-old-7c1e\n");
    std::fs::copy(&c.server_cert, file("FLAKEID_TLS_CERT")).unwrap();
    std::fs::copy(&c.server_key, file("FLAKEID_TLS_KEY")).unwrap();
    let refs: Vec<(&str, &str)> = pairs
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let s = service::serve_env(&[], &refs, Duration::from_secs(20));
    let client = service::https_client(&c.ca, false);
    let status = |t: &str| {
        client
            .get(s.url("/v1/id"))
            .header("Authorization", format!("Bearer {t}"))
            .send()
            .unwrap()
            .status()
    };
    assert_eq!(status("unit-old-7c1e"), 200);
    assert_eq!(status("unit-new-95ad"), 401);
    // The rollover as the unit's comment says: both lines, then the reload.
    std::fs::write(&token, "unit-old-7c1e\nunit-new-95ad\n").unwrap();
    s.signal("HUP");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while status("unit-new-95ad") != 200 {
        assert!(
            std::time::Instant::now() < deadline,
            "the reload did not take the new token"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(status("unit-old-7c1e"), 200, "both during the rollover");
    drop(s);
    std::fs::remove_dir_all(&dir).ok();
}

/// Runs `command` with no network where the system lets this process make a network
/// namespace (`unshare -n`, as root in CI), else as it is; its output, failing the test
/// if it could not run.
fn offline(program: &Path, args: &[&str]) -> std::process::Output {
    let isolated = std::process::Command::new("unshare")
        .args(["-n", "true"])
        .status()
        .is_ok_and(|s| s.success());
    let mut command = if isolated {
        let mut c = std::process::Command::new("unshare");
        c.arg("-n").arg(program);
        c
    } else {
        std::process::Command::new(program)
    };
    command
        .args(args)
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", program.display()))
}

/// The deployment files pass the tools operators check them with, installed pinned with
/// hashes (`deploy/tools/requirements.txt`) into a fresh virtual environment and run
/// without a network: `kubernetes-validate --strict` (the schemas of Kubernetes 1.37),
/// `checkov` on the manifest (every check passes but the two the manifest skips, each
/// with its reason), `hadolint` on the Containerfile, and `systemd-analyze security` on the
/// unit at an exposure of 1.2 or less.
#[test]
fn the_deployment_files_pass_the_operators_tools() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let required = std::env::var_os("FLAKEID_REQUIRE_SERVERS").is_some();
    let venv_works = std::process::Command::new("python3")
        .args(["-c", "import venv, ensurepip"])
        .status()
        .is_ok_and(|s| s.success());
    if !venv_works {
        assert!(
            !required,
            "python3 with venv is missing and FLAKEID_REQUIRE_SERVERS is set (Debian: apt-get install python3-venv)"
        );
        eprintln!("skipping: python3 with venv is missing (Debian: apt-get install python3-venv)");
        return;
    }
    let work = root.join(format!("target/deploy-tools-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    let run = |what: &str, command: &mut std::process::Command| {
        let out = command.output().unwrap();
        assert!(
            out.status.success(),
            "{what}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    };
    run(
        "python3 -m venv",
        std::process::Command::new("python3")
            .args(["-m", "venv"])
            .arg(&work),
    );
    let bin = work.join("bin");
    run(
        "pip install (pinned)",
        std::process::Command::new(bin.join("pip"))
            .args(["install", "--quiet", "--require-hashes", "--no-deps", "-r"])
            .arg(root.join("deploy/tools/requirements.txt"))
            .env_remove("PIP_FIND_LINKS"),
    );

    let manifest = "deploy/flakeid-serve.yaml";
    let out = offline(
        &bin.join("kubernetes-validate"),
        &[
            "--strict",
            "--kubernetes-version",
            "1.37.0",
            "--quiet",
            manifest,
        ],
    );
    assert!(
        out.status.success(),
        "kubernetes-validate: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    let out = offline(
        &bin.join("checkov"),
        &[
            "-f",
            manifest,
            "--framework",
            "kubernetes",
            "--compact",
            "--quiet",
            "--skip-download",
        ],
    );
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "checkov: {said}");
    assert!(
        said.contains("Failed checks: 0, Skipped checks: 2"),
        "checkov: {said}"
    );

    let out = offline(&bin.join("hadolint"), &["deploy/Containerfile"]);
    assert!(
        out.status.success(),
        "hadolint: {}",
        String::from_utf8_lossy(&out.stdout)
    );

    if std::process::Command::new("systemd-analyze")
        .arg("--version")
        .output()
        .is_err()
    {
        assert!(
            !required,
            "systemd-analyze is not installed and FLAKEID_REQUIRE_SERVERS is set (Debian: apt-get install systemd)"
        );
        eprintln!("systemd-analyze is not installed: the unit's exposure is not scored");
    } else {
        let out = std::process::Command::new("systemd-analyze")
            .args(["security", "--offline=true", "--no-pager"])
            .arg(root.join("deploy/flakeid-serve.service"))
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stdout);
        let exposure: f64 = said
            .lines()
            .find_map(|l| {
                l.split("Overall exposure level for flakeid-serve.service: ")
                    .nth(1)
            })
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no exposure level: {said}"));
        assert!(exposure <= 1.2, "exposure {exposure}: {said}");
    }
    std::fs::remove_dir_all(&work).ok();
}

/// The PostgreSQL claims the Kubernetes example shows beside etcd's are a URL the store
/// reads: every parameter known, TLS verified with a client certificate, the primary found
/// among the hosts. Opened with its hosts swapped for a closed port on loopback, it fails
/// on what is missing here (the certificate files, the server), never on the URL itself.
#[cfg(feature = "postgres")]
#[test]
fn the_kubernetes_examples_postgres_claims_are_a_url_the_store_reads() {
    use flakeid::claim::{ClaimError, OpenOptions};

    let yaml = deploy("flakeid-serve.yaml");
    let url = yaml
        .lines()
        .find_map(|l| l.trim().strip_prefix("#   value: \"postgres://"))
        .map(|rest| format!("postgres://{}", rest.trim_end_matches('"')))
        .expect("a PostgreSQL URL in the Kubernetes example");
    for part in [
        "sslmode=verify-full",
        "ca=",
        "cert=",
        "key=",
        "target_session_attrs=read-write",
    ] {
        assert!(url.contains(part), "{url} lacks {part}");
    }
    assert!(yaml.contains("FLAKEID_CLAIM_PASSWORD_FILE: /etc/flakeid/postgres/password"));
    let (_, hosts) = url.split_once('@').unwrap();
    let (hosts, _) = hosts.split_once('/').unwrap();
    let local = url.replacen(hosts, "127.0.0.1:1", 1);
    let options = OpenOptions::default().timeout(std::time::Duration::from_millis(500));
    if let Err(ClaimError::BadUrl { reason, .. }) = flakeid_stores::open(&local, &options) {
        panic!("{local}: {reason}");
    }
    // A misspelt parameter is what BadUrl looks like.
    let misspelt = local.replacen("sslmode=", "ssl_mode=", 1);
    assert!(matches!(
        flakeid_stores::open(&misspelt, &options),
        Err(ClaimError::BadUrl { .. })
    ));
}
