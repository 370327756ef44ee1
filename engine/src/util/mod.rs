//! Small utilities with no scheduling meaning: time, a seedable RNG.

pub mod hash;
pub mod rng;
pub mod time;
