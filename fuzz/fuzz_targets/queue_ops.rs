//! Arbitrary sequences of PriorityQueue operations, each checked against the plain model
//! (`ksched_engine::testing::queue_model`, the same one the property test uses): ordering,
//! no loss, no duplicates across the three sub-queues, the nominator's maps in agreement,
//! cluster events requeueing exactly the parked and in-flight pods the model plugins' hints
//! say, gated pods held until their gate is removed, preemptors held by DefaultPreemption
//! until their preemption step, Activate, backoff by rejections and errors in a row, and pops
//! from backoff (SchedulerPopFromBackoffQ on or off, the input's first choice).
#![no_main]

use ksched_engine::testing::queue_model::{QueueHarness, QueueOp};
use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
enum Op {
    Add { pod: u8, priority: i8, gated: bool },
    Ungate { pod: u8 },
    AddIfNotPresent { pod: u8 },
    Pop,
    Fail { k: u8, rejectors: u8 },
    Bind { k: u8 },
    Update { pod: u8, changed: bool },
    Delete { pod: u8 },
    MoveAll,
    NodeEvent { update: bool },
    AssignedPodDelete { db: bool },
    Advance { millis: u16 },
    FlushBackoff,
    FlushLeftover,
    Preempt { k: u8 },
    PreemptDone { pod: u8 },
    Activate { pod: u8 },
}

impl Op {
    fn to_queue_op(&self) -> QueueOp {
        match *self {
            Op::Add { pod, priority, gated } => QueueOp::Add { pod: pod.into(), priority: priority.into(), gated },
            Op::Ungate { pod } => QueueOp::Ungate { pod: pod.into() },
            Op::AddIfNotPresent { pod } => QueueOp::AddIfNotPresent { pod: pod.into() },
            Op::Pop => QueueOp::Pop,
            Op::Fail { k, rejectors } => QueueOp::Fail { k: k.into(), rejectors },
            Op::Bind { k } => QueueOp::Bind { k: k.into() },
            Op::Update { pod, changed } => QueueOp::Update { pod: pod.into(), changed },
            Op::Delete { pod } => QueueOp::Delete { pod: pod.into() },
            Op::MoveAll => QueueOp::MoveAll,
            Op::NodeEvent { update } => QueueOp::NodeEvent { update },
            Op::AssignedPodDelete { db } => QueueOp::AssignedPodDelete { db },
            // Up to ~65 s per step: crosses the 1–10 s backoffs and the harness's 30 s leftover age.
            Op::Advance { millis } => QueueOp::Advance { millis: millis.into() },
            Op::FlushBackoff => QueueOp::FlushBackoff,
            Op::FlushLeftover => QueueOp::FlushLeftover,
            Op::Preempt { k } => QueueOp::Preempt { k: k.into() },
            Op::PreemptDone { pod } => QueueOp::PreemptDone { pod: pod.into() },
            Op::Activate { pod } => QueueOp::Activate { pod: pod.into() },
        }
    }
}

#[derive(Arbitrary, Debug)]
struct Input {
    pop_from_backoff: bool,
    ops: Vec<Op>,
}

fuzz_target!(|input: Input| {
    let Input { pop_from_backoff, ops } = input;
    let mut h = QueueHarness::with_pop_from_backoff(pop_from_backoff);
    for (step, op) in ops.iter().enumerate() {
        if let Err(e) = h.apply(&op.to_queue_op()) {
            panic!("step {step} {op:?}: {e}");
        }
    }
});
