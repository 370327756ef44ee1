//! loom models of ksched's concurrent parts, one model per file under `tests/`, each checking
//! one invariant. They run only under `RUSTFLAGS="--cfg ksched_loom"` (see README.md); in a
//! normal build this crate is empty.
//!
//! Arrows: the models import `ksched-engine` only (its `sync` shim resolves to loom's types).
