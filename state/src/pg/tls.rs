//! TLS to the PostgreSQL server: the rustls connector (ring) for a URL's [`TlsPolicy`].
//!
//! `sslmode` and `sslrootcert` mean what they mean to libpq (see [`TlsPolicy::verify`]): `disable` never
//! negotiates TLS, `prefer` (the default) uses it when the server offers it, `require` insists on it,
//! `verify-ca` also checks that a trusted authority signed the server's certificate and `verify-full`
//! that the certificate is the host's. One difference: without `sslrootcert` and without
//! `~/.postgresql/root.crt`, the verifying modes trust the system's roots (libpq refuses to connect).

use crate::location::{RootCerts, TlsPolicy, Verify};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, RootCertStore, SignatureScheme};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio_postgres_rustls::MakeRustlsConnect;

/// The connector for `policy`, or what keeps trellis from building it (an unreadable `sslrootcert`,
/// no system roots) in words, with what to do.
pub(crate) fn connector(policy: &TlsPolicy) -> Result<MakeRustlsConnect, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    // libpq's default `sslrootcert`, when it exists (looked at once).
    let default_root = default_root_file().filter(|file| file.exists());
    let verify = policy.verify(default_root.is_some());
    let chain = match verify {
        Verify::Nothing => None,
        Verify::Chain | Verify::ChainAndHost => {
            let roots = match (&policy.roots, default_root) {
                (RootCerts::File(file), _) => roots_from_file(file)?,
                (RootCerts::System, _) | (RootCerts::Default, None) => system_roots()?,
                (RootCerts::Default, Some(file)) => roots_from_file(&file)?,
            };
            let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
                .build()
                .map_err(|e| format!("cannot check server certificates with these roots ({e})"))?;
            Some(webpki)
        }
    };
    let verifier: Arc<dyn ServerCertVerifier> = match (verify, chain) {
        (Verify::ChainAndHost, Some(webpki)) => webpki,
        (_, chain) => Arc::new(Libpq { chain, algorithms: provider.signature_verification_algorithms }),
    };
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("cannot set up TLS ({e})"))?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    Ok(MakeRustlsConnect::new(config))
}

/// libpq's default `sslrootcert`: `~/.postgresql/root.crt`.
fn default_root_file() -> Option<PathBuf> {
    std::env::var_os("HOME").map(|home| Path::new(&home).join(".postgresql/root.crt"))
}

/// The most bytes read of an `sslrootcert` file: a system's whole CA bundle is ~250 KB; a path that
/// names something else (`/dev/zero`, a log) stops here instead of filling memory.
const MAX_ROOT_FILE: u64 = 16 << 20;

/// The PEM certificates of `file`.
fn roots_from_file(file: &Path) -> Result<RootCertStore, String> {
    use std::io::Read as _;
    let mut text = Vec::new();
    std::fs::File::open(file)
        .and_then(|f| f.take(MAX_ROOT_FILE + 1).read_to_end(&mut text))
        .map_err(|e| format!("sslrootcert {}: cannot read it ({e})", file.display()))?;
    if text.len() as u64 > MAX_ROOT_FILE {
        return Err(format!(
            "sslrootcert {}: larger than 16 MiB, which no certificate file is; give the PEM file of the authority that signed the server's certificate",
            file.display()
        ));
    }
    let certs = CertificateDer::pem_slice_iter(&text)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("sslrootcert {}: not a PEM certificate file ({e})", file.display()))?;
    let mut roots = RootCertStore::empty();
    let (added, _) = roots.add_parsable_certificates(certs);
    if added == 0 {
        return Err(format!(
            "sslrootcert {}: holds no usable certificate; give the PEM file of the authority that signed the server's certificate",
            file.display()
        ));
    }
    Ok(roots)
}

/// The system's trusted roots (`SSL_CERT_FILE` / `SSL_CERT_DIR`, else the platform's store).
fn system_roots() -> Result<RootCertStore, String> {
    let found = rustls_native_certs::load_native_certs();
    let mut roots = RootCertStore::empty();
    let (added, _) = roots.add_parsable_certificates(found.certs);
    if added == 0 {
        let why = found.errors.first().map(|e| format!(" ({e})")).unwrap_or_default();
        return Err(format!(
            "no system root certificates found{why}; give the authority's certificate as sslrootcert=FILE in the URL"
        ));
    }
    Ok(roots)
}

/// The checks `verify-full` does not make, as libpq: `verify-ca` (and `prefer`/`require` with an
/// authority) checks the certificate chain and not the host name; `prefer`/`require` without one
/// check nothing of the certificate. Either way the handshake's signatures are checked.
#[derive(Debug)]
struct Libpq {
    /// The chain check, when there is an authority.
    chain: Option<Arc<WebPkiServerVerifier>>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for Libpq {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(chain) = &self.chain else {
            return Ok(ServerCertVerified::assertion());
        };
        match chain.verify_server_cert(end_entity, intermediates, server_name, ocsp, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// The rustls error behind a failed connection, if TLS is what failed (a certificate refused, a
/// handshake the server broke off).
pub(crate) fn tls_error(e: &tokio_postgres::Error) -> Option<&rustls::Error> {
    let mut source = std::error::Error::source(e);
    while let Some(err) = source {
        if let Some(tls) = err.downcast_ref::<rustls::Error>() {
            return Some(tls);
        }
        if let Some(inner) = err.downcast_ref::<std::io::Error>().and_then(std::io::Error::get_ref) {
            if let Some(tls) = inner.downcast_ref::<rustls::Error>() {
                return Some(tls);
            }
        }
        source = err.source();
    }
    None
}
