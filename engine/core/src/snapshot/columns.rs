//! The snapshot's columnar hot view: the NodeInfo fields the hot filters and scores read for
//! every visited node, stored column by column in chunks of `CHUNK` nodes.
//!
//! A cycle that filters and scores a pod with plain cpu / memory / pod requests reads a few
//! contiguous `i64` arrays instead of chasing trie leaf → `Arc<NodeInfo>` → `Arc<Node>` for
//! each node. Chunks are `Arc`ed and copied on write: publishing a snapshot after one assume
//! copies the chunk of the one node that changed (and the chunk pointer list), never the
//! table; readers of older snapshots keep theirs.
//!
//! Invariant: row `i` equals `HotRow::of(snapshot.node_at(i))` for every position `i` of the
//! snapshot (`Columns::mismatches` checks it; the cache's invariant check calls it).

use std::sync::Arc;

use super::node_info::NodeInfo;
use super::pvec::arc_counts;
use crate::api::Pod;
use crate::util::prefetch;

/// Nodes per chunk.
pub const CHUNK: usize = 64;

/// `HotRow::flags`: the node's `spec.unschedulable`.
pub const UNSCHEDULABLE: u8 = 1;
/// `HotRow::flags`: the node has at least one taint.
pub const HAS_TAINTS: u8 = 2;
/// `HotRow::flags`: at least one pod on the node has pod affinity or anti-affinity.
pub const HAS_AFFINITY_PODS: u8 = 4;

/// One node's hot fields, as copied out of its NodeInfo.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HotRow {
    pub allocatable_cpu: i64,
    pub allocatable_memory: i64,
    pub allocatable_pods: i64,
    pub allocatable_ephemeral: i64,
    pub requested_cpu: i64,
    pub requested_memory: i64,
    pub requested_pods: i64,
    pub requested_ephemeral: i64,
    pub non_zero_cpu: i64,
    pub non_zero_memory: i64,
    pub flags: u8,
}

impl HotRow {
    /// The hot fields of `info`.
    pub fn of(info: &NodeInfo) -> HotRow {
        let (a, r, nz) = (info.allocatable(), info.requested(), info.non_zero_requested());
        let mut flags = 0;
        if info.unschedulable() {
            flags |= UNSCHEDULABLE;
        }
        if info.has_taints() {
            flags |= HAS_TAINTS;
        }
        if info.pods_with_affinity() > 0 {
            flags |= HAS_AFFINITY_PODS;
        }
        HotRow {
            allocatable_cpu: a.milli_cpu,
            allocatable_memory: a.memory,
            allocatable_pods: a.allowed_pod_number,
            allocatable_ephemeral: a.ephemeral_storage,
            requested_cpu: r.milli_cpu,
            requested_memory: r.memory,
            requested_pods: r.allowed_pod_number,
            requested_ephemeral: r.ephemeral_storage,
            non_zero_cpu: nz.milli_cpu,
            non_zero_memory: nz.memory,
            flags,
        }
    }

    #[inline]
    pub fn unschedulable(&self) -> bool {
        self.flags & UNSCHEDULABLE != 0
    }

    #[inline]
    pub fn has_taints(&self) -> bool {
        self.flags & HAS_TAINTS != 0
    }

    #[inline]
    pub fn has_affinity_pods(&self) -> bool {
        self.flags & HAS_AFFINITY_PODS != 0
    }
}

/// A node's hot row together with the count behind its has-affinity-pods flag, so that
/// pods can be added to and taken off it as `NodeInfo::add_pod` / `remove_pod` would: what
/// the two-pass filter and preemption's dry run work on when every active filter judges
/// from the row (`row()` then equals `HotRow::of` of the NodeInfo with the same pods).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HotTally {
    row: HotRow,
    affinity_pods: u32,
}

impl HotTally {
    pub fn of(info: &NodeInfo) -> HotTally {
        HotTally { row: HotRow::of(info), affinity_pods: info.pods_with_affinity() }
    }

    /// The tally of a node known only by its row (no NodeInfo): for adding pods only, as
    /// the row's has-affinity-pods flag stands in for the count behind it.
    pub fn of_row(row: HotRow) -> HotTally {
        HotTally { row, affinity_pods: row.has_affinity_pods() as u32 }
    }

    /// Takes off the pods `delta` sums.
    #[inline]
    pub fn sub(&mut self, d: &PodsDelta) {
        let row = &mut self.row;
        row.requested_cpu -= d.cpu;
        row.requested_memory -= d.memory;
        row.requested_ephemeral -= d.ephemeral;
        row.requested_pods -= d.pods;
        row.non_zero_cpu -= d.non_zero_cpu;
        row.non_zero_memory -= d.non_zero_memory;
        self.affinity_pods -= d.affinity_pods;
    }

    /// Counts the pods `delta` sums.
    #[inline]
    pub fn add(&mut self, d: &PodsDelta) {
        let row = &mut self.row;
        row.requested_cpu += d.cpu;
        row.requested_memory += d.memory;
        row.requested_ephemeral += d.ephemeral;
        row.requested_pods += d.pods;
        row.non_zero_cpu += d.non_zero_cpu;
        row.non_zero_memory += d.non_zero_memory;
        self.affinity_pods += d.affinity_pods;
    }

    /// The row as the node's would read with these pods.
    #[inline]
    pub fn row(&self) -> HotRow {
        let mut row = self.row;
        row.flags &= !HAS_AFFINITY_PODS;
        if self.affinity_pods > 0 {
            row.flags |= HAS_AFFINITY_PODS;
        }
        row
    }
}

/// A node's lowest pod-priority level, kept beside its row: with it preemption's dry run
/// tells from the columns alone what the node's row is once the pods below a priority are
/// taken off, when they all share the lowest priority (the common case), without reading
/// the NodeInfo.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LowLevel {
    /// The lowest priority among the node's pods (`i32::MAX` when it has none).
    pub priority: i32,
    /// The next higher priority among them (`i32::MAX` when there is none).
    pub next: i32,
    /// How many of all the node's pods have pod affinity (the count behind the row's flag).
    pub affinity_pods: u32,
    /// What the pods of priority `priority` add to the row.
    pub delta: PodsDelta,
}

impl LowLevel {
    /// A node without pods.
    pub const EMPTY: LowLevel = LowLevel {
        priority: i32::MAX,
        next: i32::MAX,
        affinity_pods: 0,
        delta: PodsDelta {
            cpu: 0,
            memory: 0,
            ephemeral: 0,
            pods: 0,
            non_zero_cpu: 0,
            non_zero_memory: 0,
            affinity_pods: 0,
        },
    };
}

/// What a node's row becomes once its pods of priority below some value are taken off, as
/// far as the columns can tell (`Columns::below`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Below {
    /// The node has no pod of lower priority.
    Nothing,
    /// The row with those pods taken off.
    Tally(HotTally),
    /// The pods below span more than one priority: read the NodeInfo.
    Unknown,
}

/// What some pods add to a node's hot row, summed once (the nominated pods of a node, per
/// cycle), so a row can take them without reading the pods again.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PodsDelta {
    cpu: i64,
    memory: i64,
    ephemeral: i64,
    pods: i64,
    non_zero_cpu: i64,
    non_zero_memory: i64,
    affinity_pods: u32,
}

impl PodsDelta {
    /// What `pod` adds, as `NodeInfo::add_to_aggregates` counts it.
    #[inline]
    pub fn of(pod: &Pod) -> PodsDelta {
        let (r, (nz_cpu, nz_memory)) = (pod.accounted_requests(), pod.accounted_non_zero());
        PodsDelta {
            cpu: r.milli_cpu,
            memory: r.memory,
            ephemeral: r.ephemeral_storage,
            pods: r.allowed_pod_number + 1,
            non_zero_cpu: nz_cpu,
            non_zero_memory: nz_memory,
            affinity_pods: pod.affinity_flags().0 as u32,
        }
    }

    /// Adds `pod` to the sum.
    #[inline]
    pub fn add(&mut self, pod: &Pod) {
        self.plus(&PodsDelta::of(pod));
    }

    /// Takes `pod` off the sum.
    #[inline]
    pub fn sub(&mut self, pod: &Pod) {
        self.minus(&PodsDelta::of(pod));
    }

    /// Adds another sum.
    #[inline]
    pub fn plus(&mut self, d: &PodsDelta) {
        self.cpu += d.cpu;
        self.memory += d.memory;
        self.ephemeral += d.ephemeral;
        self.pods += d.pods;
        self.non_zero_cpu += d.non_zero_cpu;
        self.non_zero_memory += d.non_zero_memory;
        self.affinity_pods += d.affinity_pods;
    }

    /// Takes another sum off.
    #[inline]
    pub fn minus(&mut self, d: &PodsDelta) {
        self.cpu -= d.cpu;
        self.memory -= d.memory;
        self.ephemeral -= d.ephemeral;
        self.pods -= d.pods;
        self.non_zero_cpu -= d.non_zero_cpu;
        self.non_zero_memory -= d.non_zero_memory;
        self.affinity_pods -= d.affinity_pods;
    }
}

/// One row outside any snapshot, read through a `HotRef` like a snapshot's rows: the place a
/// cycle puts a row it computed (`HotTally`) for the hot filters to read.
#[derive(Clone, Debug, Default)]
pub struct LooseRow(Box<Chunk>);

impl LooseRow {
    /// Holds `row` and reads it back in place.
    #[inline]
    pub fn set(&mut self, row: &HotRow) -> HotRef<'_> {
        self.0.write(0, row);
        HotRef { chunk: &self.0, k: 0 }
    }
}

/// `CHUNK` nodes' hot fields, one array per field. The fields a pod's assume writes are the
/// chunk's own; the ones it leaves alone (allocatable, and the lowest priority level kept as
/// what lies above it) sit behind one more `Arc`, so that the publish after an assume copies
/// and later frees about a third of the bytes a whole chunk holds.
#[derive(Clone, Debug)]
pub struct Chunk {
    /// Allocatable less requested cpu, memory and ephemeral storage (wrapping): what the
    /// resource filter compares a pod's requests with, so that it reads 5 columns instead
    /// of 8. Requested is read back as allocatable less these (`HotRef::requested_cpu`),
    /// which wrapping arithmetic gives exactly.
    pub free_cpu: [i64; CHUNK],
    pub free_memory: [i64; CHUNK],
    pub requested_pods: [i64; CHUNK],
    pub free_ephemeral: [i64; CHUNK],
    pub non_zero_cpu: [i64; CHUNK],
    pub non_zero_memory: [i64; CHUNK],
    pub flags: [u8; CHUNK],
    /// Each row's stamp: a process-wide id taken whenever the row's `HotRow` is written with
    /// new values (`Columns::set`, `Columns::from_infos`), so two rows with one stamp hold
    /// the same `HotRow`, in any snapshot. What is computed from a row alone can be kept
    /// under its stamp (`framework::ScoreMemo`). 0 outside a snapshot (`LooseRow`).
    pub stamp: [u64; CHUNK],
    /// The columns that change with the node, not with each pod (shared until written).
    pub steady: Arc<Steady>,
    /// Bounds over the chunk's rows in use, from which a filter can tell that a pod passes
    /// every row without reading them (`Floors`).
    pub floors: Floors,
}

/// Bounds over a chunk's rows in use: the least room for cpu, memory, ephemeral storage and
/// pods, and every flag some row has. A pod whose requests fit the least room fits every
/// row, so the resource filter passes the chunk reading these 33 bytes instead of 64 rows
/// (most chunks of a cluster with room to spare). Kept by every write to a snapshot's chunk
/// (`Columns::from_infos`, `Columns::set`) and checked by the debug checker
/// (`Columns::mismatches`); a chunk outside a snapshot (`LooseRow`) has the default, which
/// promises nothing (no room for a pod).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Floors {
    /// The least `free_cpu`, `free_memory` and `free_ephemeral` (signed, as compared).
    pub free_cpu: i64,
    pub free_memory: i64,
    pub free_ephemeral: i64,
    /// The least allocatable less requested pods (saturating): above 0, every row takes
    /// one more pod.
    pub pods_room: i64,
    /// Every row's flags or'ed.
    pub flags: u8,
}

impl Floors {
    /// The floors of no row: what `meet` starts from.
    const NONE: Floors =
        Floors { free_cpu: i64::MAX, free_memory: i64::MAX, free_ephemeral: i64::MAX, pods_room: i64::MAX, flags: 0 };

    /// The floors of two sets of rows together.
    #[inline]
    fn meet(self, o: Floors) -> Floors {
        Floors {
            free_cpu: self.free_cpu.min(o.free_cpu),
            free_memory: self.free_memory.min(o.free_memory),
            free_ephemeral: self.free_ephemeral.min(o.free_ephemeral),
            pods_room: self.pods_room.min(o.pods_room),
            flags: self.flags | o.flags,
        }
    }
}

/// A chunk's columns that an assume usually leaves as they are: the allocatable resources,
/// and each node's lowest priority level (`LowLevel`, for preemption's dry run) stored as
/// what the pods *above* that level add. Assuming a pod of the lowest priority on the node
/// (every pod, when all share one priority) changes the requests and the level's sums by the
/// same amounts and leaves these as they were. A row without pods has no level: what is
/// stored for it is whatever was there (at first the level of one pod of priority 0, the
/// default), so a node's first pod of that priority leaves these as they were too.
#[derive(Clone, Debug)]
pub struct Steady {
    pub allocatable_cpu: [i64; CHUNK],
    pub allocatable_memory: [i64; CHUNK],
    pub allocatable_pods: [i64; CHUNK],
    pub allocatable_ephemeral: [i64; CHUNK],
    low_priority: [i32; CHUNK],
    next_priority: [i32; CHUNK],
    affinity_pods: [u32; CHUNK],
    /// What the pods above the lowest level request: cpu, memory, ephemeral storage, pods
    /// (with the `allowed_pod_number` count), non-zero cpu, non-zero memory.
    above: [[i64; CHUNK]; 6],
    above_affinity_pods: [u32; CHUNK],
}

impl Default for Steady {
    fn default() -> Self {
        Steady {
            allocatable_cpu: [0; CHUNK],
            allocatable_memory: [0; CHUNK],
            allocatable_pods: [0; CHUNK],
            allocatable_ephemeral: [0; CHUNK],
            low_priority: [0; CHUNK],
            next_priority: [i32::MAX; CHUNK],
            affinity_pods: [0; CHUNK],
            above: [[0; CHUNK]; 6],
            above_affinity_pods: [0; CHUNK],
        }
    }
}

impl Default for Chunk {
    fn default() -> Self {
        Chunk {
            free_cpu: [0; CHUNK],
            free_memory: [0; CHUNK],
            requested_pods: [0; CHUNK],
            free_ephemeral: [0; CHUNK],
            non_zero_cpu: [0; CHUNK],
            non_zero_memory: [0; CHUNK],
            flags: [0; CHUNK],
            stamp: [0; CHUNK],
            steady: Arc::default(),
            floors: Floors::default(),
        }
    }
}

/// A lowest level's stored form: (priority, next, affinity pods, what lies above it).
type StoredLow = (i32, i32, u32, [i64; 6], u32);

impl Chunk {
    /// Writes row `k`'s lowest priority level; after `write` of the row it belongs to (what
    /// lies above the level is taken from the row's requests). `steady` is copied only when
    /// what it stores changes; a row without pods stores nothing (see `Steady`).
    #[inline]
    fn write_low(&mut self, k: usize, l: &LowLevel) {
        if self.requested_pods[k] == 0 {
            return;
        }
        let d = &l.delta;
        let (cpu, memory, ephemeral) = self.requested(k);
        let above = [
            cpu - d.cpu,
            memory - d.memory,
            ephemeral - d.ephemeral,
            self.requested_pods[k] - d.pods,
            self.non_zero_cpu[k] - d.non_zero_cpu,
            self.non_zero_memory[k] - d.non_zero_memory,
        ];
        let want: StoredLow = (l.priority, l.next, l.affinity_pods, above, l.affinity_pods - d.affinity_pods);
        if self.stored_low(k) == want {
            return;
        }
        let s = Arc::make_mut(&mut self.steady);
        s.low_priority[k] = l.priority;
        s.next_priority[k] = l.next;
        s.affinity_pods[k] = l.affinity_pods;
        for (column, value) in s.above.iter_mut().zip(above) {
            column[k] = value;
        }
        s.above_affinity_pods[k] = want.4;
    }

    #[inline]
    fn stored_low(&self, k: usize) -> StoredLow {
        let s = &*self.steady;
        (
            s.low_priority[k],
            s.next_priority[k],
            s.affinity_pods[k],
            std::array::from_fn(|j| s.above[j][k]),
            s.above_affinity_pods[k],
        )
    }

    #[inline]
    fn read_low(&self, k: usize) -> LowLevel {
        if self.requested_pods[k] == 0 {
            return LowLevel::EMPTY;
        }
        let (priority, next, affinity_pods, above, above_affinity) = self.stored_low(k);
        let (cpu, memory, ephemeral) = self.requested(k);
        LowLevel {
            priority,
            next,
            affinity_pods,
            delta: PodsDelta {
                cpu: cpu - above[0],
                memory: memory - above[1],
                ephemeral: ephemeral - above[2],
                pods: self.requested_pods[k] - above[3],
                non_zero_cpu: self.non_zero_cpu[k] - above[4],
                non_zero_memory: self.non_zero_memory[k] - above[5],
                affinity_pods: affinity_pods - above_affinity,
            },
        }
    }

    /// The floors of the first `n` rows (the rows in use); the default when `n` is 0.
    fn floors_of(&self, n: usize) -> Floors {
        if n == 0 {
            return Floors::default();
        }
        (0..n).map(|k| self.row_floors(k)).fold(Floors::NONE, Floors::meet)
    }

    /// Row `k` alone as floors.
    #[inline]
    fn row_floors(&self, k: usize) -> Floors {
        Floors {
            free_cpu: self.free_cpu[k],
            free_memory: self.free_memory[k],
            free_ephemeral: self.free_ephemeral[k],
            pods_room: self.steady.allocatable_pods[k].saturating_sub(self.requested_pods[k]),
            flags: self.flags[k],
        }
    }

    /// `write`, keeping the floors of the first `in_use` rows (`k < in_use`): a row that
    /// sinks lowers them to its values; one that rises from a floor it was on, or drops a
    /// flag, has them counted again over the rows.
    #[inline]
    fn write_in_use(&mut self, k: usize, r: &HotRow, in_use: usize) {
        let before = self.row_floors(k);
        self.write(k, r);
        let after = self.row_floors(k);
        let f = self.floors;
        let lifts = |was: i64, now: i64, floor: i64| was == floor && now > was;
        if lifts(before.free_cpu, after.free_cpu, f.free_cpu)
            || lifts(before.free_memory, after.free_memory, f.free_memory)
            || lifts(before.free_ephemeral, after.free_ephemeral, f.free_ephemeral)
            || lifts(before.pods_room, after.pods_room, f.pods_room)
            || before.flags & !after.flags != 0
        {
            self.floors = self.floors_of(in_use);
        } else {
            self.floors = f.meet(after);
        }
    }

    /// Row `k`'s requested cpu, memory and ephemeral storage.
    #[inline]
    fn requested(&self, k: usize) -> (i64, i64, i64) {
        let s = &*self.steady;
        (
            s.allocatable_cpu[k].wrapping_sub(self.free_cpu[k]),
            s.allocatable_memory[k].wrapping_sub(self.free_memory[k]),
            s.allocatable_ephemeral[k].wrapping_sub(self.free_ephemeral[k]),
        )
    }

    /// Writes row `k`; `steady` is copied only when the allocatable resources change.
    #[inline]
    fn write(&mut self, k: usize, r: &HotRow) {
        self.free_cpu[k] = r.allocatable_cpu.wrapping_sub(r.requested_cpu);
        self.free_memory[k] = r.allocatable_memory.wrapping_sub(r.requested_memory);
        self.requested_pods[k] = r.requested_pods;
        self.free_ephemeral[k] = r.allocatable_ephemeral.wrapping_sub(r.requested_ephemeral);
        self.non_zero_cpu[k] = r.non_zero_cpu;
        self.non_zero_memory[k] = r.non_zero_memory;
        self.flags[k] = r.flags;
        let s = &*self.steady;
        // Field by field: comparing two arrays built here would store them on the stack and
        // load them back wider than they were stored, which stalls (a `LooseRow` is written
        // once per put-back in preemption's dry run).
        let same = s.allocatable_cpu[k] == r.allocatable_cpu
            && s.allocatable_memory[k] == r.allocatable_memory
            && s.allocatable_pods[k] == r.allocatable_pods
            && s.allocatable_ephemeral[k] == r.allocatable_ephemeral;
        if !same {
            let s = Arc::make_mut(&mut self.steady);
            s.allocatable_cpu[k] = r.allocatable_cpu;
            s.allocatable_memory[k] = r.allocatable_memory;
            s.allocatable_pods[k] = r.allocatable_pods;
            s.allocatable_ephemeral[k] = r.allocatable_ephemeral;
        }
    }

    #[inline]
    fn read(&self, k: usize) -> HotRow {
        let s = &*self.steady;
        let (requested_cpu, requested_memory, requested_ephemeral) = self.requested(k);
        HotRow {
            allocatable_cpu: s.allocatable_cpu[k],
            allocatable_memory: s.allocatable_memory[k],
            allocatable_pods: s.allocatable_pods[k],
            allocatable_ephemeral: s.allocatable_ephemeral[k],
            requested_cpu,
            requested_memory,
            requested_pods: self.requested_pods[k],
            requested_ephemeral,
            non_zero_cpu: self.non_zero_cpu[k],
            non_zero_memory: self.non_zero_memory[k],
            flags: self.flags[k],
        }
    }
}

/// Rows of one chunk from a first row on (`Columns::block`).
#[derive(Clone, Copy)]
pub struct Block<'a> {
    chunk: &'a Chunk,
    k0: usize,
}

impl<'a> Block<'a> {
    /// The block's `i`th row (within the chunk).
    #[inline]
    pub fn at(&self, i: usize) -> HotRef<'a> {
        debug_assert!(self.k0 + i < CHUNK, "a block ends within its chunk");
        HotRef { chunk: self.chunk, k: self.k0 + i }
    }

    /// The block's chunk and its first row in it: row `i` of the block is row `first + i`
    /// of the chunk's arrays, which a plugin judging a block reads as slices.
    #[inline]
    pub fn parts(&self) -> (&'a Chunk, usize) {
        (self.chunk, self.k0)
    }

    /// Whether any of the block's first `n` rows has `flag` (`UNSCHEDULABLE`, `HAS_TAINTS`,
    /// ...) set; `n` reaching past the chunk panics.
    #[inline]
    pub fn any_flag(&self, n: usize, flag: u8) -> bool {
        any_flag(&self.chunk.flags[self.k0..self.k0 + n], flag)
    }
}

/// Whether one of `flags` has `flag` set: without an early exit (it vectorizes).
#[inline]
pub fn any_flag(flags: &[u8], flag: u8) -> bool {
    flags.iter().fold(false, |any, &f| any | (f & flag != 0))
}

/// `Columns::spans`: the rows at some positions, a chunk's stretch at a time.
pub struct Spans<'a> {
    columns: &'a Columns,
    positions: &'a [u32],
}

impl<'a> Iterator for Spans<'a> {
    type Item = (&'a Chunk, usize, usize);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        let &p = self.positions.first()?;
        let (c, k) = (p as usize / CHUNK, p as usize % CHUNK);
        let most = (CHUNK - k).min(self.positions.len());
        let stretch = &self.positions[..most];
        // Most spans run to the chunk's end (or the positions' end): told by the stretch's
        // last position first, then checked without an early exit, which vectorizes;
        // otherwise counted up to the first gap.
        let len = if stretch[most - 1] as usize == p as usize + most - 1
            && stretch.iter().zip(p..).fold(true, |run, (&q, want)| run & (q == want))
        {
            most
        } else {
            stretch.iter().zip(p..).take_while(|&(&q, want)| q == want).count()
        };
        self.positions = &self.positions[len..];
        Some((self.columns.chunk(c), k, len))
    }
}

/// One node's row, read in place field by field (a filter reads only what it needs).
#[derive(Clone, Copy)]
pub struct HotRef<'a> {
    chunk: &'a Chunk,
    k: usize,
}

macro_rules! hot_fields {
    ($($field:ident),*) => {
        impl HotRef<'_> {
            $(
                #[inline]
                pub fn $field(&self) -> i64 {
                    self.chunk.$field[self.k()]
                }
            )*
        }
    };
}

macro_rules! steady_fields {
    ($($field:ident),*) => {
        impl HotRef<'_> {
            $(
                #[inline]
                pub fn $field(&self) -> i64 {
                    self.chunk.steady.$field[self.k()]
                }
            )*
        }
    };
}

steady_fields!(allocatable_cpu, allocatable_memory, allocatable_pods, allocatable_ephemeral);

hot_fields!(requested_pods, non_zero_cpu, non_zero_memory);

/// Requested cpu, memory and ephemeral storage, read back from what is kept free
/// (`Chunk::requested`).
impl HotRef<'_> {
    #[inline]
    pub fn requested_cpu(&self) -> i64 {
        self.chunk.requested(self.k()).0
    }

    #[inline]
    pub fn requested_memory(&self) -> i64 {
        self.chunk.requested(self.k()).1
    }

    #[inline]
    pub fn requested_ephemeral(&self) -> i64 {
        self.chunk.requested(self.k()).2
    }
}

impl HotRef<'_> {
    /// The row within the chunk: `k` is below `CHUNK` already (`Columns::at`); said so the
    /// compiler drops each field read's bounds check.
    #[inline]
    fn k(&self) -> usize {
        self.k % CHUNK
    }

    #[inline]
    pub fn unschedulable(&self) -> bool {
        self.chunk.flags[self.k()] & UNSCHEDULABLE != 0
    }

    #[inline]
    pub fn has_taints(&self) -> bool {
        self.chunk.flags[self.k()] & HAS_TAINTS != 0
    }

    #[inline]
    pub fn has_affinity_pods(&self) -> bool {
        self.chunk.flags[self.k()] & HAS_AFFINITY_PODS != 0
    }

    /// The whole row, copied.
    pub fn row(&self) -> HotRow {
        self.chunk.read(self.k)
    }
}

/// Chunks per group. The chunks sit in groups so that a publish after one write copies the
/// list of groups and one group (dozens of pointers at 50,000 nodes) instead of a pointer per
/// chunk, and the old snapshot's drop releases as few.
pub const GROUP: usize = 32;

#[cfg(test)]
thread_local! {
    /// Chunks `Columns::set` copied on this thread (tests: which publishes write in place).
    pub(crate) static CHUNK_COPIES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// `GROUP` chunks (fewer in the last group).
#[derive(Clone, Debug)]
struct Group(Vec<Arc<Chunk>>);

impl Group {
    /// Prefetches the chunks' counts, which a copy of the group increments and its drop
    /// decrements, each on its own line (see `pvec::Element`).
    #[inline]
    fn prefetch_counts(&self) {
        self.0.iter().map(arc_counts).for_each(prefetch);
    }
}

impl std::ops::Deref for Group {
    type Target = [Arc<Chunk>];
    fn deref(&self) -> &[Arc<Chunk>] {
        &self.0
    }
}

impl std::ops::DerefMut for Group {
    fn deref_mut(&mut self) -> &mut [Arc<Chunk>] {
        &mut self.0
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.prefetch_counts();
    }
}

/// The column store: chunks of `CHUNK` rows in groups of `GROUP` chunks, each chunk and group
/// shared until written.
#[derive(Clone, Debug, Default)]
pub struct Columns {
    groups: Arc<Vec<Arc<Group>>>,
    len: usize,
}

impl Columns {
    /// The columns of `infos`, row `i` from `infos[i]`.
    pub fn from_infos<'a>(infos: impl ExactSizeIterator<Item = &'a NodeInfo>) -> Columns {
        let len = infos.len();
        let mut chunks: Vec<Arc<Chunk>> = Vec::with_capacity(len.div_ceil(CHUNK));
        let mut current = Chunk::default();
        let first_stamp = crate::sync::fresh_ids(len as u64);
        for (i, info) in infos.enumerate() {
            current.write(i % CHUNK, &HotRow::of(info));
            current.stamp[i % CHUNK] = first_stamp + i as u64;
            current.write_low(i % CHUNK, &info.low_level());
            if i % CHUNK == CHUNK - 1 {
                current.floors = current.floors_of(CHUNK);
                chunks.push(Arc::new(std::mem::take(&mut current)));
            }
        }
        if len % CHUNK != 0 {
            current.floors = current.floors_of(len % CHUNK);
            chunks.push(Arc::new(current));
        }
        let groups = chunks.chunks(GROUP).map(|g| Arc::new(Group(g.to_vec()))).collect();
        Columns { groups: Arc::new(groups), len }
    }

    /// How many rows of chunk `c` are in use (`c < num_chunks`).
    #[inline]
    fn in_use(&self, c: usize) -> usize {
        (self.len - c * CHUNK).min(CHUNK)
    }

    /// Chunk `c` (`c < num_chunks`).
    #[inline]
    fn chunk(&self, c: usize) -> &Chunk {
        &self.groups[c / GROUP][c % GROUP]
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Row `i` (`i < len`).
    #[inline]
    pub fn row(&self, i: usize) -> HotRow {
        self.chunk(i / CHUNK).read(i % CHUNK)
    }

    /// Row `i` in place (`i < len`).
    #[inline]
    pub fn at(&self, i: usize) -> HotRef<'_> {
        HotRef { chunk: self.chunk(i / CHUNK), k: i % CHUNK }
    }

    /// The rows at `positions`, in order, in place: a chunk is looked up once for a run of
    /// positions in it (a filter pass's feasible nodes come in ascending runs).
    #[inline]
    pub fn rows<'a>(&'a self, positions: &'a [u32]) -> impl Iterator<Item = HotRef<'a>> + 'a {
        let mut last: Option<(usize, &'a Chunk)> = None;
        positions.iter().map(move |&p| {
            let (c, k) = (p as usize / CHUNK, p as usize % CHUNK);
            let chunk = match last {
                Some((lc, chunk)) if lc == c => chunk,
                _ => {
                    let chunk = self.chunk(c);
                    last = Some((c, chunk));
                    chunk
                }
            };
            HotRef { chunk, k }
        })
    }

    /// The rows at `positions` as spans of one chunk each: `(chunk, k, len)` stands for rows
    /// `k..k + len` of `chunk`, in order. A stretch of consecutive positions (the feasible
    /// nodes of most cycles, from the rotating start) is one span per chunk, which a caller
    /// reads as slices of the chunk's arrays; a position out of such a stretch is a span of 1.
    pub fn spans<'a>(&'a self, positions: &'a [u32]) -> Spans<'a> {
        Spans { columns: self, positions }
    }

    /// Whether `positions` run in stretches long enough that reading them by `spans` pays:
    /// ascending from first to last over at most 5/4 of their count, so at most one gap per
    /// four positions. Told in O(1) from the ends (a search's feasible positions ascend but
    /// at the wrap); scattered ones (a cycle where most nodes failed) read better by `rows`.
    #[inline]
    pub fn dense(positions: &[u32]) -> bool {
        match (positions.first(), positions.last()) {
            (Some(&a), Some(&b)) if b >= a => (b - a + 1) as usize * 4 <= positions.len() * 5,
            (Some(_), Some(_)) => false,
            _ => true,
        }
    }

    /// The stamps of the rows at `positions`, in order, appended to `out` (see
    /// `Chunk::stamp`).
    #[inline]
    pub fn stamps_into(&self, positions: &[u32], out: &mut Vec<u64>) {
        if !Columns::dense(positions) {
            out.extend(self.rows(positions).map(|r| r.chunk.stamp[r.k()]));
            return;
        }
        for (chunk, k, len) in self.spans(positions) {
            out.extend_from_slice(&chunk.stamp[k..k + len]);
        }
    }

    /// Rows `lo..lo + n` of one chunk, in place (`lo + n` within `lo`'s chunk).
    #[inline]
    pub fn block(&self, lo: usize) -> Block<'_> {
        Block { chunk: self.chunk(lo / CHUNK), k0: lo % CHUNK }
    }

    /// Asks the processor to start loading the columns the hot filters read for rows `lo..hi`
    /// of one chunk (`lo < hi <= ` its end), while the rows before them are judged: a
    /// chunk's columns are short runs (512 bytes each) at addresses of their own, too short
    /// for the hardware's stream prefetch to learn before they end. A hint only: it changes
    /// no value, and does nothing off x86-64.
    #[inline]
    pub fn prefetch(&self, lo: usize, hi: usize) {
        let chunk = self.chunk(lo / CHUNK);
        let (k, n) = (lo % CHUNK, (hi - 1) % CHUNK + 1 - lo % CHUNK);
        let s = &*chunk.steady;
        // One hint per 64-byte line (8 values) of the rows' part of each column, by address
        // arithmetic alone (cheaper than slicing: at 5000 nodes, where the columns sit in the
        // cache anyway, this costs about 2% more instructions and no time).
        let values = n.div_ceil(8) * 8;
        for column in
            [&chunk.free_cpu, &chunk.free_memory, &chunk.requested_pods, &chunk.free_ephemeral, &s.allocatable_pods]
        {
            let first = column[k..].as_ptr();
            for line in (0..values).step_by(8) {
                prefetch(first.wrapping_add(line) as *const u8);
            }
        }
        prefetch(chunk.flags[k..].as_ptr());
    }

    /// Rewrites row `i` from `info`, copying its chunk (and the chunk list) if shared.
    /// Panics if out of range (the cache keeps positions in step with the nodes).
    pub fn set(&mut self, i: usize, info: &NodeInfo) {
        self.set_like(i, info, None);
    }

    /// `set`, taking the row's stamp from `like` when `like` holds the same values there
    /// (another buffer of the same rows: the stamp names the values, whichever buffer holds
    /// them, so that what is kept under it stays valid from one buffer to the other).
    pub(crate) fn set_like(&mut self, i: usize, info: &NodeInfo, like: Option<&Columns>) {
        assert!(i < self.len, "Columns::set row {i} out of range {}", self.len);
        let (row, low) = (HotRow::of(info), info.low_level());
        let (c, k) = (i / CHUNK, i % CHUNK);
        let same_row = self.chunk(c).read(k) == row;
        if same_row && self.chunk(c).read_low(k) == low {
            return;
        }
        let in_use = self.in_use(c);
        let slot = &mut Arc::make_mut(&mut self.groups)[c / GROUP];
        if Arc::get_mut(slot).is_none() {
            slot.prefetch_counts();
        }
        let group = Arc::make_mut(slot);
        let chunk = &mut group[c % GROUP];
        #[cfg(test)]
        if Arc::get_mut(chunk).is_none() {
            CHUNK_COPIES.with(|n| n.set(n.get() + 1));
        }
        let chunk = Arc::make_mut(chunk);
        if !same_row {
            chunk.write_in_use(k, &row, in_use);
            chunk.stamp[k] = match like {
                Some(o) if i < o.len && o.row(i) == row => o.chunk(c).stamp[k],
                _ => crate::sync::fresh_id(),
            };
        }
        chunk.write_low(k, &low);
    }

    /// Whether no other `Columns` shares this one's list of groups (its chunks may still be
    /// shared).
    pub(crate) fn is_unshared(&mut self) -> bool {
        Arc::get_mut(&mut self.groups).is_some()
    }

    /// Row `i` with the pods of priority below `priority` taken off, when the columns can
    /// tell (`i < len`).
    #[inline]
    pub fn below(&self, i: usize, priority: i32) -> Below {
        let chunk = self.chunk(i / CHUNK);
        let k = i % CHUNK;
        let steady = &*chunk.steady;
        if chunk.requested_pods[k] == 0 || priority <= steady.low_priority[k] {
            return Below::Nothing;
        }
        if priority > steady.next_priority[k] {
            return Below::Unknown;
        }
        let mut tally = HotTally { row: chunk.read(k), affinity_pods: steady.affinity_pods[k] };
        tally.sub(&chunk.read_low(k).delta);
        Below::Tally(tally)
    }

    /// The debug checker: every row that differs from what `infos` (in position order) say,
    /// described; empty when the columns are sound.
    pub fn mismatches<'a>(&self, infos: impl ExactSizeIterator<Item = &'a NodeInfo>) -> Vec<String> {
        let mut out = Vec::new();
        if infos.len() != self.len {
            out.push(format!("columns hold {} rows for {} nodes", self.len, infos.len()));
            return out;
        }
        for (i, info) in infos.enumerate() {
            let (have, want) = (self.row(i), HotRow::of(info));
            if have != want {
                out.push(format!("columns row {i} (node {}): {have:?}, its NodeInfo says {want:?}", info.name()));
            }
            let (have, want) = (self.chunk(i / CHUNK).read_low(i % CHUNK), info.low_level());
            if have != want {
                out.push(format!("columns low level {i} (node {}): {have:?}, its NodeInfo says {want:?}", info.name()));
            }
        }
        for c in 0..self.len.div_ceil(CHUNK) {
            let chunk = self.chunk(c);
            let (have, want) = (chunk.floors, chunk.floors_of(self.in_use(c)));
            if have != want {
                out.push(format!("columns chunk {c} floors: {have:?}, its rows say {want:?}"));
            }
        }
        out
    }

    /// The floors of the chunk holding row `i` (`i < len`): bounds over every row of that
    /// chunk, rows before and after `i` included.
    #[inline]
    pub fn floors(&self, i: usize) -> &Floors {
        &self.chunk(i / CHUNK).floors
    }

    /// How many chunks `self` and `other` share (tests: a publish copies only what changed).
    pub fn shared_chunks(&self, other: &Columns) -> usize {
        let chunks = |c: &Columns| c.groups.iter().flat_map(|g| g.iter().map(Arc::as_ptr)).collect::<Vec<_>>();
        chunks(self).iter().zip(chunks(other).iter()).filter(|(a, b)| a == b).count()
    }

    /// How many chunks of `self` and `other` share their steady columns (tests).
    pub fn shared_steady(&self, other: &Columns) -> usize {
        let steady =
            |c: &Columns| c.groups.iter().flat_map(|g| g.iter().map(|c| Arc::as_ptr(&c.steady))).collect::<Vec<_>>();
        steady(self).iter().zip(steady(other).iter()).filter(|(a, b)| a == b).count()
    }

    /// How many groups `self` and `other` share (tests).
    pub fn shared_groups(&self, other: &Columns) -> usize {
        self.groups.iter().zip(other.groups.iter()).filter(|(a, b)| Arc::ptr_eq(a, b)).count()
    }

    pub fn num_chunks(&self) -> usize {
        self.groups.iter().map(|g| g.len()).sum()
    }

    pub fn num_groups(&self) -> usize {
        self.groups.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{Node, Pod, ResourceName::*, Taint, TaintEffect};
    use crate::testing::requires_pod_anti_affinity;

    fn info(name: &str, cpu: i64) -> NodeInfo {
        NodeInfo::new(Arc::new(Node::builder(name).resources(cpu, 1 << 30, 10).build()))
    }

    #[test]
    fn columns_set_copies_one_chunk_and_one_group_and_leaves_clones_untouched() {
        // Three groups: 2048 + 2048 + 904 rows.
        let n: usize = 5000;
        let infos: Vec<NodeInfo> = (0..n).map(|i| info(&format!("n{i}"), 1000 + i as i64)).collect();
        let a = Columns::from_infos(infos.iter());
        assert_eq!(a.num_chunks(), n.div_ceil(CHUNK));
        assert_eq!(a.num_groups(), n.div_ceil(CHUNK * GROUP));
        for at in [130, 2048 + 70, n - 1] {
            let mut b = a.clone();
            let mut changed = infos[at].clone();
            changed.add_pod(Pod::builder("p").container("c", &[(Cpu, 250)]).build());
            b.set(at, &changed);
            assert_eq!(b.row(at).requested_cpu, 250);
            assert_eq!(b.row(at).requested_pods, 1);
            assert_eq!(b.at(at).row(), b.row(at));
            assert_eq!((b.at(at).requested_cpu(), b.at(at).allocatable_cpu()), (250, 1000 + at as i64));
            assert_eq!(a.row(at).requested_cpu, 0, "the older columns are untouched");
            assert_eq!(b.shared_chunks(&a), a.num_chunks() - 1, "one chunk copied");
            assert_eq!(b.shared_groups(&a), a.num_groups() - 1, "one group copied");
            assert_eq!(
                b.mismatches(infos.iter().enumerate().map(|(i, x)| if i == at { &changed } else { x })),
                Vec::<String>::new()
            );
        }
        // Writing the same values copies nothing.
        let mut c = a.clone();
        c.set(7, &infos[7]);
        assert_eq!(c.shared_chunks(&a), a.num_chunks());
        assert_eq!(c.shared_groups(&a), a.num_groups());
    }

    /// A chunk keeps allocatable less requested for cpu, memory and ephemeral storage
    /// (wrapping); requested reads back exactly for any values, the extremes included, and
    /// what is kept is the room NodeResourcesFit compares a request with.
    #[test]
    fn requested_reads_back_exactly_from_what_is_kept_free() {
        let values = [0, 1, -1, 4000, 32 << 30, i64::MAX, i64::MIN, i64::MAX - 1, i64::MIN + 1];
        let mut loose = LooseRow::default();
        for (i, &alloc) in values.iter().enumerate() {
            for &req in &values {
                let pods = values[(i + 1) % values.len()];
                let row = HotRow {
                    allocatable_cpu: alloc,
                    allocatable_memory: req,
                    allocatable_pods: pods,
                    allocatable_ephemeral: alloc,
                    requested_cpu: req,
                    requested_memory: alloc,
                    requested_pods: req,
                    requested_ephemeral: pods,
                    non_zero_cpu: req,
                    non_zero_memory: alloc,
                    flags: HAS_TAINTS,
                };
                let at = loose.set(&row);
                assert_eq!(at.row(), row);
                assert_eq!(
                    (at.requested_cpu(), at.requested_memory(), at.requested_ephemeral()),
                    (req, alloc, pods),
                    "allocatable {alloc}, requested {req}"
                );
                assert_eq!(loose.0.free_cpu[0], alloc.wrapping_sub(req));
                assert_eq!(loose.0.free_memory[0], req.wrapping_sub(alloc));
                assert_eq!(loose.0.free_ephemeral[0], alloc.wrapping_sub(pods));
            }
        }
    }

    /// `prefetch` over every block shape the filter asks for (a chunk's first rows, its
    /// last, one row, the table's last partial chunk) stays inside the arrays and changes no
    /// row.
    #[test]
    fn prefetch_changes_nothing() {
        let n = 3 * CHUNK + 5;
        let infos: Vec<NodeInfo> = (0..n).map(|i| info(&format!("n{i}"), 1000 + i as i64)).collect();
        let cols = Columns::from_infos(infos.iter());
        let before: Vec<HotRow> = (0..n).map(|i| cols.row(i)).collect();
        for (lo, hi) in [(0, CHUNK), (0, 1), (CHUNK - 1, CHUNK), (CHUNK, CHUNK + 17), (3 * CHUNK, n), (n - 1, n)] {
            cols.prefetch(lo, hi);
        }
        assert_eq!((0..n).map(|i| cols.row(i)).collect::<Vec<_>>(), before);
    }

    /// Stamps: distinct for every row built, a fresh one when `set` writes new values, the
    /// same when it writes the values the row holds; clones keep them.
    #[test]
    fn a_row_gets_a_fresh_stamp_when_its_values_change() {
        let infos: Vec<NodeInfo> = (0..150).map(|i| info(&format!("n{i}"), 1000)).collect();
        let a = Columns::from_infos(infos.iter());
        let stamps = |c: &Columns| {
            let mut out = Vec::new();
            c.stamps_into(&(0..c.len() as u32).collect::<Vec<_>>(), &mut out);
            out
        };
        let before = stamps(&a);
        let mut distinct = before.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), 150, "every row its own stamp");
        assert!(!before.contains(&0));
        let mut b = a.clone();
        b.set(70, &infos[70]);
        assert_eq!(stamps(&b), before, "the same values keep the stamp");
        let mut changed = infos[70].clone();
        changed.add_pod(Pod::builder("p").container("c", &[(Cpu, 250)]).build());
        b.set(70, &changed);
        let after = stamps(&b);
        assert!(!before.contains(&after[70]), "a fresh stamp");
        assert_eq!((&after[..70], &after[71..]), (&before[..70], &before[71..]));
        assert_eq!(stamps(&a), before, "the older columns keep theirs");
        let rebuilt = Columns::from_infos(infos.iter());
        assert!(stamps(&rebuilt).iter().all(|s| !before.contains(s)), "a rebuild stamps afresh");
    }

    /// `rows` and `block` read the rows `at` reads, across chunk and group boundaries.
    #[test]
    fn rows_and_blocks_read_what_at_reads() {
        let n: usize = 4200;
        let infos: Vec<NodeInfo> = (0..n).map(|i| info(&format!("n{i}"), i as i64)).collect();
        let cols = Columns::from_infos(infos.iter());
        // A rotated visiting order with the wrap, and a scattered one.
        let rotated: Vec<u32> = (4000..n as u32).chain(0..300).chain(2040..2060).collect();
        let scattered: Vec<u32> = vec![5, 4199, 5, 63, 64, 2047, 2048, 0];
        // A gap inside a chunk, and a stretch's own positions out of order.
        let gapped: Vec<u32> = vec![10, 11, 13, 14, 15, 0, 2, 1, 3];
        let span_lens = |positions: &[u32]| cols.spans(positions).map(|(_, _, len)| len).collect::<Vec<_>>();
        assert_eq!(span_lens(&rotated), [32, 64, 64, 40, 64, 64, 64, 64, 44, 8, 12], "a span per chunk");
        assert_eq!(span_lens(&gapped), [2, 3, 1, 1, 1, 1]);
        assert!(!Columns::dense(&rotated) && !Columns::dense(&scattered) && !Columns::dense(&gapped));
        assert!(Columns::dense(&rotated[..200]) && Columns::dense(&rotated[200..500]));
        assert!(Columns::dense(&[]) && Columns::dense(&[7]) && Columns::dense(&[1, 2, 3, 4, 5, 6, 7, 9]));
        assert!(!Columns::dense(&[1, 2, 3, 4, 5, 6, 7, 11]) && !Columns::dense(&[1, 3]));
        // Ascending stretches (`dense`: `stamps_into` reads them by `spans`).
        let ascending: Vec<u32> = (4000..n as u32).collect();
        let with_gaps: Vec<u32> = (0..300).filter(|p| p % 50 != 7).collect();
        assert!(Columns::dense(&ascending) && Columns::dense(&with_gaps));
        for positions in [&rotated, &scattered, &gapped, &ascending, &with_gaps] {
            let got: Vec<i64> = cols.rows(positions).map(|r| r.allocatable_cpu()).collect();
            let want: Vec<i64> = positions.iter().map(|&p| cols.at(p as usize).allocatable_cpu()).collect();
            assert_eq!(got, want);
            let spans: Vec<_> = cols.spans(positions).collect();
            let by_spans: Vec<i64> =
                spans.iter().flat_map(|&(chunk, k, len)| chunk.steady.allocatable_cpu[k..k + len].to_vec()).collect();
            assert_eq!(by_spans, want, "spans");
            assert!(spans.iter().all(|&(_, k, len)| len >= 1 && k + len <= CHUNK));
            let mut stamps = Vec::new();
            cols.stamps_into(positions, &mut stamps);
            let want_stamps: Vec<u64> = cols.rows(positions).map(|r| r.chunk.stamp[r.k()]).collect();
            assert_eq!(stamps, want_stamps, "stamps");
            assert_eq!(want, positions.iter().map(|&p| p as i64).collect::<Vec<_>>());
        }
        for lo in [0, 10, 64, 2047, 2048 + 63, 4160] {
            let block = cols.block(lo);
            let len = CHUNK - lo % CHUNK;
            for i in 0..len.min(n - lo) {
                assert_eq!(block.at(i).row(), cols.row(lo + i), "block at {lo}, row {i}");
            }
        }
        // `any_flag` sees the one flagged row of a block, and only within the rows asked.
        let mut flagged = infos.clone();
        let tainted = Node::builder("t").resources(1, 1, 1).taint(Taint::new("k", "v", TaintEffect::NoSchedule));
        flagged[2050].set_node(Arc::new(tainted.build()));
        let cols = Columns::from_infos(flagged.iter());
        for (lo, n, want) in [(2048, 64, true), (2048, 2, false), (2048, 3, true), (2050, 1, true), (2051, 13, false)] {
            assert_eq!(cols.block(lo).any_flag(n, HAS_TAINTS), want, "block at {lo}, {n} rows");
            assert!(!cols.block(lo).any_flag(n, UNSCHEDULABLE));
        }
    }

    /// `below` tells the row without the lower-priority pods when they share the lowest
    /// priority, says `Unknown` when they span two, and follows a change of priorities that
    /// leaves the row as it was.
    #[test]
    fn below_reads_the_lowest_priority_level() {
        let pod = |name: &str, prio: i32, cpu: i64| {
            Pod::builder(name).priority(prio).container("c", &[(Cpu, cpu), (Memory, 1 << 20)]).build()
        };
        let mut n = info("n", 4000);
        let mut cols = Columns::from_infos([&n].into_iter());
        assert_eq!(cols.below(0, 100), Below::Nothing, "no pods");
        n.add_pod(pod("a", 0, 900));
        n.add_pod(pod("b", 0, 900));
        n.add_pod(pod("h", 10, 3000));
        cols.set(0, &n);
        assert_eq!(cols.below(0, 0), Below::Nothing);
        let Below::Tally(t) = cols.below(0, 10) else { panic!("one level below 10") };
        assert_eq!((t.row().requested_cpu, t.row().requested_pods), (3000, 1));
        assert_eq!(cols.below(0, 11), Below::Unknown, "two levels below 11");
        // Same requests, other priority: the row is unchanged, the level is not.
        n.remove_pod(&pod("a", 0, 900).uid).expect("on the node");
        n.add_pod(pod("c", 5, 900));
        cols.set(0, &n);
        assert!(cols.mismatches([&n].into_iter()).is_empty());
        let Below::Tally(t) = cols.below(0, 5) else { panic!("one level below 5") };
        assert_eq!(t.row().requested_cpu, 900 + 900 + 3000 - 900);
    }

    /// Floors follow every write: rows sinking below them, rising off them, losing the only
    /// flag of its kind, in the last chunk (not full) as in the others; the debug checker
    /// finds them sound after each, and they are the least of each chunk's rows in use.
    #[test]
    fn floors_follow_every_write() {
        use crate::util::rng::Rng;
        let n = 150; // chunks of 64, 64 and 22 rows
        let tainted = |name: &str, cpu: i64| {
            let node =
                Node::builder(name).resources(cpu, 1 << 30, 10).taint(Taint::new("k", "v", TaintEffect::NoSchedule));
            NodeInfo::new(Arc::new(node.build()))
        };
        let mut infos: Vec<NodeInfo> = (0..n).map(|i| info(&format!("n{i}"), 1000 + i as i64)).collect();
        let mut cols = Columns::from_infos(infos.iter());
        let mut rng = Rng::seed(7);
        for step in 0..3000 {
            let i = rng.below(n as u64) as usize;
            let name = format!("n{i}");
            let pods: Vec<Pod> = infos[i].pods().iter().cloned().collect();
            // Taints come rarely and go often, so that a chunk's last tainted row goes.
            let mut next = match rng.below(40) {
                0 => tainted(&name, 500 + rng.below(2000) as i64),
                1..=8 => info(&name, 500 + rng.below(2000) as i64),
                _ => infos[i].clone(),
            };
            if next.pods().is_empty() {
                for p in pods.iter().filter(|_| rng.below(4) != 0) {
                    next.add_pod(p.clone());
                }
            }
            if rng.below(3) == 0 && !next.pods().is_empty() {
                let first = next.pods().get(0).map(|p| p.uid.clone());
                next.remove_pod(&first.unwrap()).unwrap();
            } else if next.pods().len() < 10 {
                let cpu = rng.below(400) as i64;
                next.add_pod(
                    Pod::builder(&format!("p{step}")).container("c", &[(Cpu, cpu)]).build().with_node(infos[i].name()),
                );
            }
            infos[i] = next;
            cols.set(i, &infos[i]);
            assert_eq!(cols.mismatches(infos.iter()), Vec::<String>::new(), "step {step}");
            let c = i / CHUNK;
            let rows = &infos[c * CHUNK..((c + 1) * CHUNK).min(n)];
            let least = |f: fn(&HotRow) -> i64| rows.iter().map(|r| f(&HotRow::of(r))).min().unwrap();
            let f = cols.floors(i);
            assert_eq!(f.free_cpu, least(|r| r.allocatable_cpu - r.requested_cpu), "step {step}");
            assert_eq!(f.pods_room, least(|r| r.allocatable_pods - r.requested_pods), "step {step}");
            assert_eq!(f.flags, rows.iter().fold(0, |f, r| f | HotRow::of(r).flags), "step {step}");
        }
    }

    #[test]
    fn hot_row_flags_follow_the_node_and_pods() {
        let tainted =
            Node::builder("t").resources(1000, 1 << 30, 10).taint(Taint::new("k", "v", TaintEffect::NoSchedule));
        let mut t = NodeInfo::new(Arc::new(tainted.unschedulable(true).build()));
        assert!(!HotRow::of(&t).has_affinity_pods());
        assert_eq!(HotRow::of(&t).flags, UNSCHEDULABLE | HAS_TAINTS);
        let plain = HotRow::of(&info("p", 1000));
        assert!(!plain.unschedulable() && !plain.has_taints() && !plain.has_affinity_pods());
        t.add_pod(Pod::builder("a").affinity(requires_pod_anti_affinity("app", "x")).build());
        assert!(HotRow::of(&t).has_affinity_pods());
    }
}
