//! Helpers shared by the integration tests.

pub mod git;
pub mod guest;
pub mod jackd;
pub mod lava;
pub mod pipewire;
pub mod run;
pub mod sysctl;
