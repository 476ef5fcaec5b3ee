//! The repair `flakeid claims --repair` offers, through the tool, over any store whose
//! data the test can damage.

use std::process::{Command, Output};

/// The repair the corrupt message offers: `claims --repair N` stores a reservation a
/// window past now (past what was stored, where it can be read), never while the id is
/// held; the next holder of the id starts after it, so IDs its last holder may have minted
/// on a clock running ahead are not minted again. `corrupt` damages what `url`'s store
/// holds of node 0 of namespace `orders`.
pub fn claims_repair_stores_a_reservation_past_now(url: &str, corrupt: &dyn Fn()) {
    // `flakeid SUBCOMMAND --claim URL --namespace orders ARGS...`.
    let flakeid = |subcommand: &str, args: &[&str]| -> Output {
        Command::new(crate::binary())
            .args([subcommand, "--claim", url, "--namespace", "orders"])
            .args(args)
            .output()
            .unwrap()
    };
    // The IDs a successful `gen` printed.
    let minted = |out: Output| -> Vec<u64> {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| l.parse().unwrap())
            .collect()
    };
    // A holder on a clock 3 s ahead mints and stops; then what is stored of node 0 is
    // damaged.
    let gen_args = ["--nodes", "0..1", "-n", "200", "--clock-offset", "+3s"];
    let before = minted(flakeid("gen", &gen_args));
    corrupt();
    let out = flakeid("gen", &["--nodes", "0..1", "-n", "1", "--pool-wait", "0s"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    // The message offers the repair, and no longer a removal.
    let table = String::from_utf8_lossy(&flakeid("claims", &[]).stdout).into_owned();
    assert!(table.contains("flakeid claims --repair"), "{table}");
    assert!(!table.contains("remove it only"), "{table}");
    // Held: refused.
    let holder = crate::procs::spawn(&[
        "gen",
        "--claim",
        url,
        "--namespace",
        "orders",
        "--nodes",
        "1..2",
        "-n",
        "100000",
        "--rate",
        "50",
    ]);
    assert_eq!(holder.claimed_node(), 1);
    let out = flakeid("claims", &["--repair", "1"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--repair") && stderr.contains("held by a live holder"),
        "{stderr}"
    );
    drop(holder);
    // Outside the namespace's layout (Snowflake: node ids 0 to 1023): refused.
    let out = flakeid("claims", &["--repair", "1024"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("outside") && stderr.contains("0 to 1023"),
        "{stderr}"
    );
    // Node 0: repaired to 4 s past now (past the 3 s the last holder ran ahead).
    let out = flakeid("claims", &["--repair", "0", "--window", "4s"]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        said.contains("repaired node 0") && said.contains("could not be read"),
        "{said}"
    );
    let after = minted(flakeid(
        "gen",
        &["--nodes", "0..1", "-n", "5", "--max-wait", "20s"],
    ));
    let top = before.iter().max().unwrap();
    assert!(
        after.iter().all(|id| id > top),
        "an ID at or below the last holder's {top}"
    );
}
