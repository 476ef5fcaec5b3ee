//! The file store against a hostile neighbour: a second Unix user (made here when the tests
//! run as root, as CI runs them) plants links and directories; files that are not regular
//! (a FIFO, a socket, a device) stand in for state and lock files; a directory is swapped
//! under a holder. Each ends in a clear error within a bound, and no ID is minted twice.
//!
//! Not as root, the tests that need the second user print why they skip; with
//! `FLAKEID_REQUIRE_SERVERS` set (CI sets it) they fail instead.
#![cfg(unix)]

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use flakeid::claim::store::ClaimRequest;
use flakeid::claim::{ClaimError, ClaimErrorKind, ClaimStore, Claims, FileStore, NodeState};
use flakeid::{Generator, Layout};

/// The second user: `(uid, gid)`.
fn intruder(test: &str) -> Option<(u32, u32)> {
    static USER: std::sync::OnceLock<Result<(u32, u32), String>> = std::sync::OnceLock::new();
    let user = USER.get_or_init(|| {
        let id = |flag: &str| {
            let out = Command::new("id")
                .args([flag, "flakeid-intruder"])
                .output()
                .ok()?;
            String::from_utf8(out.stdout).ok()?.trim().parse().ok()
        };
        let uid = Command::new("id")
            .arg("-u")
            .output()
            .map_err(|e| e.to_string())?;
        if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
            return Err("the tests do not run as root, so they cannot make a second user".into());
        }
        if id("-u").is_none() {
            // Another test binary may make it at the same moment: look again after.
            let _ = Command::new("useradd")
                .args(["--system", "--no-create-home", "--user-group"])
                .args(["--shell", "/usr/sbin/nologin", "flakeid-intruder"])
                .status();
        }
        match (id("-u"), id("-g")) {
            (Some(uid), Some(gid)) => Ok((uid, gid)),
            _ => Err("useradd could not make the user flakeid-intruder".into()),
        }
    });
    match user {
        Ok(user) => Some(*user),
        Err(why) => {
            assert!(
                std::env::var_os("FLAKEID_REQUIRE_SERVERS").is_none(),
                "{test}: {why}, and FLAKEID_REQUIRE_SERVERS is set: run the tests as root"
            );
            eprintln!("skipping {test}: {why}");
            None
        }
    }
}

/// Runs `script` (sh) as `user`: whether it succeeded.
fn as_user((uid, gid): (u32, u32), script: &str) -> bool {
    Command::new("sh")
        .args(["-c", script])
        .uid(uid)
        .gid(gid)
        .status()
        .unwrap()
        .success()
}

/// A fresh directory under the system's temporary directory, writable by all and sticky
/// (as `/tmp` is): a parent the neighbour can plant things in.
fn shared_parent(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("flakeid-users-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o1777)).unwrap();
    dir
}

fn request(pool: std::ops::Range<u64>) -> ClaimRequest<'static> {
    ClaimRequest {
        namespace: "orders",
        pool,
        instance: "victim",
    }
}

/// Runs `f` on a thread and waits at most `bound` for it: a store operation that blocks
/// fails the test instead of hanging it.
fn within<T: Send + 'static>(
    bound: Duration,
    what: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(bound)
        .unwrap_or_else(|_| panic!("{what} did not end within {bound:?}"))
}

/// The README's example, `file:/tmp/flakeid-claims`, when another user got there first:
/// the store directory theirs with the namespace a link to a directory of theirs (the
/// attack that made two holders share node 0), the store directory itself a link, or just
/// a directory of theirs. Each is refused, naming what is wrong, and nothing is written in
/// their directories.
#[test]
fn a_store_another_user_planted_is_refused() {
    let Some(user) = intruder("a_store_another_user_planted_is_refused") else {
        return;
    };
    let parent = shared_parent("planted");
    let p = parent.display();
    assert!(as_user(
        user,
        &format!(
            "set -e; mkdir -m 777 {p}/theirs {p}/flakeid-claims; ln -s {p}/theirs {p}/flakeid-claims/orders; ln -s {p}/theirs {p}/linked; mkdir -m 755 {p}/owned"
        )
    ));
    for (name, want) in [
        ("flakeid-claims", "belongs to user"),
        ("linked", "symbolic link"),
        ("owned", "belongs to user"),
    ] {
        let dir = parent.join(name);
        let e = FileStore::open(&dir)
            .and_then(|s| s.claim(&request(0..4)))
            .unwrap_err();
        assert!(
            e.kind() == ClaimErrorKind::Access || e.kind() == ClaimErrorKind::Unavailable,
            "{name}: {e}"
        );
        let text = e.to_string();
        assert!(text.contains(want), "{name}: {text}");
        assert!(text.contains(&dir.display().to_string()), "{name}: {text}");
    }
    let empty = std::fs::read_dir(parent.join("theirs")).unwrap().count();
    assert_eq!(empty, 0, "the store wrote into the other user's directory");
    std::fs::remove_dir_all(&parent).unwrap();
}

/// systemd's `DynamicUser=yes` with `StateDirectory=flakeid` makes `/var/lib/flakeid` a
/// root-owned link to `private/flakeid`, under a root-owned `private/`: a store given the
/// link is opened at its target, checked as any store directory, and claims there. The
/// hostile variants stay refused: the same link made by another user (in a parent anyone
/// may write to, sticky as /tmp), a root link in a directory another user may write to,
/// and a root link to a directory of another user's.
#[test]
fn a_store_behind_a_link_only_root_could_make_is_followed() {
    let base = std::env::temp_dir().join(format!("flakeid-varlib-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let var_lib = base.join("var/lib");
    std::fs::create_dir_all(var_lib.join("private/flakeid")).unwrap();
    for (dir, mode) in [(&base, 0o755), (&var_lib, 0o755)] {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    std::fs::set_permissions(
        var_lib.join("private"),
        std::fs::Permissions::from_mode(0o700),
    )
    .unwrap();
    std::fs::set_permissions(
        var_lib.join("private/flakeid"),
        std::fs::Permissions::from_mode(0o700),
    )
    .unwrap();
    std::os::unix::fs::symlink("private/flakeid", var_lib.join("flakeid")).unwrap();
    let store = FileStore::open(var_lib.join("flakeid")).unwrap();
    let held = store.claim(&request(0..4)).unwrap();
    store.renew(&held, 1_800_000_000_000_000_000).unwrap();
    assert!(
        var_lib.join("private/flakeid/orders").is_dir(),
        "the namespace is not in the link's target"
    );
    store.release(&held, 1).unwrap();

    let Some(user) = intruder("a_store_behind_a_link_only_root_could_make_is_followed") else {
        std::fs::remove_dir_all(&base).unwrap();
        return;
    };
    let parent = shared_parent("links");
    let p = parent.display();
    // Theirs: a link in the sticky parent to a directory of this process's own.
    std::fs::create_dir(parent.join("mine")).unwrap();
    std::fs::set_permissions(parent.join("mine"), std::fs::Permissions::from_mode(0o700)).unwrap();
    assert!(as_user(
        user,
        &format!(
            "set -e; ln -s {p}/mine {p}/their-link; mkdir -m 700 {p}/their-dir; mkdir -m 775 {p}/their-parent"
        )
    ));
    // A root link to their directory, and a root link in a directory they may write to.
    std::os::unix::fs::symlink(parent.join("their-dir"), parent.join("root-to-theirs")).unwrap();
    std::os::unix::fs::symlink(parent.join("mine"), parent.join("their-parent/root-link")).unwrap();
    for (name, want) in [
        ("their-link", "symbolic link of user"),
        ("root-to-theirs", "belongs to user"),
        ("their-parent/root-link", "belongs to user"),
    ] {
        let dir = parent.join(name);
        let e = FileStore::open(&dir)
            .and_then(|s| s.claim(&request(0..4)))
            .unwrap_err();
        assert_eq!(e.kind(), ClaimErrorKind::Access, "{name}: {e}");
        assert!(e.to_string().contains(want), "{name}: {e}");
    }
    assert_eq!(std::fs::read_dir(parent.join("mine")).unwrap().count(), 0);
    std::fs::remove_dir_all(&parent).unwrap();
    std::fs::remove_dir_all(&base).unwrap();
}

/// A store the victim made in the shared parent keeps the neighbour out: the neighbour can
/// neither plant a namespace, nor a link, nor a state file in it, nor move it aside (the
/// parent is sticky), and claims go on.
#[test]
fn a_store_of_ones_own_keeps_the_neighbour_out() {
    let Some(user) = intruder("a_store_of_ones_own_keeps_the_neighbour_out") else {
        return;
    };
    let parent = shared_parent("own");
    let dir = parent.join("flakeid-claims");
    let store = FileStore::open(&dir).unwrap();
    let held = store.claim(&request(0..4)).unwrap();
    store.renew(&held, 1_800_000_000_000_000_000).unwrap();
    let d = dir.display();
    for attack in [
        format!("ln -s /tmp {d}/evil"),
        format!("mkdir {d}/evil"),
        format!("echo x > {d}/orders/node-1.state"),
        format!("mv {d} {d}-moved"),
        format!("mv {d}/orders {d}/orders-moved"),
    ] {
        assert!(!as_user(user, &attack), "the neighbour could: {attack}");
    }
    let next = store.claim(&request(0..4)).unwrap();
    assert_eq!(next.node, 1);
    store.renew(&held, 1_800_000_000_000_000_001).unwrap();
    store.release(&next, 0).unwrap();
    store.release(&held, 1).unwrap();
    std::fs::remove_dir_all(&parent).unwrap();
}

/// `share=group` under a setgid parent writable by all (mode 3777, the group this
/// process's): a directory another user made there inherits the group, but its owner is
/// not a member of it, so the store refuses it (as its owner it could rename the namespace
/// aside, and the next holder would start from nothing). A directory of this process's
/// own there is taken.
#[test]
fn share_group_trusts_no_directory_of_a_user_outside_the_group() {
    let test = "share_group_trusts_no_directory_of_a_user_outside_the_group";
    let Some(user) = intruder(test) else {
        return;
    };
    let parent = shared_parent("setgid");
    std::fs::set_permissions(&parent, std::fs::Permissions::from_mode(0o3777)).unwrap();
    let p = parent.display();
    // The outsider's primary group is its own: it is no member of this process's group.
    assert!(as_user(
        user,
        &format!("set -e; mkdir {p}/theirs; chmod 2770 {p}/theirs")
    ));
    let ours_gid = std::fs::metadata(&parent).unwrap().gid();
    assert_eq!(
        std::fs::metadata(parent.join("theirs")).unwrap().gid(),
        ours_gid,
        "the setgid parent gave its group"
    );
    let e = flakeid::claim::open(&format!("file:{p}/theirs?share=group"))
        .and_then(|s| s.claim(&request(0..4)))
        .unwrap_err();
    assert_eq!(e.kind(), ClaimErrorKind::Access, "{e}");
    let text = e.to_string();
    assert!(
        text.contains("not a member") && text.contains(&format!("{}", user.0)),
        "{text}"
    );
    assert_eq!(
        std::fs::read_dir(parent.join("theirs")).unwrap().count(),
        0,
        "the store wrote into the outsider's directory"
    );
    let ours = flakeid::claim::open(&format!("file:{p}/ours?share=group")).unwrap();
    let held = ours.claim(&request(0..4)).unwrap();
    ours.release(&held, 1).unwrap();
    std::fs::remove_dir_all(&parent).unwrap();
}

/// A FIFO, a socket and a device node in place of state and lock files: each id is skipped
/// within a bound (nothing blocks on opening a FIFO), listed as corrupt saying what it is,
/// and a holder of another id of the namespace renews and mints throughout.
#[test]
fn files_that_are_not_regular_are_skipped_without_blocking() {
    let parent = shared_parent("special");
    let dir = parent.join("store");
    let store = Arc::new(FileStore::open(&dir).unwrap());
    // A healthy holder of node 5, renewing on its own, minting.
    let generator = Generator::builder(Layout::snowflake())
        .build_claimed(
            Claims::new(Arc::clone(&store) as Arc<dyn ClaimStore>)
                .namespace("orders")
                .nodes(5..6)
                .window(Duration::from_millis(600)),
        )
        .unwrap();
    let ns = dir.join("orders");
    let fifo = ns.join("node-0.state");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    std::fs::write(ns.join("node-0.lock"), b"").unwrap();
    let _socket = std::os::unix::net::UnixListener::bind(ns.join("node-1.lock")).unwrap();
    let root = Command::new("id").arg("-u").output().unwrap();
    let device = String::from_utf8_lossy(&root.stdout).trim() == "0"
        && Command::new("mknod")
            .arg(ns.join("node-2.state"))
            .args(["c", "1", "3"])
            .status()
            .unwrap()
            .success();
    if device {
        std::fs::write(ns.join("node-2.lock"), b"").unwrap();
    } else {
        eprintln!("not root: no device node (mknod needs root); the FIFO and the socket stand in");
    }
    let s = Arc::clone(&store);
    let claimed = within(
        Duration::from_secs(10),
        "a claim past the FIFO",
        move || s.claim(&request(0..4)),
    )
    .unwrap();
    assert_eq!(claimed.node, 3, "nodes 0, 1 (and 2) are skipped");
    let s = Arc::clone(&store);
    let listed = within(Duration::from_secs(10), "the listing", move || {
        s.list("orders")
    })
    .unwrap();
    let mut expected = vec![(0, "FIFO"), (1, "socket")];
    if device {
        expected.push((2, "character device"));
    }
    for (node, kind) in expected {
        let info = listed.iter().find(|i| i.node == node).unwrap();
        assert_eq!(info.state, NodeState::Corrupt, "{info:?}");
        assert!(
            info.problem.as_deref().unwrap().contains(kind),
            "node {node}: {info:?}"
        );
    }
    let five = listed.iter().find(|i| i.node == 5).unwrap();
    assert_eq!(five.state, NodeState::Held);
    // The holder of node 5 went on renewing (its window is 600 ms) and minting.
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut ids = Vec::new();
    while Instant::now() < deadline {
        ids.push(generator.next_id().unwrap().get());
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        generator.claim_status().renewals > 2,
        "{:?}",
        generator.claim_status()
    );
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
    // The FIFO is still there, unread and unwritten.
    assert!(
        std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo()
    );
    store.release(&claimed, 0).unwrap();
    drop(generator);
    std::fs::remove_dir_all(&parent).unwrap();
}

use std::os::unix::fs::FileTypeExt;

/// The namespace directory swapped under a live holder (moved aside, a link to a directory
/// with forged state files put in its place): the holder's renewal writes nothing through
/// the link and stops (its directory is no longer where claims find it), a new claim is
/// refused (the link), and the forged files are untouched: nobody mints the holder's IDs.
#[test]
fn a_directory_swapped_under_a_holder_changes_nothing() {
    let parent = shared_parent("swap");
    let dir = parent.join("store");
    let store = FileStore::open(&dir).unwrap();
    let held = store.claim(&request(0..1)).unwrap();
    let reserved = 1_800_000_000_000_000_000;
    store.renew(&held, reserved).unwrap();
    let ns = dir.join("orders");
    let forged = parent.join("forged");
    std::fs::create_dir(&forged).unwrap();
    std::fs::set_permissions(&forged, std::fs::Permissions::from_mode(0o700)).unwrap();
    let forged_state = "flakeid-claim v1\nnode 0\nreserved_until_unix_ns 0\nholder x\nstate released\ngeneration 1\n";
    std::fs::write(forged.join("node-0.state"), forged_state).unwrap();
    std::fs::rename(&ns, dir.join("orders-moved")).unwrap();
    std::os::unix::fs::symlink(&forged, &ns).unwrap();

    let renewed = store.renew(&held, reserved + 1);
    assert!(
        matches!(renewed, Err(ClaimError::NotOwner { .. })),
        "the holder renewed through a swapped directory: {renewed:?}"
    );
    let other = FileStore::open(&dir).unwrap();
    let e = other.claim(&request(0..1)).unwrap_err();
    assert!(e.to_string().contains("symbolic link"), "{e}");
    assert_eq!(
        std::fs::read_to_string(forged.join("node-0.state")).unwrap(),
        forged_state
    );
    assert_eq!(std::fs::read_dir(&forged).unwrap().count(), 1);
    // What the holder stored is where it was, in its own directory.
    let moved = std::fs::read_to_string(dir.join("orders-moved/node-0.state")).unwrap();
    assert!(
        moved.contains(&format!("reserved_until_unix_ns {reserved}")),
        "{moved}"
    );
    std::fs::remove_dir_all(&parent).unwrap();
}

/// A holder stopped in the middle of a write (here: the namespace's lock held by another
/// descriptor that never lets go) makes a claim fail within the bound, saying so, instead
/// of waiting without end.
#[test]
fn a_lock_held_without_end_fails_within_a_bound() {
    let parent = shared_parent("lock");
    let dir = parent.join("store");
    let store = Arc::new(FileStore::open(&dir).unwrap());
    let c = store.claim(&request(0..1)).unwrap();
    store.release(&c, 0).unwrap();
    let ns = std::fs::File::open(dir.join("orders")).unwrap();
    ns.lock().unwrap();
    let s = Arc::clone(&store);
    let started = Instant::now();
    let e = within(
        Duration::from_secs(20),
        "a claim under a held lock",
        move || s.claim(&request(0..1)),
    )
    .unwrap_err();
    assert!(e.to_string().contains("held the directory's lock"), "{e}");
    assert!(
        started.elapsed() >= Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    drop(ns);
    let c = store.claim(&request(0..1)).unwrap();
    store.release(&c, 0).unwrap();
    std::fs::remove_dir_all(&parent).unwrap();
}
