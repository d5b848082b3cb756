//! fundi-runtime: durable, supervised A2A tasks.
#![allow(missing_docs)]

pub mod model;
pub mod store;
mod transition;

pub use transition::{TransitionError, transition};
