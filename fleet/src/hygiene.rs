//! Secrets hygiene over any store with a password: the password never shows in what the
//! tool prints or the service serves.

use std::process::Command;
use std::time::Duration;

use crate::service;

/// A store that takes a password, and where it is kept.
pub struct Secured<'a> {
    /// The store's URL with the password's file in it (`password-file=`).
    pub url: &'a str,
    /// The same store's URL with the role or user and no password.
    pub without_password: &'a str,
    /// The file that holds the password.
    pub password_file: &'a str,
    /// The password.
    pub password: &'a str,
}

/// The password never shows, whether it came from the URL's file, a flag's file or the
/// environment: not in `gen`'s or `claims`' output (table and JSON), not in an error (a
/// wrong password, a password put in the URL), not in `serve`'s log, its `/metrics`
/// (labels included), `/v1/layout` or `/readyz`.
pub fn the_password_shows_nowhere(store: &Secured) {
    let run = |args: &[&str], env: &[(&str, &str)]| {
        let out = Command::new(crate::binary())
            .args(args)
            .envs(env.iter().copied())
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.success(), text)
    };
    let (url, no_file) = (store.url, store.without_password);
    let mut all = String::new();
    type Case<'a> = (Vec<&'a str>, Vec<(&'a str, &'a str)>, bool);
    let cases: Vec<Case> = vec![
        (
            vec!["gen", "-n", "3", "--claim", url, "--namespace", "h"],
            vec![],
            true,
        ),
        (
            vec![
                "gen",
                "-n",
                "3",
                "--claim",
                no_file,
                "--claim-password-file",
                store.password_file,
            ],
            vec![],
            true,
        ),
        (
            vec!["gen", "-n", "3", "--claim", no_file],
            vec![("FLAKEID_CLAIM_PASSWORD", store.password)],
            true,
        ),
        (
            vec!["claims", "--claim", url, "--namespace", "h"],
            vec![],
            true,
        ),
        (
            vec!["claims", "--json", "--claim", url, "--namespace", "h"],
            vec![],
            true,
        ),
        // Refused: a wrong password (the right one given too, in the environment, to a
        // flag that reads a file instead), and one put in the URL.
        (
            vec![
                "gen",
                "-n",
                "1",
                "--claim",
                no_file,
                "--claim-password-file",
                "/dev/null",
            ],
            vec![("FLAKEID_CLAIM_PASSWORD", store.password)],
            false,
        ),
        (
            vec!["gen", "-n", "1", "--claim", no_file],
            vec![("FLAKEID_CLAIM_PASSWORD", "wrong-pw")],
            false,
        ),
    ];
    for (args, env, ok) in &cases {
        let (success, text) = run(args, env);
        assert_eq!(success, *ok, "{args:?}: {text}");
        all += &text;
    }
    let sep = if no_file.contains('?') { '&' } else { '?' };
    let in_url = format!("{no_file}{sep}password={}", store.password);
    let (success, text) = run(&["gen", "-n", "1", "--claim", &in_url], &[]);
    assert!(!success && text.contains("never goes in the URL"), "{text}");
    all += &text;

    let mut s = service::serve(
        &["--claim", url, "--namespace", "h", "--shards", "1"],
        Duration::from_secs(30),
    );
    let c = service::client();
    for route in ["/metrics", "/v1/layout", "/readyz"] {
        all += &c.get(s.url(route)).send().unwrap().text().unwrap();
    }
    s.signal("TERM");
    let (status, rest) = s.wait(Duration::from_secs(20));
    assert!(status.success(), "{status:?} {rest:?}");
    all += &format!("{:?}{rest:?}", s.before);
    assert!(all.contains("flakeid_"), "{all}");
    assert!(!all.contains(store.password), "the password showed: {all}");
}
