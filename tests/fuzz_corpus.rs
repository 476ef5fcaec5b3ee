//! Replays every stored fuzz input (`fuzz/corpus/<target>/*`) through the fuzz targets'
//! checks, on stable, in the normal test run: what the fuzzer found once stays checked.

#[path = "../fuzz/src/checks.rs"]
#[allow(dead_code)]
mod checks;
#[path = "../fuzz/src/input.rs"]
#[allow(dead_code)]
mod input;
#[path = "../fuzz/src/mint.rs"]
#[allow(dead_code)]
mod mint;

use std::path::Path;

fn replay(target: &str, check: fn(&[u8]) -> bool) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target);
    let mut inputs: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .collect();
    inputs.sort();
    assert!(
        inputs.len() >= 10,
        "{target}: only {} stored inputs",
        inputs.len()
    );
    let mut exercised = 0;
    for path in &inputs {
        let data = std::fs::read(path).unwrap();
        match std::panic::catch_unwind(|| check(&data)) {
            Ok(ran) => exercised += usize::from(ran),
            Err(_) => panic!("{target}: {} fails", path.display()),
        }
    }
    // Inputs the builders refuse are fine, but most stored inputs must reach the checks.
    assert!(
        exercised * 2 > inputs.len(),
        "{target}: only {exercised} of {} inputs reached a check",
        inputs.len()
    );
    eprintln!(
        "{target}: replayed {} inputs, {exercised} checked",
        inputs.len()
    );
}

#[test]
fn decode_corpus() {
    replay("decode", checks::decode);
}

#[test]
fn parse_corpus() {
    replay("parse", checks::parse);
}

#[test]
fn generator_corpus() {
    replay("generator", mint::generator);
}
