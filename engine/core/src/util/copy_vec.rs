//! `CopyVec`: a `SmallVec` of `Copy` items that clones as plain bytes.
//!
//! SmallVec's own `clone` and `clone_from` go through `extend`, which for the short lists
//! kept per node (scalar resources, host ports) costs more than the copy itself; every
//! node copy (the two-pass filter, preemption's dry run) clones several of them.

use std::ops::{Deref, DerefMut};

use smallvec::{Array, SmallVec};

#[derive(Default)]
pub struct CopyVec<A: Array>(pub SmallVec<A>)
where
    A::Item: Copy;

impl<A: Array> std::fmt::Debug for CopyVec<A>
where
    A::Item: Copy + std::fmt::Debug,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl<A: Array> PartialEq for CopyVec<A>
where
    A::Item: Copy + PartialEq,
{
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}

impl<A: Array> Eq for CopyVec<A> where A::Item: Copy + Eq {}

impl<A: Array> Clone for CopyVec<A>
where
    A::Item: Copy,
{
    fn clone(&self) -> Self {
        CopyVec(SmallVec::from_slice(&self.0))
    }

    #[inline]
    fn clone_from(&mut self, source: &Self) {
        if self.0.is_empty() && source.0.is_empty() {
            return;
        }
        if self.0.len() == source.0.len() {
            self.0.copy_from_slice(&source.0);
        } else {
            self.0.clear();
            self.0.extend_from_slice(&source.0);
        }
    }
}

impl<A: Array> Deref for CopyVec<A>
where
    A::Item: Copy,
{
    type Target = SmallVec<A>;
    fn deref(&self) -> &SmallVec<A> {
        &self.0
    }
}

impl<A: Array> DerefMut for CopyVec<A>
where
    A::Item: Copy,
{
    fn deref_mut(&mut self) -> &mut SmallVec<A> {
        &mut self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clone_and_clone_from_copy_every_length_into_every_length() {
        let lists: [&[u32]; 5] = [&[], &[1], &[1, 2], &[3, 4, 5], &[6, 7, 8, 9, 10]];
        for &source in &lists {
            let source = CopyVec::<[u32; 2]>(SmallVec::from_slice(source));
            assert_eq!(source.clone(), source);
            for &start in &lists {
                let mut v = CopyVec::<[u32; 2]>(SmallVec::from_slice(start));
                v.clone_from(&source);
                assert_eq!(v, source, "{start:?} <- {:?}", &source[..]);
            }
        }
    }
}
