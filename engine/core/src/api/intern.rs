//! Interned strings: label keys and values, taint keys, node names, image names.
//!
//! The hot path compares `Sym`s (one `u32` compare) instead of strings. Interned strings live
//! for the life of the process: the set of distinct label keys, values and names in a cluster
//! is small next to the number of comparisons made with them.
//!
//! Interning (`Sym::new`) takes the interner's lock and hashes the string; reading a symbol's
//! text (`Sym::as_str`) takes no lock: the strings sit in an append-only table of segments
//! (segment `k` holds `BASE << k` strings), each segment and each slot written once through a
//! `OnceLock`, so a reader does two acquire loads. Names the engine compares against on hot
//! paths are pre-interned at fixed ids (`Sym::METADATA_NAME`, ...), so comparing with them
//! needs no lookup at all.

use std::fmt;
use std::sync::OnceLock;

use crate::sync::GlobalRwLock;
use crate::util::hash::FxHashMap;

/// An interned string. `Sym::EMPTY` is the empty string.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Sym(u32);

/// Strings interned at fixed ids before anything else, in id order.
const WELL_KNOWN: [&str; 3] = ["", "metadata.name", "0.0.0.0"];

/// Slots of segment 0; segment `k` has `BASE << k`.
const BASE: usize = 1024;
/// Enough segments for every `u32` id.
const SEGMENTS: usize = 23;

type Slot = OnceLock<&'static str>;

/// The strings by id, readable without a lock.
static TABLE: [OnceLock<Box<[Slot]>>; SEGMENTS] = [const { OnceLock::new() }; SEGMENTS];

/// (segment, offset) of id `i`: segment `k` covers ids `BASE * (2^k - 1) .. BASE * (2^(k+1) - 1)`.
#[inline]
fn locate(i: usize) -> (usize, usize) {
    let x = i / BASE + 1;
    let k = (usize::BITS - 1 - x.leading_zeros()) as usize;
    (k, i - BASE * ((1 << k) - 1))
}

struct Interner {
    ids: FxHashMap<&'static str, Sym>,
    len: usize,
}

impl Interner {
    /// Appends `s` as the next id. Called with the write lock held (or during init).
    fn push(&mut self, s: &'static str) -> Sym {
        let id = Sym(u32::try_from(self.len).expect("more than 2^32 distinct strings interned"));
        let (k, off) = locate(self.len);
        let segment = TABLE[k].get_or_init(|| (0..BASE << k).map(|_| OnceLock::new()).collect());
        // Each id is pushed once, under the lock: the slot is empty.
        let _ = segment[off].set(s);
        self.ids.insert(s, id);
        self.len += 1;
        id
    }
}

fn interner() -> &'static GlobalRwLock<Interner> {
    static INTERNER: OnceLock<GlobalRwLock<Interner>> = OnceLock::new();
    INTERNER.get_or_init(|| {
        let mut i = Interner { ids: FxHashMap::default(), len: 0 };
        for s in WELL_KNOWN {
            i.push(s);
        }
        GlobalRwLock::new(i)
    })
}

impl Sym {
    /// The empty string.
    pub const EMPTY: Sym = Sym(0);
    /// `metadata.name`, the one field node selectors' `matchFields` may name.
    pub const METADATA_NAME: Sym = Sym(1);
    /// `0.0.0.0`, the wildcard host IP.
    pub const ANY_IP: Sym = Sym(2);

    /// Interns `s`, returning the same `Sym` for equal strings.
    pub fn new(s: &str) -> Sym {
        if s.is_empty() {
            return Sym::EMPTY;
        }
        {
            let r = interner().read().unwrap_or_else(|e| e.into_inner());
            if let Some(&id) = r.ids.get(s) {
                return id;
            }
        }
        let mut w = interner().write().unwrap_or_else(|e| e.into_inner());
        if let Some(&id) = w.ids.get(s) {
            return id;
        }
        // Interned strings are never freed (see the module docs).
        let leaked: &'static str = Box::leak(s.to_owned().into_boxed_str());
        w.push(leaked)
    }

    /// The interned string, if `s` was interned before; never interns.
    pub fn lookup(s: &str) -> Option<Sym> {
        let r = interner().read().unwrap_or_else(|e| e.into_inner());
        r.ids.get(s).copied()
    }

    /// The string this symbol stands for. Takes no lock.
    #[inline]
    pub fn as_str(self) -> &'static str {
        if self.0 == 0 {
            return "";
        }
        let (k, off) = locate(self.0 as usize);
        // A `Sym` other than the well-known constants comes from `Sym::new`, whose slot write
        // happened before it returned; the well-known ones are written when the interner is
        // first built, which the fallback below forces.
        match TABLE[k].get().and_then(|seg| seg[off].get()) {
            Some(s) => s,
            None => {
                interner();
                TABLE[k].get().and_then(|seg| seg[off].get()).copied().unwrap_or("")
            }
        }
    }

    pub fn is_empty(self) -> bool {
        self == Sym::EMPTY
    }

    /// The raw id, for dense tables.
    pub fn id(self) -> u32 {
        self.0
    }
}

impl From<&str> for Sym {
    fn from(s: &str) -> Sym {
        Sym::new(s)
    }
}

impl fmt::Debug for Sym {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.as_str())
    }
}

impl fmt::Display for Sym {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sym_equal_strings_equal_ids() {
        let a = Sym::new("topology.kubernetes.io/zone");
        let b = Sym::new(&String::from("topology.kubernetes.io/zone"));
        assert_eq!(a, b);
        assert_ne!(a, Sym::new("topology.kubernetes.io/region"));
        assert_eq!(a.as_str(), "topology.kubernetes.io/zone");
        assert_eq!(Sym::new(""), Sym::EMPTY);
        assert!(Sym::lookup("never-interned-string-xyz").is_none());
    }

    #[test]
    fn sym_well_known_ids_are_the_interned_strings() {
        assert_eq!(Sym::METADATA_NAME.as_str(), "metadata.name");
        assert_eq!(Sym::new("metadata.name"), Sym::METADATA_NAME);
        assert_eq!(Sym::new("0.0.0.0"), Sym::ANY_IP);
        assert_eq!(Sym::EMPTY.as_str(), "");
    }

    #[test]
    fn sym_locate_covers_ids_without_gaps() {
        // Consecutive ids map to consecutive slots, crossing segment boundaries.
        let mut prev = locate(0);
        assert_eq!(prev, (0, 0));
        for i in 1..(BASE * 40) {
            let (k, off) = locate(i);
            let want = if prev.1 + 1 == BASE << prev.0 { (prev.0 + 1, 0) } else { (prev.0, prev.1 + 1) };
            assert_eq!((k, off), want, "id {i}");
            prev = (k, off);
        }
        let (k, off) = locate(u32::MAX as usize);
        assert!(k < SEGMENTS && off < BASE << k);
    }

    #[test]
    fn sym_as_str_reads_strings_interned_on_other_threads() {
        let handles: Vec<_> = (0..4)
            .map(|t| {
                std::thread::spawn(move || {
                    (0..3000)
                        .map(|i| {
                            let s = format!("intern-test-{t}-{i}");
                            (Sym::new(&s), s)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for h in handles {
            for (sym, s) in h.join().expect("interning thread") {
                assert_eq!(sym.as_str(), s);
            }
        }
    }
}
