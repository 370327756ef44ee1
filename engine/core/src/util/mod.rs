//! Small utilities with no scheduling meaning: time, a seedable RNG, a cheaply cloned SmallVec.

pub mod copy_vec;
pub mod duration;
pub mod hash;
pub mod rng;
pub mod time;
