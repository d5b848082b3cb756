//! The checks, grouped as the scan reports progress.

pub(crate) mod active;
pub(crate) mod content;
pub(crate) mod cookies;
pub(crate) mod cors;
pub(crate) mod headers;
pub(crate) mod transport;
