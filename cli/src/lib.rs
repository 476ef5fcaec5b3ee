//! `flakeid`: mint, decode, compose and explain Snowflake-family IDs from the shell, claim
//! node ids from a store, serve IDs over HTTP and gRPC. The `flakeid` binary is [`main`];
//! this library is there so that a program can run the same tool with stores of its own
//! registered (`flakeid_stores::register`).
//!
//! One module per subcommand (`generate`, `decode`, `compose`, `layout`, `range`,
//! `claims`, `bench`, `serve`); below them what they share: `out` (errors and output), `flags`
//! (`--layout` and the node flags), `stores` (the claim flags and the stores), `args`.
#![warn(missing_docs)]

mod args;
mod bench;
mod claims;
mod compose;
mod decode;
mod flags;
mod generate;
mod layout;
mod out;
mod range;
#[cfg(feature = "serve")]
mod serve;
mod stores;

use std::process::ExitCode;

use clap::Parser;

use args::{Cli, Command};

/// Runs the `flakeid` tool on the process's arguments, as the `flakeid` binary does; a
/// program that registers stores of its own with `flakeid_stores` first reaches them
/// through `--claim`, `serve` and `claims`. The exit code is the subcommand's: 0 on
/// success, 1 when `decode` skipped bad input, 2 on an error (printed as
/// `error: --flag: message`), 128+N when a signal N stopped `gen`.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Gen(a) => generate::run(a),
        Command::Decode(a) => decode::run(a),
        Command::Compose(a) => compose::run(a),
        Command::Layout(a) => layout::run(a),
        Command::Range(a) => range::run(a),
        Command::Claims(a) => claims::run(a),
        Command::Bench(a) => bench::run(a),
        #[cfg(feature = "serve")]
        Command::Serve(a) => serve::run(a),
        #[cfg(not(feature = "serve"))]
        Command::Serve(_) => Err(out::CliError::new(
            None,
            "this flakeid was built without the service (feature `serve` turned off): install it with `cargo install --locked flakeid-cli`",
        )),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            e.print();
            ExitCode::from(2)
        }
    }
}
