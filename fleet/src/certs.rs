//! Certificates the security tests make themselves (rcgen): a CA, a server certificate
//! for 127.0.0.1 and localhost, a client certificate; written as PEM files into a
//! directory.

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose, SanType,
};

/// The PEM files of one CA and the certificates it signed.
pub struct Certs {
    pub ca: PathBuf,
    pub server_cert: PathBuf,
    pub server_key: PathBuf,
    pub client_cert: PathBuf,
    pub client_key: PathBuf,
}

/// A CA named `name`, and a server and a client certificate it signs (the client's common
/// name `client_cn`), written into `dir` as `NAME-ca.pem`, `NAME-server.pem`, ....
pub fn make(dir: &Path, name: &str, client_cn: &str) -> Certs {
    std::fs::create_dir_all(dir).unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params
        .distinguished_name
        .push(DnType::CommonName, format!("flakeid test CA {name}"));
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();

    let leaf = |cn: &str, purpose: ExtendedKeyUsagePurpose| {
        let mut params = CertificateParams::new(vec!["localhost".to_string()]).unwrap();
        params
            .subject_alt_names
            .push(SanType::IpAddress([127, 0, 0, 1].into()));
        params.distinguished_name.push(DnType::CommonName, cn);
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![purpose];
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &ca).unwrap();
        (cert.pem(), key.serialize_pem())
    };
    let (server, server_key) = leaf("127.0.0.1", ExtendedKeyUsagePurpose::ServerAuth);
    let (client, client_key) = leaf(client_cn, ExtendedKeyUsagePurpose::ClientAuth);
    let write = |file: &str, text: &str| {
        let path = dir.join(format!("{name}-{file}"));
        if file.ends_with("key.pem") {
            crate::write_secret(&path, text);
        } else {
            std::fs::write(&path, text).unwrap();
        }
        path
    };
    Certs {
        ca: write("ca.pem", &ca.pem()),
        server_cert: write("server.pem", &server),
        server_key: write("server-key.pem", &server_key),
        client_cert: write("client.pem", &client),
        client_key: write("client-key.pem", &client_key),
    }
}
