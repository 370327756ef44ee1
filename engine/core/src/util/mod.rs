//! Small utilities with no scheduling meaning: time, a seedable RNG, a cheaply cloned SmallVec.

pub mod copy_vec;
pub mod duration;
pub mod hash;
pub mod rng;
pub mod shard_map;
pub mod slowdown;
pub mod time;

/// A prefetch hint for the cache line at `p`.
#[inline(always)]
pub fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `prefetch` reads nothing and writes nothing (a hint to the cache; no fault even
    // for an invalid address), and SSE, which it needs, is part of baseline x86-64. Callers
    // pass addresses inside live column arrays and live `Arc` allocations anyway. Tested by
    // `prefetch_changes_nothing` (columns) and the `PVec` property tests.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
