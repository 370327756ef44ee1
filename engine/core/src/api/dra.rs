//! Dynamic Resource Allocation objects (resource.k8s.io): DeviceClasses, ResourceSlices,
//! ResourceClaims and ResourceClaimTemplates, as plain data; what a pod says about its claims
//! lives on the pod (`PodData::resource_claims`).
//!
//! Only what the scheduler reads is kept. Names are `Sym`s; a claim's spec is shared (`Arc`)
//! between a template and the claims made from it, so a compiled CEL selector is compiled
//! once per object (`CelSelector` compiles when built) and never per device or per cycle.
//! Device attributes keep the names as written (qualified or not): the allocator and the CEL
//! environment qualify a bare name with the device's driver, as upstream does.

use std::fmt;
use std::sync::Arc;

use super::affinity::NodeSelector;
use super::quantity::Quantity;
use super::Sym;

/// A compiled CEL device selector: the expression and its program (compiled once, when the
/// object is built). Evaluation lives with the DynamicResources plugin's CEL environment.
#[derive(Clone)]
pub struct CelSelector {
    pub expression: Arc<str>,
    pub program: Arc<cel::Program>,
    /// The string literals of the expression: the attribute and capacity domains it may
    /// index (upstream's maps answer an unknown domain with an empty map, not an error).
    pub literals: Arc<[Arc<str>]>,
    /// The estimated worst-case cost (see `estimate_cost`).
    pub cost: u64,
}

/// Upstream's `CELSelectorExpressionMaxCost`: the most an expression may cost.
pub const CEL_MAX_COST: u64 = 1_000_000;

/// A bound on the size of what a comprehension iterates when it is not a literal: a device
/// has at most 32 attributes and capacities (upstream's
/// `ResourceSliceMaxAttributesAndCapacitiesPerDevice`).
const UNKNOWN_RANGE: u64 = 32;

/// An estimate of an expression's worst-case cost, in the spirit of CEL's estimator: one
/// unit per node, a comprehension's loop body times the size of its range (a literal's
/// length, else `UNKNOWN_RANGE`). Saturates.
fn estimate_cost(e: &cel::IdedExpr, literals: &mut Vec<Arc<str>>) -> u64 {
    use cel::common::ast::{Expr, LiteralValue};
    let sum = |items: &mut dyn Iterator<Item = &cel::IdedExpr>, lits: &mut Vec<Arc<str>>| {
        items.fold(1u64, |acc, x| acc.saturating_add(estimate_cost(x, lits)))
    };
    match &e.expr {
        Expr::Literal(LiteralValue::String(s)) => {
            if !literals.iter().any(|l| **l == *s.inner()) {
                literals.push(Arc::from(s.inner()));
            }
            1
        }
        Expr::Call(c) => sum(&mut c.target.iter().map(|t| &**t).chain(c.args.iter()), literals),
        Expr::List(l) => sum(&mut l.elements.iter(), literals),
        Expr::Map(m) => {
            let mut cost = 1u64;
            for entry in &m.entries {
                if let cel::common::ast::EntryExpr::MapEntry(me) = &entry.expr {
                    cost = cost.saturating_add(estimate_cost(&me.key, literals));
                    cost = cost.saturating_add(estimate_cost(&me.value, literals));
                }
            }
            cost
        }
        Expr::Select(s) => 1 + estimate_cost(&s.operand, literals),
        Expr::Comprehension(c) => {
            let range = match &c.iter_range.expr {
                Expr::List(l) => l.elements.len() as u64,
                Expr::Map(m) => m.entries.len() as u64,
                _ => UNKNOWN_RANGE,
            };
            let body = estimate_cost(&c.loop_cond, literals).saturating_add(estimate_cost(&c.loop_step, literals));
            estimate_cost(&c.iter_range, literals)
                .saturating_add(estimate_cost(&c.accu_init, literals))
                .saturating_add(estimate_cost(&c.result, literals))
                .saturating_add(range.saturating_mul(body))
        }
        _ => 1,
    }
}

/// Upstream's `CELSelectorExpressionMaxLength` (10 Ki): the API server refuses longer ones.
pub const CEL_MAX_EXPRESSION_LEN: usize = 10 * 1024;

impl CelSelector {
    /// Compiles `expression`; the error is the parser's message (the caller names object and
    /// field).
    pub fn compile(expression: &str) -> Result<CelSelector, String> {
        if expression.trim().is_empty() {
            return Err("must not be empty".into());
        }
        if expression.len() > CEL_MAX_EXPRESSION_LEN {
            return Err(format!("too long: {} bytes, at most {CEL_MAX_EXPRESSION_LEN} are allowed", expression.len()));
        }
        let program = cel::Program::compile(expression).map_err(|e| format!("CEL compile error: {e}"))?;
        let mut literals = Vec::new();
        let cost = estimate_cost(program.expression(), &mut literals);
        if cost > CEL_MAX_COST {
            return Err(format!(
                "CEL compile error: estimated cost {cost} exceeds the limit of {CEL_MAX_COST} (too many nested loops)"
            ));
        }
        Ok(CelSelector {
            expression: Arc::from(expression),
            program: Arc::new(program),
            literals: literals.into(),
            cost,
        })
    }
}

impl fmt::Debug for CelSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cel({:?})", self.expression)
    }
}

impl PartialEq for CelSelector {
    fn eq(&self, other: &Self) -> bool {
        self.expression == other.expression
    }
}

/// `DeviceClass`: selectors every device allocated through the class must match.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceClass {
    pub name: Sym,
    pub selectors: Vec<CelSelector>,
}

/// A typed device attribute (`resource.k8s.io` `DeviceAttribute`: exactly one of these).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AttributeValue {
    Int(i64),
    Bool(bool),
    String(Arc<str>),
    /// A semantic version (validated when read).
    Version(Arc<str>),
}

/// A device of a slice.
#[derive(Clone, Debug, PartialEq)]
pub struct Device {
    pub name: Sym,
    /// Attribute name (as written: `model` or `domain/model`) → value.
    pub attributes: Vec<(Sym, AttributeValue)>,
    /// Capacity name (as written) → quantity.
    pub capacity: Vec<(Sym, Quantity)>,
    /// The alpha feature gate a field of the device needs (`consumesCounters`:
    /// DRAPartitionableDevices, `bindingConditions`: DRADeviceBindingConditions); upstream's
    /// allocator never picks such a device while the gate is off. (Taints are ignored with
    /// DRADeviceTaints off, as upstream ignores them.)
    pub needs_feature: Option<&'static str>,
}

impl Device {
    pub fn new(name: &str) -> Device {
        Device { name: Sym::new(name), attributes: Vec::new(), capacity: Vec::new(), needs_feature: None }
    }

    pub fn attribute(mut self, name: &str, value: AttributeValue) -> Device {
        self.attributes.push((Sym::new(name), value));
        self
    }

    pub fn capacity(mut self, name: &str, q: Quantity) -> Device {
        self.capacity.push((Sym::new(name), q));
        self
    }

    /// The attribute `name` (fully qualified, `domain/id`, or bare) as upstream's allocator
    /// looks it up: the name as written, else, when its domain is the driver's, the bare id.
    pub fn lookup_attribute(&self, driver: Sym, name: &str) -> Option<&AttributeValue> {
        if let Some((_, v)) = self.attributes.iter().find(|(n, _)| n.as_str() == name) {
            return Some(v);
        }
        let (domain, id) = name.split_once('/')?;
        if domain != driver.as_str() {
            return None;
        }
        self.attributes.iter().find(|(n, _)| n.as_str() == id).map(|(_, v)| v)
    }
}

/// Which nodes a slice's devices are reachable from.
#[derive(Clone, Debug, PartialEq)]
pub enum SliceNodes {
    /// `nodeName`: one node's local devices.
    Node(Sym),
    /// `nodeSelector` (upstream supports one term for allocation node selectors).
    Selector(NodeSelector),
    /// `allNodes: true`.
    AllNodes,
    /// `perDeviceNodeSelection: true` (DRAPartitionableDevices, alpha): never visible while
    /// the gate is off.
    PerDevice,
}

/// `ResourceSlice`: devices of one pool of one driver (a pool may span several slices).
#[derive(Clone, Debug, PartialEq)]
pub struct ResourceSlice {
    pub name: Sym,
    pub driver: Sym,
    pub pool: Sym,
    pub generation: i64,
    pub resource_slice_count: i64,
    pub nodes: SliceNodes,
    pub devices: Vec<Device>,
}

/// `allocationMode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AllocationMode {
    ExactCount,
    All,
}

/// What one request (or one `firstAvailable` subrequest) asks for.
#[derive(Clone, Debug, PartialEq)]
pub struct ExactRequest {
    /// The request's name, or the subrequest's (without its parent's).
    pub name: Sym,
    pub device_class: Sym,
    pub selectors: Vec<CelSelector>,
    pub mode: AllocationMode,
    /// ExactCount's count (1 when unset, as the API server defaults it).
    pub count: i64,
    /// `adminAccess` (`None` when unset; upstream refuses a set value while DRAAdminAccess is
    /// off).
    pub admin_access: Option<bool>,
    /// Tolerations are set (DRADeviceTaints, alpha; read only to warn).
    pub has_tolerations: bool,
}

impl ExactRequest {
    pub fn new(name: &str, class: &str) -> ExactRequest {
        ExactRequest {
            name: Sym::new(name),
            device_class: Sym::new(class),
            selectors: Vec::new(),
            mode: AllocationMode::ExactCount,
            count: 1,
            admin_access: None,
            has_tolerations: false,
        }
    }

    pub fn count(mut self, n: i64) -> ExactRequest {
        self.count = n;
        self
    }

    pub fn all(mut self) -> ExactRequest {
        self.mode = AllocationMode::All;
        self
    }

    pub fn selector(mut self, expression: &str) -> ExactRequest {
        self.selectors.push(CelSelector::compile(expression).expect("test selector compiles"));
        self
    }

    pub fn admin(mut self) -> ExactRequest {
        self.admin_access = Some(true);
        self
    }
}

/// A request: `exactly`, or `firstAvailable` subrequests (tried in order).
#[derive(Clone, Debug, PartialEq)]
pub enum DeviceRequest {
    Exactly(ExactRequest),
    FirstAvailable { name: Sym, subrequests: Vec<ExactRequest> },
}

impl DeviceRequest {
    pub fn name(&self) -> Sym {
        match self {
            DeviceRequest::Exactly(r) => r.name,
            DeviceRequest::FirstAvailable { name, .. } => *name,
        }
    }
}

/// A `matchAttribute` constraint: the devices of the listed requests (all requests when the
/// list is empty) agree on the attribute.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceConstraint {
    /// Request names, or `request/subrequest`.
    pub requests: Vec<Sym>,
    /// Fully qualified attribute name; `None` for a constraint of a kind not modelled
    /// (`distinctAttribute`, alpha): upstream's allocator refuses it.
    pub match_attribute: Option<Sym>,
}

/// A claim's `spec.devices`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClaimSpec {
    pub requests: Vec<DeviceRequest>,
    pub constraints: Vec<DeviceConstraint>,
}

/// One allocated device of a claim.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceResult {
    /// The request's name, or `request/subrequest`.
    pub request: Sym,
    pub driver: Sym,
    pub pool: Sym,
    pub device: Sym,
    pub admin_access: bool,
}

/// `status.allocation`.
#[derive(Clone, Debug, PartialEq)]
pub struct AllocationResult {
    pub results: Vec<DeviceResult>,
    pub node_selector: Option<NodeSelector>,
}

/// An entry of `status.reservedFor`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConsumerRef {
    /// `pods` for pods.
    pub resource: Sym,
    pub name: Sym,
    pub uid: Sym,
}

impl ConsumerRef {
    /// The entry that reserves a claim for `pod`.
    pub fn pod(pod: &super::Pod) -> ConsumerRef {
        ConsumerRef { resource: Sym::new("pods"), name: Sym::new(&pod.name), uid: Sym::new(pod.uid.as_str()) }
    }
}

/// Upstream's `ResourceClaimReservedForMaxSize`: a claim in use by this many consumers
/// cannot be reserved for one more.
pub const RESERVED_FOR_MAX_SIZE: usize = 256;

/// `ResourceClaim`.
#[derive(Clone, Debug, PartialEq)]
pub struct ResourceClaim {
    pub namespace: Sym,
    pub name: Sym,
    pub uid: Sym,
    /// The owning pod's uid (controller owner reference of kind Pod): claims made from a
    /// template belong to their pod.
    pub owner_pod: Option<Sym>,
    /// `metadata.deletionTimestamp` is set.
    pub deleting: bool,
    pub spec: Arc<ClaimSpec>,
    pub allocation: Option<AllocationResult>,
    pub reserved_for: Vec<ConsumerRef>,
    /// Labels and annotations (kept for the claims the controller stand-in makes).
    pub labels: Vec<(Sym, Sym)>,
    pub annotations: Vec<(Sym, Sym)>,
}

impl ResourceClaim {
    pub fn new(namespace: &str, name: &str, spec: ClaimSpec) -> ResourceClaim {
        ResourceClaim {
            namespace: Sym::new(namespace),
            name: Sym::new(name),
            uid: Sym::new(&format!("uid-claim-{namespace}-{name}")),
            owner_pod: None,
            deleting: false,
            spec: Arc::new(spec),
            allocation: None,
            reserved_for: Vec::new(),
            labels: Vec::new(),
            annotations: Vec::new(),
        }
    }

    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// Whether one more consumer may reserve it (upstream `CanBeReserved`).
    pub fn can_be_reserved(&self) -> bool {
        self.reserved_for.len() < RESERVED_FOR_MAX_SIZE
    }

    pub fn is_reserved_for(&self, pod_uid: &str) -> bool {
        self.reserved_for.iter().any(|r| r.uid.as_str() == pod_uid)
    }
}

/// `ResourceClaimTemplate`: the spec (and metadata) of the claims made for pods naming it.
#[derive(Clone, Debug, PartialEq)]
pub struct ResourceClaimTemplate {
    pub namespace: Sym,
    pub name: Sym,
    pub labels: Vec<(Sym, Sym)>,
    pub annotations: Vec<(Sym, Sym)>,
    pub spec: Arc<ClaimSpec>,
}

/// An entry of a pod's `spec.resourceClaims`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodResourceClaim {
    pub name: Sym,
    pub source: PodClaimSource,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PodClaimSource {
    /// `resourceClaimName`.
    Claim(Sym),
    /// `resourceClaimTemplateName`: the claim's name is in `status.resourceClaimStatuses`.
    Template(Sym),
}

/// An entry of a pod's `status.resourceClaimStatuses`: the claim generated for a template
/// entry (`None`: none was needed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodClaimStatus {
    pub name: Sym,
    pub claim: Option<Sym>,
}

/// What upstream's `resourceclaim.Name` says of a pod's claim entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClaimName {
    /// The claim's name; `true` when it must be owned by the pod (template claims).
    Named(Sym, bool),
    /// A template entry whose status says no claim was needed.
    NotNeeded,
    /// A template entry without a status entry yet (the controller has not run).
    Pending,
}

/// DRA's cluster objects, published with every snapshot.
#[derive(Clone, Debug, Default)]
pub struct DraObjects {
    pub classes: crate::util::hash::FxHashMap<Sym, Arc<DeviceClass>>,
    /// In insertion order (upstream's informer order is random; order matters only to
    /// choose among pools, see the allocator). Copied on write (`Arc::make_mut`): cluster
    /// objects are cloned whenever the cache edits them after a snapshot took them, and
    /// DynamicResources keeps its device index while these stay the same `Arc`.
    pub slices: Arc<Vec<Arc<ResourceSlice>>>,
    /// By namespace and name; a persistent map, so the copy on write of an edit copies one
    /// shard, not every claim.
    pub claims: crate::util::shard_map::ShardMap<(Sym, Sym), Arc<ResourceClaim>>,
    pub templates: crate::util::hash::FxHashMap<(Sym, Sym), Arc<ResourceClaimTemplate>>,
}

impl DraObjects {
    pub fn is_empty(&self) -> bool {
        self.classes.is_empty() && self.slices.is_empty() && self.claims.is_empty() && self.templates.is_empty()
    }

    pub fn upsert_class(&mut self, c: DeviceClass) {
        self.classes.insert(c.name, Arc::new(c));
    }

    pub fn class(&self, name: Sym) -> Option<&Arc<DeviceClass>> {
        self.classes.get(&name)
    }

    /// Adds a slice or replaces the one with the same name.
    pub fn upsert_slice(&mut self, s: ResourceSlice) {
        let slices = Arc::make_mut(&mut self.slices);
        match slices.iter_mut().find(|x| x.name == s.name) {
            Some(x) => *x = Arc::new(s),
            None => slices.push(Arc::new(s)),
        }
    }

    pub fn remove_slice(&mut self, name: Sym) {
        if self.slices.iter().any(|s| s.name == name) {
            Arc::make_mut(&mut self.slices).retain(|s| s.name != name);
        }
    }

    pub fn upsert_claim(&mut self, c: ResourceClaim) {
        self.claims.insert((c.namespace, c.name), Arc::new(c));
    }

    pub fn claim(&self, namespace: Sym, name: Sym) -> Option<&Arc<ResourceClaim>> {
        self.claims.get(&(namespace, name))
    }

    pub fn remove_claim(&mut self, namespace: Sym, name: Sym) -> Option<Arc<ResourceClaim>> {
        self.claims.remove(&(namespace, name))
    }

    pub fn upsert_template(&mut self, t: ResourceClaimTemplate) {
        self.templates.insert((t.namespace, t.name), Arc::new(t));
    }

    pub fn template(&self, namespace: Sym, name: Sym) -> Option<&Arc<ResourceClaimTemplate>> {
        self.templates.get(&(namespace, name))
    }
}

/// A device by driver, pool and name (upstream's `DeviceID`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DeviceId {
    pub driver: Sym,
    pub pool: Sym,
    pub device: Sym,
}

impl fmt::Display for DeviceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}/{}", self.driver, self.pool, self.device)
    }
}

/// The golden recorder's stand-in name for a template's claim (the golden-extended README):
/// `<pod>-<entry>` cut to 57 characters, then `-` and a 5-character `suffix` (the pod's
/// sequence number). Simulations name claims as upstream does instead
/// ([`upstream_generate_name`] and [`random_suffix`]).
pub fn generated_claim_name(pod: &str, entry: &str, suffix: &str) -> String {
    let mut prefix = format!("{pod}-{entry}");
    if prefix.len() > 57 {
        let mut cut = 57;
        while !prefix.is_char_boundary(cut) {
            cut -= 1;
        }
        prefix.truncate(cut);
    }
    format!("{prefix}-{suffix}")
}

/// The `generateName` upstream's resourceclaim controller gives a template's claim, as the
/// API server then cuts it: `<pod>-<entry>-`; when that is longer than 57 characters, both
/// names are cut in proportion to their lengths and joined by one `-` (no trailing `-`, as
/// upstream's cut leaves it). The API server appends 5 random characters ([`random_suffix`]).
pub fn upstream_generate_name(pod: &str, entry: &str) -> String {
    const MAX_BASE: usize = 57;
    /// The API server's `MaxGeneratedNameLength` (63 - 5).
    const MAX_GENERATED: usize = 58;
    let full = pod.len() + entry.len() + 2;
    let mut base = if full > MAX_BASE {
        let cut = |s: &str| {
            let mut n = s.len() * MAX_BASE / full;
            while !s.is_char_boundary(n) {
                n -= 1;
            }
            s[..n].to_owned()
        };
        format!("{}-{}", cut(pod), cut(entry))
    } else {
        format!("{pod}-{entry}-")
    };
    let mut n = base.len().min(MAX_GENERATED);
    while !base.is_char_boundary(n) {
        n -= 1;
    }
    base.truncate(n);
    base
}

/// The API server's alphabet for `generateName` suffixes (no vowels, no look-alikes).
pub const GENERATE_NAME_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// Five characters of [`GENERATE_NAME_ALPHABET`] drawn from `rng` (what the API server draws
/// at random for a `generateName`).
pub fn random_suffix(rng: &mut crate::util::rng::Rng) -> String {
    let n = GENERATE_NAME_ALPHABET.len() as u64;
    (0..5).map(|_| char::from(GENERATE_NAME_ALPHABET[rng.below(n) as usize])).collect()
}

/// Upstream's pod-claim-name annotation on generated claims.
pub const POD_CLAIM_NAME_ANNOTATION: &str = "resource.kubernetes.io/pod-claim-name";
/// The finalizer DynamicResources PreBind adds to claims it allocates.
pub const DELETE_PROTECTION_FINALIZER: &str = "resource.kubernetes.io/delete-protection";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_attribute_qualifies_with_the_driver() {
        let d = Device::new("gpu-0")
            .attribute("model", AttributeValue::String("h100".into()))
            .attribute("resource.kubernetes.io/pcieRoot", AttributeValue::String("pci-0".into()));
        let gpu = Sym::new("gpu.example.com");
        assert!(d.lookup_attribute(gpu, "gpu.example.com/model").is_some());
        assert!(d.lookup_attribute(gpu, "model").is_some());
        assert!(d.lookup_attribute(gpu, "other.example.com/model").is_none());
        assert!(d.lookup_attribute(gpu, "resource.kubernetes.io/pcieRoot").is_some());
        assert!(d.lookup_attribute(gpu, "gpu.example.com/pcieRoot").is_none());
    }

    #[test]
    fn generated_claim_name_cuts_the_prefix() {
        assert_eq!(generated_claim_name("pod-00010", "gpu", "00010"), "pod-00010-gpu-00010");
        let long = "p".repeat(70);
        let name = generated_claim_name(&long, "gpu", "abcde");
        assert_eq!(name.len(), 57 + 6);
    }

    #[test]
    fn upstream_generate_name_cuts_both_names_in_proportion() {
        assert_eq!(upstream_generate_name("train-7d9f8-x2bqz", "gpus"), "train-7d9f8-x2bqz-gpus-");
        // 40 + 20 + 2 = 62 > 57: 40*57/62 = 36 and 20*57/62 = 18 characters, one `-`.
        let (pod, entry) = ("p".repeat(40), "e".repeat(20));
        let base = upstream_generate_name(&pod, &entry);
        assert_eq!(base, format!("{}-{}", "p".repeat(36), "e".repeat(18)));
        // Exactly 57 with its `-`s is kept whole.
        let pod = "q".repeat(50);
        assert_eq!(upstream_generate_name(&pod, "gpu0"), format!("{pod}-gpu0-"));
        let mut rng = crate::util::rng::Rng::seed(3);
        let s = random_suffix(&mut rng);
        assert_eq!(s.len(), 5);
        assert!(s.bytes().all(|b| GENERATE_NAME_ALPHABET.contains(&b)), "{s}");
        assert_eq!(s, random_suffix(&mut crate::util::rng::Rng::seed(3)), "deterministic per seed");
        assert!(upstream_generate_name(&"x".repeat(300), &"y".repeat(300)).len() <= 58);
    }

    #[test]
    fn cel_selector_compile_errors() {
        assert!(CelSelector::compile("device.driver == \"x\"").is_ok());
        assert!(CelSelector::compile("1 +").unwrap_err().contains("CEL compile error"));
        assert!(CelSelector::compile("  ").is_err());
        assert!(CelSelector::compile(&"a".repeat(CEL_MAX_EXPRESSION_LEN + 1)).unwrap_err().contains("too long"));
        let s = CelSelector::compile(r#"device.attributes["gpu.example.com"].model == "h100""#).unwrap();
        assert_eq!(s.literals.iter().map(|l| &**l).collect::<Vec<_>>(), ["gpu.example.com", "h100"]);
        // Nested loops over long literal lists cost too much.
        let list = format!("[{}]", (0..200).map(|i| i.to_string()).collect::<Vec<_>>().join(","));
        let nested = format!("{list}.all(x, {list}.all(y, {list}.all(z, x + y + z > 0)))");
        assert!(CelSelector::compile(&nested).unwrap_err().contains("estimated cost"));
        assert!(CelSelector::compile(&format!("{list}.all(x, x >= 0)")).is_ok());
    }
}
