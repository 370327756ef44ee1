//! Interned strings: label keys and values, taint keys, node names, image names.
//!
//! The hot path compares `Sym`s (one `u32` compare) instead of strings. Interned strings live
//! for the life of the process: the set of distinct label keys, values and names in a cluster
//! is small next to the number of comparisons made with them.

use std::collections::HashMap;
use std::fmt;
use std::sync::OnceLock;

use crate::sync::GlobalRwLock;

/// An interned string. `Sym::EMPTY` is the empty string.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Sym(u32);

struct Interner {
    ids: HashMap<&'static str, Sym>,
    strings: Vec<&'static str>,
}

fn interner() -> &'static GlobalRwLock<Interner> {
    static INTERNER: OnceLock<GlobalRwLock<Interner>> = OnceLock::new();
    INTERNER.get_or_init(|| {
        let mut ids = HashMap::new();
        ids.insert("", Sym(0));
        GlobalRwLock::new(Interner { ids, strings: vec![""] })
    })
}

impl Sym {
    /// The empty string.
    pub const EMPTY: Sym = Sym(0);

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
        let id = Sym(u32::try_from(w.strings.len()).expect("more than 2^32 distinct strings interned"));
        w.strings.push(leaked);
        w.ids.insert(leaked, id);
        id
    }

    /// The interned string, if `s` was interned before; never interns.
    pub fn lookup(s: &str) -> Option<Sym> {
        let r = interner().read().unwrap_or_else(|e| e.into_inner());
        r.ids.get(s).copied()
    }

    /// The string this symbol stands for.
    pub fn as_str(self) -> &'static str {
        let r = interner().read().unwrap_or_else(|e| e.into_inner());
        r.strings[self.0 as usize]
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
}
