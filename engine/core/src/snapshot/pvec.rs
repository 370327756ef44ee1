//! A persistent vector: a radix-32 trie of `Arc`ed nodes. Cloning is O(1); `set` copies only
//! the path to one leaf (depth × 32 pointers: 3 levels up to 32768 elements, 4 up to a
//! million), so publishing a snapshot after one node changed costs the same at 1000 or 20000
//! nodes. Iteration walks whole leaves, so a scan touches each element once in order.

use std::sync::{Arc, Weak};

use crate::util::prefetch;

const BITS: u32 = 5;
const WIDTH: usize = 1 << BITS;
const MASK: usize = WIDTH - 1;

/// What cloning or dropping an element writes besides the element itself: an `Arc`'s
/// counts, in the pointee's allocation. A copied or dropped node of the trie changes the
/// counts of up to `WIDTH` elements or children, each on its own cache line, and an atomic
/// increment cannot overlap another one's cache miss; so `PVec` prefetches the counts of
/// the whole node first, and the misses overlap instead of queueing.
pub trait Element: Clone {
    /// Where this element's clone and drop write, if anywhere else than in itself.
    #[inline]
    fn counts(&self) -> Option<*const u8> {
        None
    }
}

impl<T> Element for Arc<T> {
    #[inline]
    fn counts(&self) -> Option<*const u8> {
        Some(arc_counts(self))
    }
}

#[cfg(test)]
impl Element for u32 {}
#[cfg(test)]
impl Element for usize {}

/// The address of `a`'s counts: they precede the value in its allocation (a hint only; an
/// address a line off costs a useless prefetch, nothing else).
#[inline]
pub(crate) fn arc_counts<T>(a: &Arc<T>) -> *const u8 {
    (Arc::as_ptr(a) as *const u8).wrapping_sub(2 * std::mem::size_of::<usize>())
}

#[derive(Clone, Debug)]
enum Trie<T: Element> {
    Leaf(Vec<T>),
    Inner(Vec<Arc<Trie<T>>>),
}

impl<T: Element> Trie<T> {
    /// Prefetches the counts a copy or drop of this node writes.
    #[inline]
    fn prefetch_counts(&self) {
        match self {
            Trie::Leaf(items) => items.iter().filter_map(Element::counts).for_each(prefetch),
            Trie::Inner(children) => children.iter().map(arc_counts).for_each(prefetch),
        }
    }
}

impl<T: Element> Drop for Trie<T> {
    /// The node's children are released next, each count on its own line: fetch them all
    /// at once first.
    fn drop(&mut self) {
        self.prefetch_counts();
    }
}

/// `Arc::make_mut` on a trie node: when it is shared, prefetches the counts its copy writes
/// and copies it with room for `room` more entries (a push's copy then takes no second
/// allocation to grow).
#[inline]
fn unique<T: Element>(node: &mut Arc<Trie<T>>, room: usize) -> &mut Trie<T> {
    if Arc::get_mut(node).is_none() {
        #[cfg(test)]
        NODE_COPIES.with(|n| n.set(n.get() + 1));
        node.prefetch_counts();
        fn copy<X: Clone>(v: &[X], room: usize) -> Vec<X> {
            let mut c = Vec::with_capacity(v.len() + room);
            c.extend_from_slice(v);
            c
        }
        *node = Arc::new(match &**node {
            Trie::Leaf(v) => Trie::Leaf(copy(v, room)),
            Trie::Inner(v) => Trie::Inner(copy(v, room)),
        });
    }
    // Unique now: `make_mut` copies nothing.
    Arc::make_mut(node)
}

#[cfg(test)]
thread_local! {
    /// Trie nodes copied because they were shared, on this thread (tests of the publish's
    /// double buffering).
    pub(crate) static NODE_COPIES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

#[derive(Clone, Debug)]
pub struct PVec<T: Element> {
    root: Arc<Trie<T>>,
    len: usize,
    /// Bit shift of the root's child index; 0 when the root is a leaf.
    shift: u32,
}

impl<T: Element> Default for PVec<T> {
    fn default() -> Self {
        PVec::from_vec(Vec::new())
    }
}

impl<T: Element> PVec<T> {
    pub fn from_vec(items: Vec<T>) -> PVec<T> {
        let len = items.len();
        let mut level: Vec<Arc<Trie<T>>> = Vec::with_capacity(len.div_ceil(WIDTH));
        let mut it = items.into_iter().peekable();
        while it.peek().is_some() {
            level.push(Arc::new(Trie::Leaf(it.by_ref().take(WIDTH).collect())));
        }
        let mut shift = 0;
        if level.is_empty() {
            return PVec { root: Arc::new(Trie::Leaf(Vec::new())), len, shift };
        }
        while level.len() > 1 {
            let mut up = Vec::with_capacity(level.len().div_ceil(WIDTH));
            let mut it = level.into_iter().peekable();
            while it.peek().is_some() {
                up.push(Arc::new(Trie::Inner(it.by_ref().take(WIDTH).collect())));
            }
            level = up;
            shift += BITS;
        }
        let root = level.pop().expect("one root remains");
        PVec { root, len, shift }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn leaf(&self, i: usize) -> &[T] {
        let mut node = &*self.root;
        let mut shift = self.shift;
        loop {
            match node {
                Trie::Leaf(v) => return v,
                Trie::Inner(children) => {
                    node = &children[(i >> shift) & MASK];
                    shift = shift.saturating_sub(BITS);
                }
            }
        }
    }

    #[inline]
    pub fn get(&self, i: usize) -> Option<&T> {
        if i >= self.len {
            return None;
        }
        Some(&self.leaf(i)[i & MASK])
    }

    /// Replaces element `i`, copying the path to it if it is shared. Panics if out of range
    /// (an internal caller error: the cache keeps indexes in step with the vector).
    pub fn set(&mut self, i: usize, value: T) {
        assert!(i < self.len, "PVec::set index {i} out of range {}", self.len);
        let mut node = &mut self.root;
        let mut shift = self.shift;
        loop {
            match unique(node, 0) {
                Trie::Leaf(v) => {
                    v[i & MASK] = value;
                    return;
                }
                Trie::Inner(children) => {
                    node = &mut children[(i >> shift) & MASK];
                    shift = shift.saturating_sub(BITS);
                }
            }
        }
    }

    /// Whether no other `PVec` shares this one's root (its subtrees may still be shared).
    pub fn is_unshared(&mut self) -> bool {
        Arc::get_mut(&mut self.root).is_some()
    }

    /// How many `PVec`s share this one's root, this one included.
    pub(crate) fn holders(&self) -> usize {
        Arc::strong_count(&self.root)
    }

    /// Calls `f(index, element)` for indexes `lo..hi` in order, a leaf at a time.
    #[inline]
    pub fn for_each_in(&self, lo: usize, hi: usize, mut f: impl FnMut(usize, &T)) {
        self.for_each_in_while(lo, hi, |i, x| {
            f(i, x);
            true
        });
    }

    /// Like `for_each_in`, stopping early (returning false) when `f` returns false.
    #[inline]
    pub fn for_each_in_while(&self, lo: usize, hi: usize, mut f: impl FnMut(usize, &T) -> bool) -> bool {
        let hi = hi.min(self.len);
        let mut i = lo;
        while i < hi {
            let leaf = self.leaf(i);
            let start = i & MASK;
            let end = (start + (hi - i)).min(leaf.len());
            for (k, item) in leaf[start..end].iter().enumerate() {
                if !f(i + k, item) {
                    return false;
                }
            }
            i += end - start;
        }
        true
    }

    /// Calls `f(index, old, new)` for every index where `old` and `self` hold elements that
    /// `same` says differ, skipping every subtree the two share (so after one `set` it visits
    /// one leaf). Returns false, visiting nothing, when the two differ in length or shape;
    /// callers then start over.
    pub fn diff(&self, old: &PVec<T>, same: impl Fn(&T, &T) -> bool, mut f: impl FnMut(usize, &T, &T)) -> bool {
        if self.len != old.len || self.shift != old.shift {
            return false;
        }
        fn walk<T: Element>(
            a: &Arc<Trie<T>>,
            b: &Arc<Trie<T>>,
            base: usize,
            shift: u32,
            same: &impl Fn(&T, &T) -> bool,
            f: &mut impl FnMut(usize, &T, &T),
        ) -> bool {
            if Arc::ptr_eq(a, b) {
                return true;
            }
            match (&**a, &**b) {
                (Trie::Leaf(x), Trie::Leaf(y)) if x.len() == y.len() => {
                    for (k, (o, n)) in x.iter().zip(y).enumerate() {
                        if !same(o, n) {
                            f(base + k, o, n);
                        }
                    }
                    true
                }
                (Trie::Inner(x), Trie::Inner(y)) if x.len() == y.len() => {
                    let child = shift.saturating_sub(BITS);
                    x.iter().zip(y).enumerate().all(|(k, (o, n))| walk(o, n, base + (k << shift), child, same, f))
                }
                _ => false,
            }
        }
        // Shapes are checked before any callback, so a false result has visited nothing.
        let mut changed = Vec::new();
        if !walk(&old.root, &self.root, 0, self.shift, &same, &mut |i, _: &T, _: &T| changed.push(i)) {
            return false;
        }
        for i in changed {
            if let (Some(o), Some(n)) = (old.get(i), self.get(i)) {
                f(i, o, n);
            }
        }
        true
    }

    pub fn iter(&self) -> Iter<'_, T> {
        Iter { vec: self, leaf: [].iter(), next: 0 }
    }

    /// Appends `value`, copying only the path to the last leaf (O(log32 n)): a NodeInfo
    /// shared with a published snapshot takes a pod without copying its other pods.
    pub fn push(&mut self, value: T) {
        if self.len > 0 && self.len == WIDTH << self.shift {
            // The root is full: it becomes the first child of a new root.
            let old = std::mem::replace(&mut self.root, Arc::new(Trie::Inner(Vec::new())));
            self.root = Arc::new(Trie::Inner(vec![old]));
            self.shift += BITS;
        }
        let i = self.len;
        let mut node = &mut self.root;
        let mut shift = self.shift;
        loop {
            match unique(node, 1) {
                Trie::Leaf(v) => {
                    v.push(value);
                    break;
                }
                Trie::Inner(children) => {
                    let k = (i >> shift) & MASK;
                    if k == children.len() {
                        let child =
                            if shift == BITS { Trie::Leaf(Vec::with_capacity(WIDTH)) } else { Trie::Inner(Vec::new()) };
                        children.push(Arc::new(child));
                    }
                    node = &mut children[k];
                    shift = shift.saturating_sub(BITS);
                }
            }
        }
        self.len += 1;
    }

    /// Empties the vector, in place (keeping the leaf's buffer) when nothing shares it.
    pub fn clear(&mut self) {
        if self.len == 0 && self.shift == 0 {
            return;
        }
        match Arc::get_mut(&mut self.root) {
            Some(Trie::Leaf(v)) => v.clear(),
            _ => self.root = Arc::new(Trie::Leaf(Vec::new())),
        }
        self.len = 0;
        self.shift = 0;
    }

    /// Removes and returns the last element, copying only the path to it.
    pub fn pop(&mut self) -> Option<T> {
        fn pop_last<T: Element>(node: &mut Arc<Trie<T>>) -> Option<T> {
            match unique(node, 0) {
                Trie::Leaf(v) => v.pop(),
                Trie::Inner(children) => {
                    let last = children.last_mut()?;
                    let out = pop_last(last);
                    let empty = match &**last {
                        Trie::Leaf(v) => v.is_empty(),
                        Trie::Inner(c) => c.is_empty(),
                    };
                    if empty {
                        children.pop();
                    }
                    out
                }
            }
        }
        if self.len == 0 {
            return None;
        }
        let out = pop_last(&mut self.root);
        self.len -= 1;
        // A root with one child gives way to it, keeping the depth the length needs.
        while self.shift > 0 {
            let Trie::Inner(children) = &*self.root else { break };
            let [only] = children.as_slice() else { break };
            self.root = Arc::clone(only);
            self.shift -= BITS;
        }
        out
    }

    /// Removes element `i`, moving the last element into its place (`Vec::swap_remove`).
    pub fn swap_remove(&mut self, i: usize) -> Option<T> {
        if i >= self.len {
            return None;
        }
        let last = self.pop()?;
        if i == self.len {
            return Some(last);
        }
        let out = self.get(i).cloned();
        self.set(i, last);
        out
    }

    /// The index of the last element `f` accepts, searching from the end.
    pub fn rposition(&self, mut f: impl FnMut(&T) -> bool) -> Option<usize> {
        let mut l = self.len.div_ceil(WIDTH);
        while l > 0 {
            l -= 1;
            if let Some(k) = self.leaf(l * WIDTH).iter().rposition(&mut f) {
                return Some(l * WIDTH + k);
            }
        }
        None
    }

    pub fn to_vec(&self) -> Vec<T> {
        self.iter().cloned().collect()
    }
}

/// The elements of a `PVec` in order, a leaf at a time.
pub struct Iter<'a, T: Element> {
    vec: &'a PVec<T>,
    leaf: std::slice::Iter<'a, T>,
    /// Index of the first element of the next leaf.
    next: usize,
}

impl<'a, T: Element> Iterator for Iter<'a, T> {
    type Item = &'a T;

    #[inline]
    fn next(&mut self) -> Option<&'a T> {
        loop {
            if let Some(x) = self.leaf.next() {
                return Some(x);
            }
            if self.next >= self.vec.len {
                return None;
            }
            self.leaf = self.vec.leaf(self.next).iter();
            self.next += WIDTH;
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.leaf.len() + self.vec.len.saturating_sub(self.next);
        (n, Some(n))
    }
}

impl<T: Element> ExactSizeIterator for Iter<'_, T> {}

impl<'a, T: Element> IntoIterator for &'a PVec<T> {
    type Item = &'a T;
    type IntoIter = Iter<'a, T>;

    fn into_iter(self) -> Iter<'a, T> {
        self.iter()
    }
}

/// One version of a `PVec`, named without holding its elements: `is(v)` holds exactly while
/// `v` is that version. The `Weak` keeps the root's allocation reserved, so no other trie can
/// take its address; and a root with a `Weak` on it is never changed in place (`make_mut`
/// moves it to a new allocation, `get_mut` refuses), so a vector whose root is still there,
/// with the same length, holds the very elements it held.
pub struct Version<T: Element> {
    root: Weak<Trie<T>>,
    len: usize,
}

impl<T: Element> PVec<T> {
    pub fn version(&self) -> Version<T> {
        Version { root: Arc::downgrade(&self.root), len: self.len }
    }
}

impl<T: Element> Version<T> {
    #[inline]
    pub fn is(&self, v: &PVec<T>) -> bool {
        std::ptr::eq(self.root.as_ptr(), Arc::as_ptr(&v.root)) && self.len == v.len
    }
}

#[cfg(test)]
impl<T: Element> PVec<T> {
    /// How many trie nodes of `self` are not shared with `other` (compared position by
    /// position; both the same height): what a change since `other` copied.
    pub(crate) fn unshared_nodes(&self, other: &PVec<T>) -> usize {
        fn walk<T: Element>(a: &Arc<Trie<T>>, b: Option<&Arc<Trie<T>>>) -> usize {
            if b.is_some_and(|b| Arc::ptr_eq(a, b)) {
                return 0;
            }
            let children = match (&**a, b.map(|b| &**b)) {
                (Trie::Inner(xs), Some(Trie::Inner(ys))) => {
                    xs.iter().enumerate().map(|(i, x)| walk(x, ys.get(i))).sum()
                }
                (Trie::Inner(xs), _) => xs.iter().map(|x| walk(x, None)).sum(),
                (Trie::Leaf(_), _) => 0,
            };
            1 + children
        }
        assert_eq!(self.shift, other.shift, "same height");
        walk(&self.root, Some(&other.root))
    }

    /// Levels from the root to a leaf.
    pub(crate) fn depth(&self) -> usize {
        (self.shift / BITS) as usize + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn pvec_push_onto_a_clone_copies_one_path_whatever_the_length() {
        for len in [100usize, 1000, 20_000, 40_000] {
            let a = PVec::from_vec((0..len).collect::<Vec<usize>>());
            let mut b = a.clone();
            b.push(len);
            // The root-to-leaf path of the new element, nothing else: O(log32 n), not O(n).
            assert_eq!(b.unshared_nodes(&a), b.depth(), "{len}");
            assert!(b.depth() <= 4, "{len}");
            assert_eq!((a.len(), b.len(), b.get(len)), (len, len + 1, Some(&len)));
        }
    }

    #[test]
    fn pvec_set_leaves_clones_untouched() {
        let a = PVec::from_vec((0..5000).collect::<Vec<u32>>());
        let mut b = a.clone();
        b.set(4321, 7);
        assert_eq!(a.get(4321), Some(&4321));
        assert_eq!(b.get(4321), Some(&7));
        assert_eq!(b.get(4320), Some(&4320));
        assert_eq!(a.get(5000), None);
        // Untouched leaves are shared, not copied.
        match (&*a.root, &*b.root) {
            (Trie::Inner(x), Trie::Inner(y)) => {
                let shared = x.iter().zip(y).filter(|(p, q)| Arc::ptr_eq(p, q)).count();
                assert_eq!(shared, x.len() - 1);
            }
            _ => panic!("5000 elements need inner nodes"),
        }
    }

    #[test]
    fn a_version_is_its_vector_until_either_changes() {
        let mut a = PVec::from_vec((0..40u32).collect::<Vec<u32>>());
        let v = a.version();
        assert!(v.is(&a));
        // A clone is the same version; changing the clone leaves `a` as it was.
        let mut b = a.clone();
        assert!(v.is(&b));
        b.set(3, 9);
        assert!(!v.is(&b) && v.is(&a));
        // Changed in place while nothing else holds it: a new version all the same.
        drop(b);
        a.set(39, 7);
        assert!(!v.is(&a));
        // Push over a full root then pop back: the old root is the root again, unchanged.
        let mut c = PVec::from_vec((0..32u32).collect::<Vec<u32>>());
        let w = c.version();
        c.push(32);
        assert!(!w.is(&c));
        assert_eq!(c.pop(), Some(32));
        assert!(w.is(&c), "the same elements, the same root");
        c.set(0, 5);
        assert!(!w.is(&c));
        let mut d = PVec::from_vec(vec![1u32, 2]);
        let x = d.version();
        d.clear();
        assert!(!x.is(&d));
        d.push(1);
        d.push(2);
        assert!(!x.is(&d), "the same elements, a new vector");
    }

    proptest! {
        /// `diff` reports exactly the indexes whose elements changed.
        #[test]
        fn pvec_diff_reports_exactly_the_changed_indexes(len in 1usize..3000, sets in prop::collection::vec((0usize..3000, any::<u32>()), 0..20)) {
            let old = PVec::from_vec((0..len as u32).collect::<Vec<u32>>());
            let mut new = old.clone();
            for &(i, x) in &sets {
                if i < len { new.set(i, x); }
            }
            let mut seen = Vec::new();
            prop_assert!(new.diff(&old, |a, b| a == b, |i, &o, &n| seen.push((i, o, n))));
            let want: Vec<(usize, u32, u32)> = (0..len).filter(|&i| old.get(i) != new.get(i)).map(|i| (i, old.to_vec()[i], new.to_vec()[i])).collect();
            prop_assert_eq!(seen, want);
            let longer = PVec::from_vec((0..len as u32 + 1).collect::<Vec<u32>>());
            prop_assert!(!longer.diff(&old, |a, b| a == b, |_, _, _| panic!("nothing visited")));
        }

        #[test]
        fn pvec_matches_vec_model(len in 0usize..3000, sets in prop::collection::vec((0usize..3000, any::<u32>()), 0..50), lo in 0usize..3000, span in 0usize..3000) {
            let model: Vec<u32> = (0..len as u32).collect();
            let mut model = model;
            let mut v = PVec::from_vec(model.clone());
            for (i, x) in sets {
                if i < len { model[i] = x; v.set(i, x); }
            }
            prop_assert_eq!(v.to_vec(), model.clone());
            let mut seen = Vec::new();
            v.for_each_in(lo, lo + span, |i, &x| seen.push((i, x)));
            let want: Vec<(usize, u32)> = (lo..(lo + span).min(len)).map(|i| (i, model[i])).collect();
            prop_assert_eq!(seen, want);
        }

        /// push / pop / swap_remove / set / rposition agree with `Vec`'s, across the
        /// depth changes at 32 and 1024 elements, and never disturb a clone taken before.
        #[test]
        fn pvec_push_pop_swap_remove_match_vec_model(
            start in 0usize..1100,
            ops in prop::collection::vec((0u8..4, 0usize..1200, any::<u32>()), 0..300),
        ) {
            let mut model: Vec<u32> = (0..start as u32).collect();
            let mut v = PVec::from_vec(model.clone());
            for (op, i, x) in ops {
                let before = v.clone();
                let before_model = model.clone();
                match op {
                    0 => { for k in 0..(i % 70) as u32 { model.push(x.wrapping_add(k)); v.push(x.wrapping_add(k)); } }
                    1 => { for _ in 0..(i % 70) { prop_assert_eq!(v.pop(), model.pop()); } }
                    2 => {
                        let want = (i < model.len()).then(|| model.swap_remove(i));
                        prop_assert_eq!(v.swap_remove(i), want);
                    }
                    3 if i % 50 == 0 => { model.clear(); v.clear(); }
                    _ => if i < model.len() { model[i] = x; v.set(i, x); },
                }
                prop_assert_eq!(v.len(), model.len());
                prop_assert_eq!(v.iter().copied().collect::<Vec<u32>>(), model.clone());
                prop_assert_eq!(v.iter().len(), model.len());
                prop_assert_eq!(v.rposition(|&y| y == x), model.iter().rposition(|&y| y == x));
                prop_assert_eq!(before.to_vec(), before_model, "a clone is untouched");
            }
        }

        /// Elements that are `Arc`s (whose counts the trie prefetches before a copy or a
        /// drop): copies, clones and drops of the trie leave the vector and every clone kept
        /// as they were, and dropping them all leaves each element's count as it started.
        #[test]
        fn pvec_of_arcs_keeps_clones_and_counts(
            start in 0usize..1100,
            ops in prop::collection::vec((0u8..4, 0usize..1200), 0..120),
        ) {
            let items: Vec<Arc<u32>> = (0..1300u32).map(Arc::new).collect();
            let mut model: Vec<Arc<u32>> = items[..start].to_vec();
            let mut v = PVec::from_vec(model.clone());
            type Kept = (PVec<Arc<u32>>, Vec<Arc<u32>>);
            let mut kept: Vec<Kept> = Vec::new();
            for (step, (op, i)) in ops.into_iter().enumerate() {
                if step % 7 == 0 {
                    kept.push((v.clone(), model.clone()));
                }
                if step % 11 == 0 && !kept.is_empty() {
                    kept.remove(i % kept.len());
                }
                let x = &items[i % items.len()];
                match op {
                    0 => { model.push(Arc::clone(x)); v.push(Arc::clone(x)); }
                    1 => { prop_assert_eq!(v.pop(), model.pop()); }
                    2 => {
                        let want = (i < model.len()).then(|| model.swap_remove(i));
                        prop_assert_eq!(v.swap_remove(i), want);
                    }
                    _ => if i < model.len() { model[i] = Arc::clone(x); v.set(i, Arc::clone(x)); },
                }
                prop_assert_eq!(&v.to_vec(), &model);
            }
            for (k, (old, old_model)) in kept.iter().enumerate() {
                prop_assert_eq!(&old.to_vec(), old_model, "kept clone {} changed", k);
            }
            drop(kept);
            drop(v);
            drop(model);
            prop_assert!(items.iter().all(|a| Arc::strong_count(a) == 1), "a count leaked or was lost");
        }
    }
}
