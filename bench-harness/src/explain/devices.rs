//! The devices DynamicResources gave the pod's claims in the explained attempt, read back
//! from the cluster's claims right after the attempt bound the pod (what its PreBind wrote:
//! the allocation of the claims it allocated, and its reservation of every claim), before
//! anything else in the run could change them.

use ksched_engine::api::dra::ClaimName;
use ksched_engine::api::{Pod, PodUid, Sym};
use ksched_engine::observer::CycleObserver;
use ksched_engine::scheduler::CycleOutcome;
use ksched_sim::Simulation;
use serde::Serialize;

use crate::front_ends::RunHooks;
use crate::simulate::columns;

/// One device of a claim's allocation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DeviceReport {
    /// The claim's request, or `request/subrequest` for a `firstAvailable` choice.
    pub request: String,
    pub driver: String,
    pub pool: String,
    pub device: String,
}

/// One of the pod's claims after the attempt.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ClaimDevices {
    /// The pod's `spec.resourceClaims` entry.
    pub entry: String,
    /// `namespace/name`.
    pub claim: String,
    /// True when this attempt allocated it; false when it was allocated already (a claim
    /// shared with pods bound earlier, or allocated in the input).
    pub allocated_here: bool,
    /// In allocation order.
    pub devices: Vec<DeviceReport>,
    /// The pods the claim is reserved for (this one included).
    pub reserved_for: Vec<String>,
}

/// Run hooks for `explain`: install the cycle observer for the run, and read the pod's claims
/// once the explained attempt bound it.
pub struct ExplainHooks {
    pub observer: Option<Box<dyn CycleObserver>>,
    target: PodUid,
    attempt: u32,
    seen: u32,
    /// The pod's claims allocated when the explained attempt started.
    allocated_before: Vec<Sym>,
    /// The pod, bound by the explained attempt, whose claims are still to read.
    to_read: Option<Pod>,
    pub claims: Vec<ClaimDevices>,
}

impl ExplainHooks {
    pub fn new(observer: Box<dyn CycleObserver>, target: PodUid, attempt: u32) -> ExplainHooks {
        ExplainHooks {
            observer: Some(observer),
            target,
            attempt,
            seen: 0,
            allocated_before: Vec::new(),
            to_read: None,
            claims: Vec::new(),
        }
    }

    fn read_claims(&mut self, sim: &Simulation) {
        let Some(pod) = self.to_read.take() else { return };
        let objects = sim.cache.objects();
        for entry in &pod.resource_claims {
            let ClaimName::Named(name, _) = pod.claim_name(entry) else { continue };
            let Some(claim) = objects.dra.claim(pod.namespace, name) else { continue };
            let results = claim.allocation.iter().flat_map(|a| a.results.iter());
            self.claims.push(ClaimDevices {
                entry: entry.name.to_string(),
                claim: claim.key(),
                allocated_here: !self.allocated_before.contains(&name),
                devices: results
                    .map(|r| DeviceReport {
                        request: r.request.to_string(),
                        driver: r.driver.to_string(),
                        pool: r.pool.to_string(),
                        device: r.device.to_string(),
                    })
                    .collect(),
                reserved_for: claim.reserved_for.iter().map(|r| r.name.to_string()).collect(),
            });
        }
    }
}

impl RunHooks for ExplainHooks {
    fn started(&mut self, sim: &mut Simulation) {
        if let Some(o) = self.observer.take() {
            sim.scheduler.set_observer(o);
        }
    }

    fn before_cycle(&mut self, sim: &Simulation, pod: &Pod) {
        self.read_claims(sim);
        if pod.uid == self.target && self.seen + 1 == self.attempt {
            let objects = sim.cache.objects();
            self.allocated_before = pod
                .resource_claims
                .iter()
                .filter_map(|e| match pod.claim_name(e) {
                    ClaimName::Named(name, _) => {
                        objects.dra.claim(pod.namespace, name).is_some_and(|c| c.allocation.is_some()).then_some(name)
                    }
                    _ => None,
                })
                .collect();
        }
    }

    fn attempt(&mut self, outcome: &CycleOutcome, _ns: u64) {
        let pod = match outcome {
            CycleOutcome::Scheduled { pod, .. }
            | CycleOutcome::Unschedulable { pod, .. }
            | CycleOutcome::BindFailed { pod, .. } => pod,
        };
        if pod.uid != self.target {
            return;
        }
        self.seen += 1;
        if self.seen == self.attempt && matches!(outcome, CycleOutcome::Scheduled { .. }) {
            self.to_read = Some(pod.clone());
        }
    }

    fn clock_moving(&mut self, sim: &Simulation) {
        self.read_claims(sim);
    }

    fn finished(&mut self, sim: &mut Simulation) {
        self.read_claims(sim);
        self.observer = sim.scheduler.take_observer();
    }
}

/// The table of the claims' devices on `node` (empty without claims).
pub fn table(claims: &[ClaimDevices], node: &str) -> String {
    if claims.is_empty() {
        return String::new();
    }
    let mut out = format!("\nDevices on {node} (DynamicResources: each claim's allocation, by request)\n");
    let mut rows =
        vec![["  CLAIM", "ENTRY", "REQUEST", "DEVICE (driver/pool/device)", "NOTE"].map(String::from).to_vec()];
    for c in claims {
        let note = if c.allocated_here {
            "allocated by this attempt".to_owned()
        } else {
            format!("allocated before; now reserved for {}", c.reserved_for.join(", "))
        };
        if c.devices.is_empty() {
            rows.push(vec![format!("  {}", c.claim), c.entry.clone(), "-".into(), "-".into(), note]);
            continue;
        }
        for (i, d) in c.devices.iter().enumerate() {
            let first = i == 0;
            rows.push(vec![
                if first { format!("  {}", c.claim) } else { String::new() },
                if first { c.entry.clone() } else { String::new() },
                d.request.clone(),
                format!("{}/{}/{}", d.driver, d.pool, d.device),
                if first { note.clone() } else { String::new() },
            ]);
        }
    }
    out.push_str(&columns(&rows));
    out
}
