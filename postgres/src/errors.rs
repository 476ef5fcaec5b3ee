//! What a PostgreSQL error means for a claim: a refusal the operator must fix (a role, a
//! password, a privilege, a certificate), data the store cannot read, or an outage the
//! next attempt may get past (a failover, a restart, a timeout).

use std::string::{String, ToString};

use flakeid::claim::store::unreachable;
use flakeid::claim::{ClaimError, Reason};
use tokio_postgres::error::SqlState;

/// The answer `e` stands for, for the store at `url` whose tables are in `schema`.
pub(crate) fn pg_error(url: &str, schema: &str, e: tokio_postgres::Error) -> ClaimError {
    let (answer, words) = answer(schema, &e);
    let reason = Reason::caused_by(words, e);
    match answer {
        Answer::Refused => ClaimError::Refused {
            store: url.into(),
            reason,
        },
        Answer::Corrupt => ClaimError::Corrupt {
            path: format!("{url} schema {schema}"),
            reason,
        },
        Answer::NoPassword => ClaimError::NoPassword { url: url.into() },
        Answer::Unreachable => unreachable(url, reason),
    }
}

/// What a PostgreSQL error stands for, before its words are joined to the error.
enum Answer {
    Refused,
    Corrupt,
    NoPassword,
    Unreachable,
}

/// What `e` stands for, and the words that say what to do about it.
fn answer(schema: &str, e: &tokio_postgres::Error) -> (Answer, String) {
    let refused = |words: String| (Answer::Refused, words);
    let outage = |words: String| (Answer::Unreachable, words);
    if let Some(db) = e.as_db_error() {
        let message = db.message();
        let code = db.code();
        if *code == SqlState::INVALID_AUTHORIZATION_SPECIFICATION
            && message.contains("no pg_hba.conf entry")
        {
            let tls = if message.contains("no encryption") {
                "; the server may take only TLS here: give sslmode=verify-full"
            } else {
                ""
            };
            return refused(format!(
                "pg_hba.conf has no line that lets this role in from here ({message}){tls}"
            ));
        }
        if *code == SqlState::INVALID_PASSWORD
            || *code == SqlState::INVALID_AUTHORIZATION_SPECIFICATION
        {
            return refused(format!(
                "the role or its password was refused ({message}): check the role in the URL and password-file=, or the client certificate pg_hba.conf asks for"
            ));
        }
        if *code == SqlState::INSUFFICIENT_PRIVILEGE {
            return refused(format!(
                "permission denied ({message}): grant the role what the store needs and no more: `{}` (flakeid-postgres's README)",
                crate::grants::grant_statements(schema, "ROLE").replace('\n', " ")
            ));
        }
        if *code == SqlState::INVALID_CATALOG_NAME {
            return refused(format!(
                "{message}: create the database, or name one that exists in the URL's path"
            ));
        }
        if *code == SqlState::UNDEFINED_TABLE
            || *code == SqlState::UNDEFINED_COLUMN
            || *code == SqlState::DATATYPE_MISMATCH
        {
            return (
                Answer::Corrupt,
                format!(
                    "{message}: the store's tables were altered by hand; restore them as flakeid-postgres's README creates them"
                ),
            );
        }
        if *code == SqlState::READ_ONLY_SQL_TRANSACTION {
            return outage(format!(
                "the server takes no writes ({message}): a standby, or a primary in read-only mode; a failover in progress ends this"
            ));
        }
        if *code == SqlState::QUERY_CANCELED {
            return outage(format!(
                "a statement ran past its bound and was cancelled ({message})"
            ));
        }
        return outage(format!("{message} (SQLSTATE {})", code.code()));
    }
    let text = chain(e);
    // The server asked for the role's password and none was given (tokio-postgres's
    // words): a setting to fix, not an outage to retry.
    if text.contains("password missing") {
        return (Answer::NoPassword, text);
    }
    if text.contains(crate::auth::REFUSED) {
        return refused(text);
    }
    if text.contains("does not allow writes") {
        return outage(no_writes_text(None));
    }
    if let Some(reason) = tls_refusal(&text) {
        return refused(format!("{reason} ({text})"));
    }
    outage(text)
}

/// A host (`host`, or every host of the URL) that answered but takes no writes: a standby,
/// or a primary in read-only mode, as the client's read-write check or the store's own
/// finds it.
pub(crate) fn takes_no_writes(url: &str, host: Option<&str>) -> ClaimError {
    unreachable(url, no_writes_text(host))
}

fn no_writes_text(host: Option<&str>) -> String {
    let which = match host {
        Some(host) => format!("{host} is not a host that takes writes"),
        None => "no host of the URL takes writes".into(),
    };
    format!(
        "{which} (a standby, or a primary in read-only mode; a failover in progress ends this): list the primary's host in the URL"
    )
}

/// The error and its sources, as one line.
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let s_text = s.to_string();
        if !text.contains(&s_text) {
            text.push_str(": ");
            text.push_str(&s_text);
        }
        source = s.source();
    }
    text
}

/// What a TLS failure in an error's text means, and what to do.
fn tls_refusal(text: &str) -> Option<&'static str> {
    const FAILURES: [(&str, &str); 9] = [
        (
            "UnknownIssuer",
            "the server's certificate is not trusted: give sslrootcert= the CA bundle that signed it",
        ),
        (
            "NotValidForName",
            "the server's certificate does not name the host in the URL: connect by a name it holds",
        ),
        (
            "not valid for name",
            "the server's certificate does not name the host in the URL: connect by a name it holds",
        ),
        (
            "certificate expired",
            "the server's certificate has expired: renew it",
        ),
        (
            "CertExpired",
            "the server's certificate has expired: renew it",
        ),
        (
            "invalid peer certificate",
            "the server's certificate is not trusted: give sslrootcert= the CA bundle that signed it",
        ),
        (
            "server does not support TLS",
            "the server does not speak TLS: give sslmode=disable, or turn ssl on in the server",
        ),
        (
            "CertificateRequired",
            "the server wants a client certificate: give sslcert= and sslkey=",
        ),
        (
            "UnknownCA",
            "the server refused this client's certificate: give sslcert= one signed by a CA the server trusts",
        ),
    ];
    FAILURES
        .iter()
        .find(|(name, _)| text.contains(name))
        .map(|(_, what)| *what)
}

#[cfg(test)]
mod tests {

    /// A store nobody answers for is unreachable with the socket's error as the source;
    /// an error of the client is kept as tokio-postgres's own.
    #[test]
    fn an_unreachable_store_keeps_the_client_error_as_its_source() {
        use flakeid::claim::store::{FromUrl, StoreUrl};
        let url = StoreUrl::parse("postgres://u@127.0.0.1:9/db").unwrap();
        let options =
            flakeid::claim::OpenOptions::default().timeout(core::time::Duration::from_millis(500));
        let e = crate::PostgresStore::from_url(&url, &options).unwrap_err();
        assert!(
            matches!(e, flakeid::claim::ClaimError::Unreachable { .. }),
            "{e}"
        );
        let source = std::error::Error::source(&e).expect("a source");
        let io = source.downcast_ref::<std::io::Error>();
        assert_eq!(
            io.map(std::io::Error::kind),
            Some(std::io::ErrorKind::ConnectionRefused),
            "{source:?}"
        );
    }

    use super::tls_refusal;

    /// Each TLS failure rustls names says what to give; other transport errors are not
    /// read as TLS refusals.
    #[test]
    fn tls_failures_say_what_to_give() {
        for (text, says) in [
            ("invalid peer certificate: UnknownIssuer", "sslrootcert="),
            (
                "error performing TLS handshake: server does not support TLS",
                "sslmode=disable",
            ),
            ("received fatal alert: CertificateRequired", "sslcert="),
            (
                "invalid peer certificate: certificate not valid for name \"localhost\"; certificate is only valid for IpAddress(127.0.0.1)",
                "does not name the host",
            ),
        ] {
            assert!(
                tls_refusal(text).is_some_and(|r| r.contains(says)),
                "{text}"
            );
        }
        assert_eq!(tls_refusal("Connection refused (os error 111)"), None);
    }
}
