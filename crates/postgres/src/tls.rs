//! TLS to the database: used when the URL says `sslmode=require`, and then always
//! verified, the chain against the public roots (and a CA file of the operator's) and
//! the name against the URL's host. There is no unverified TLS: a certificate of a
//! private CA is trusted by naming that CA's file. Without `sslmode=require` the
//! connection is plain, as on a database on the same host.

use std::path::Path;
use std::sync::Arc;

use fundi_runtime::store::StoreError;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use tokio_postgres::config::SslMode;
use tokio_postgres_rustls::MakeRustlsConnect;

/// The connector for `config`'s connections: `None` for plain ones.
pub(crate) fn connector(
    config: &tokio_postgres::Config,
    ca_file: Option<&Path>,
) -> Result<Option<MakeRustlsConnect>, StoreError> {
    let wanted = config.get_ssl_mode() == SslMode::Require;
    let refused = |what: String| StoreError::database(format!("store.postgres: {what}"));
    if !wanted {
        return match ca_file {
            Some(path) => Err(refused(format!(
                "ca-file {} is set but the URL does not ask for TLS: add sslmode=require",
                path.display()
            ))),
            None => Ok(None),
        };
    }
    let mut roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    if let Some(path) = ca_file {
        let unreadable =
            |e: &dyn std::fmt::Display| refused(format!("ca-file {}: {e}", path.display()));
        let mut added = 0;
        for cert in CertificateDer::pem_file_iter(path).map_err(|e| unreadable(&e))? {
            let cert = cert.map_err(|e| unreadable(&e))?;
            roots.add(cert).map_err(|e| unreadable(&e))?;
            added += 1;
        }
        if added == 0 {
            return Err(unreadable(&"no PEM certificate in it"));
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| refused(format!("TLS: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Some(MakeRustlsConnect::new(tls)))
}
