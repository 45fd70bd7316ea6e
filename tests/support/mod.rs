//! Helpers shared by the integration tests.

pub mod jackd;
pub mod pipewire;
