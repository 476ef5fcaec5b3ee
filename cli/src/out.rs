//! What every subcommand shares for its ends: [`CliError`] (an error with the flag it is
//! about, printed as `error: --flag: message`), warnings on standard error, and output
//! that ends quietly on a closed pipe.

use std::io::{self, Write};

/// An error with the flag it concerns, printed as `error: --flag: message`.
pub(crate) struct CliError {
    flag: Option<&'static str>,
    message: String,
}

impl CliError {
    pub(crate) fn new(flag: Option<&'static str>, e: impl std::fmt::Display) -> Self {
        CliError {
            flag,
            message: e.to_string(),
        }
    }
}

pub(crate) type CliResult<T = ()> = Result<T, CliError>;

impl CliError {
    /// Prints the error on standard error, with its flag.
    pub(crate) fn print(&self) {
        match self.flag {
            Some(flag) => warn(format_args!("error: {flag}: {}", self.message)),
            None => warn(format_args!("error: {}", self.message)),
        }
    }
}

/// A line on standard error; a closed standard error is not worth a panic.
pub(crate) fn warn(line: std::fmt::Arguments<'_>) {
    let _ = writeln!(io::stderr().lock(), "{line}");
}

pub(crate) fn io_err(e: io::Error) -> CliError {
    CliError::new(None, e)
}

/// `flakeid gen | head` closes the pipe early; that is not an error, for any subcommand.
pub(crate) fn quiet_on_broken_pipe<T>(e: io::Error) -> CliResult<T> {
    if e.kind() == io::ErrorKind::BrokenPipe {
        std::process::exit(0);
    }
    Err(io_err(e))
}

/// Writes `text` to standard output, a closed pipe being a normal end.
pub(crate) fn print_out(text: &str) -> CliResult {
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .or_else(quiet_on_broken_pipe)
}
