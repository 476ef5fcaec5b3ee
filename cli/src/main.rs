//! The `flakeid` binary: the tool of the `flakeid-cli` library.

fn main() -> std::process::ExitCode {
    flakeid_cli::main()
}
