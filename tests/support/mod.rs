//! Helpers shared by the integration tests.

pub mod guest;
pub mod jackd;
pub mod run;
pub mod sysctl;
pub mod pipewire;
