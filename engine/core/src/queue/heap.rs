//! A binary heap of queued pods that can also find, replace and remove a pod by uid in
//! O(log n): what activeQ and backoffQ need for `update` and `delete`.
//!
//! Layout, for 100k pending pods: the heap array holds only each pod's sort key and a slot
//! number (32 bytes per entry), so sifting compares inline keys and never dereferences a pod;
//! the pods sit in a slab indexed by slot, and `pos` maps slot → heap index without hashing.
//! The uid is hashed once per operation, to find the slot.

use super::QueuedPodInfo;
use crate::api::PodUid;
use crate::util::hash::FxHashMap;

/// A sort key: smaller comes out first.
pub(crate) type Key = (i64, u64, u64);

/// How a heap orders pods.
pub(crate) type KeyFn = fn(&QueuedPodInfo) -> Key;

pub(crate) struct PodHeap {
    heap: Vec<(Key, u32)>,
    slots: Vec<Option<QueuedPodInfo>>,
    /// slot → index in `heap` (meaningful for occupied slots).
    pos: Vec<u32>,
    free: Vec<u32>,
    index: FxHashMap<PodUid, u32>,
    key: KeyFn,
}

impl PodHeap {
    pub fn new(key: KeyFn) -> PodHeap {
        PodHeap {
            heap: Vec::new(),
            slots: Vec::new(),
            pos: Vec::new(),
            free: Vec::new(),
            index: FxHashMap::default(),
            key,
        }
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn contains(&self, uid: &PodUid) -> bool {
        self.index.contains_key(uid)
    }

    pub fn get(&self, uid: &PodUid) -> Option<&QueuedPodInfo> {
        self.index.get(uid).and_then(|&s| self.slots[s as usize].as_ref())
    }

    pub fn peek(&self) -> Option<&QueuedPodInfo> {
        self.heap.first().and_then(|&(_, s)| self.slots[s as usize].as_ref())
    }

    pub fn iter(&self) -> impl Iterator<Item = &QueuedPodInfo> + '_ {
        self.heap.iter().filter_map(|&(_, s)| self.slots[s as usize].as_ref())
    }

    /// Inserts `info`, or replaces the entry with the same uid (and restores the order).
    pub fn upsert(&mut self, info: QueuedPodInfo) {
        let key = (self.key)(&info);
        if let Some(&s) = self.index.get(&info.pod.uid) {
            self.slots[s as usize] = Some(info);
            let i = self.pos[s as usize] as usize;
            self.heap[i].0 = key;
            self.fix(i);
            return;
        }
        let s = match self.free.pop() {
            Some(s) => s,
            None => {
                self.slots.push(None);
                self.pos.push(0);
                (self.slots.len() - 1) as u32
            }
        };
        self.index.insert(info.pod.uid.clone(), s);
        self.slots[s as usize] = Some(info);
        let i = self.heap.len();
        self.heap.push((key, s));
        self.pos[s as usize] = i as u32;
        self.up(i);
    }

    pub fn pop(&mut self) -> Option<QueuedPodInfo> {
        if self.heap.is_empty() {
            return None;
        }
        self.remove_at(0)
    }

    pub fn remove(&mut self, uid: &PodUid) -> Option<QueuedPodInfo> {
        let s = *self.index.get(uid)?;
        self.remove_at(self.pos[s as usize] as usize)
    }

    fn remove_at(&mut self, i: usize) -> Option<QueuedPodInfo> {
        let last = self.heap.len() - 1;
        self.swap(i, last);
        let (_, s) = self.heap.pop()?;
        if i < self.heap.len() {
            self.fix(i);
        }
        let info = self.slots[s as usize].take()?;
        self.free.push(s);
        self.index.remove(&info.pod.uid);
        Some(info)
    }

    fn fix(&mut self, i: usize) {
        if !self.up(i) {
            self.down(i);
        }
    }

    fn swap(&mut self, a: usize, b: usize) {
        self.heap.swap(a, b);
        self.pos[self.heap[a].1 as usize] = a as u32;
        self.pos[self.heap[b].1 as usize] = b as u32;
    }

    /// Sifts up; true if the entry moved.
    fn up(&mut self, mut i: usize) -> bool {
        let start = i;
        while i > 0 {
            let parent = (i - 1) / 2;
            if self.heap[i].0 >= self.heap[parent].0 {
                break;
            }
            self.swap(i, parent);
            i = parent;
        }
        i != start
    }

    fn down(&mut self, mut i: usize) {
        let n = self.heap.len();
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut best = i;
            if l < n && self.heap[l].0 < self.heap[best].0 {
                best = l;
            }
            if r < n && self.heap[r].0 < self.heap[best].0 {
                best = r;
            }
            if best == i {
                return;
            }
            self.swap(i, best);
            i = best;
        }
    }

    /// Debug check: heap order, the slot index and the stored keys agree.
    pub fn is_consistent(&self) -> bool {
        self.index.len() == self.heap.len()
            && self.heap.iter().enumerate().all(|(i, &(key, s))| {
                self.pos[s as usize] as usize == i
                    && self.slots[s as usize]
                        .as_ref()
                        .is_some_and(|info| (self.key)(info) == key && self.index.get(&info.pod.uid) == Some(&s))
            })
            && (1..self.heap.len()).all(|i| self.heap[i].0 >= self.heap[(i - 1) / 2].0)
    }
}

/// activeQ's order (upstream's PrioritySort): higher priority first, then the earlier
/// enqueue time, then arrival order (so equal timestamps stay first-in first-out).
pub(crate) fn priority_key(info: &QueuedPodInfo) -> Key {
    (-i64::from(info.pod.priority), info.timestamp.0, info.seq)
}

/// backoffQ's order: the earliest end of backoff first.
pub(crate) fn backoff_key(info: &QueuedPodInfo) -> Key {
    (0, info.backoff_expiry.0, info.seq)
}
