//! security-scan against local test servers on 127.0.0.1 (HTTP, and HTTPS with a CA and
//! certificates made at test time): each check with a known-bad and a known-good case,
//! TLS problems as findings, active checks within their budget, hostile targets.

mod security_scan {
    mod active;
    mod checks;
    mod grade;
    mod hostile;
    pub(crate) mod support;
    mod transport;
}
