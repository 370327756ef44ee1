//! Every chunk of `0..len` done once on the pool, with the results read back in chunk order:
//! the parallel map behind scoring a cycle's feasible nodes.
//!
//! Workers claim chunks from one counter, in order, and append what a chunk gives to their
//! own buffer (each worker locks its buffer once per run, nothing is locked per chunk or per
//! item). Every chunk is claimed by exactly one worker, the caller included, so the work is
//! done whatever number of workers joins. Afterwards `Chunked::place` says where each
//! chunk's output sits: which worker's buffer, and its rank among that worker's chunks.

use super::pool::WorkerPool;
use crate::sync::{lock, AtomicUsize, Mutex, Ordering};

/// Per-worker buffers, reused across runs.
pub struct ChunkBuffers<B> {
    workers: Vec<Mutex<WorkerChunks<B>>>,
}

impl<B> Default for ChunkBuffers<B> {
    fn default() -> Self {
        ChunkBuffers { workers: Vec::new() }
    }
}

struct WorkerChunks<B> {
    buf: B,
    /// The chunks this worker did, in claim order (ascending).
    chunks: Vec<u32>,
}

/// Where each chunk's output is after `for_chunks`.
#[derive(Default)]
pub struct Chunked {
    /// (worker, rank among that worker's chunks) of each chunk, in chunk order.
    place: Vec<(u32, u32)>,
}

impl Chunked {
    /// (worker, rank) of every chunk, in chunk order.
    pub fn place(&self) -> &[(u32, u32)] {
        &self.place
    }
}

impl<B: Default + Send> ChunkBuffers<B> {
    /// Worker `w`'s buffer (after a run: what its chunks appended).
    pub fn buf(&mut self, w: usize) -> &mut B {
        &mut self.workers[w].get_mut().unwrap_or_else(|e| e.into_inner()).buf
    }

    /// Calls `work(buf, lo, hi)` once for each chunk `lo..hi` of `0..len` (`chunk` items, the
    /// last one shorter), on `pool` when given, each worker with its own buffer (`reset` first,
    /// once per run); `chunked` says afterwards where each chunk went.
    pub fn for_chunks(
        &mut self,
        pool: Option<&WorkerPool>,
        len: usize,
        chunk: usize,
        reset: impl Fn(&mut B) + Sync,
        work: impl Fn(&mut B, usize, usize) + Sync,
        chunked: &mut Chunked,
    ) {
        let chunk = chunk.max(1);
        let num_chunks = len.div_ceil(chunk);
        let workers = pool.map_or(1, WorkerPool::size);
        while self.workers.len() < workers {
            self.workers.push(Mutex::new(WorkerChunks { buf: B::default(), chunks: Vec::new() }));
        }
        let bufs = &mut self.workers[..workers];
        for w in bufs.iter_mut() {
            let w = w.get_mut().unwrap_or_else(|e| e.into_inner());
            w.chunks.clear();
            reset(&mut w.buf);
        }
        let bufs = &*bufs;
        let next = AtomicUsize::new(0);
        let run = |w: usize| {
            let mut mine = lock(&bufs[w]);
            let mine = &mut *mine;
            loop {
                let c = next.fetch_add(1, Ordering::AcqRel);
                if c >= num_chunks {
                    return;
                }
                work(&mut mine.buf, c * chunk, ((c + 1) * chunk).min(len));
                mine.chunks.push(c as u32);
            }
        };
        match pool {
            Some(p) if workers > 1 && num_chunks > 1 => p.run(&run),
            _ => run(0),
        }
        chunked.place.clear();
        chunked.place.resize(num_chunks, (u32::MAX, 0));
        for (w, b) in self.workers[..workers].iter_mut().enumerate() {
            let b = b.get_mut().unwrap_or_else(|e| e.into_inner());
            for (rank, &c) in b.chunks.iter().enumerate() {
                chunked.place[c as usize] = (w as u32, rank as u32);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Squares of `0..len`, chunk by chunk, read back in order.
    fn squares(pool: Option<&WorkerPool>, len: usize, chunk: usize, bufs: &mut ChunkBuffers<Vec<u64>>) -> Vec<u64> {
        let mut chunked = Chunked::default();
        bufs.for_chunks(
            pool,
            len,
            chunk,
            Vec::clear,
            |b, lo, hi| b.extend((lo..hi).map(|i| (i * i) as u64)),
            &mut chunked,
        );
        let mut out = Vec::new();
        for (c, &(w, rank)) in chunked.place().iter().enumerate() {
            let n = ((c + 1) * chunk).min(len) - c * chunk;
            let at = rank as usize * chunk;
            out.extend_from_slice(&bufs.buf(w as usize)[at..at + n]);
        }
        out
    }

    #[test]
    fn every_chunk_once_in_order_on_any_pool() {
        let pools = [None, Some(WorkerPool::new(2)), Some(WorkerPool::new(4))];
        let mut bufs = ChunkBuffers::default();
        for pool in &pools {
            for (len, chunk) in [(0, 4), (1, 4), (7, 3), (64, 16), (1000, 7), (1000, 1000), (5, 1)] {
                let want: Vec<u64> = (0..len).map(|i| (i * i) as u64).collect();
                for _ in 0..20 {
                    assert_eq!(squares(pool.as_ref(), len, chunk, &mut bufs), want, "len {len} chunk {chunk}");
                }
            }
        }
    }
}
