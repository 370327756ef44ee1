//! Device use (Dynamic Resource Allocation) as `simulate` and `compare` report it: per driver
//! and per DeviceClass, how many devices are allocated out of how many there are.
//!
//! * **total**: the devices of every pool's newest generation (older slices of a pool are
//!   outdated and ignored, as the allocator ignores them), each device once. Per class: those
//!   of them the class's CEL selectors accept (a selector that fails on a device does not
//!   accept it).
//! * **allocated**: those devices named in a claim's `status.allocation` (admin-access
//!   results, which share a device without taking it, do not count).

use std::collections::{BTreeMap, HashSet};

use ksched_engine::api::dra::{DeviceId, DraObjects};
use ksched_engine::api::Sym;
use ksched_engine::framework::plugins::dynamic_resources::cel::device_matches;
use serde::Serialize;

/// Allocated and total devices of one driver or class.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct DeviceCount {
    pub name: String,
    pub allocated: usize,
    pub total: usize,
}

/// Device use per driver and per DeviceClass, each sorted by name.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct DeviceUse {
    pub drivers: Vec<DeviceCount>,
    pub classes: Vec<DeviceCount>,
}

impl DeviceUse {
    /// Counts the devices of `dra` (see the module's definitions).
    pub fn of(dra: &DraObjects) -> DeviceUse {
        // Each pool's newest generation.
        let mut newest: BTreeMap<(Sym, Sym), i64> = BTreeMap::new();
        for s in dra.slices.iter() {
            let g = newest.entry((s.driver, s.pool)).or_insert(s.generation);
            *g = (*g).max(s.generation);
        }
        let allocated: HashSet<DeviceId> = dra
            .claims
            .values()
            .flat_map(|c| c.allocation.iter().flat_map(|a| a.results.iter()))
            .filter(|r| !r.admin_access)
            .map(|r| DeviceId { driver: r.driver, pool: r.pool, device: r.device })
            .collect();
        let mut seen: HashSet<DeviceId> = HashSet::new();
        let mut drivers: BTreeMap<String, DeviceCount> = BTreeMap::new();
        let mut classes: BTreeMap<String, DeviceCount> = dra
            .classes
            .keys()
            .map(|c| (c.to_string(), DeviceCount { name: c.to_string(), ..DeviceCount::default() }))
            .collect();
        for s in dra.slices.iter().filter(|s| newest.get(&(s.driver, s.pool)) == Some(&s.generation)) {
            for d in &s.devices {
                let id = DeviceId { driver: s.driver, pool: s.pool, device: d.name };
                if !seen.insert(id) {
                    continue;
                }
                let used = usize::from(allocated.contains(&id));
                let count = |c: &mut DeviceCount| {
                    c.total += 1;
                    c.allocated += used;
                };
                count(
                    drivers
                        .entry(s.driver.to_string())
                        .or_insert_with(|| DeviceCount { name: s.driver.to_string(), ..DeviceCount::default() }),
                );
                for (name, class) in &dra.classes {
                    if class.selectors.iter().all(|sel| device_matches(sel, s.driver, d) == Ok(true)) {
                        if let Some(c) = classes.get_mut(name.as_str()) {
                            count(c);
                        }
                    }
                }
            }
        }
        DeviceUse { drivers: drivers.into_values().collect(), classes: classes.into_values().collect() }
    }

    pub fn is_empty(&self) -> bool {
        self.drivers.is_empty() && self.classes.is_empty()
    }

    /// One line: `driver gpu.example.com 6/32; class a100 2/16, h100 4/16`.
    pub fn line(&self) -> String {
        let list = |v: &[DeviceCount]| {
            v.iter().map(|c| format!("{} {}/{}", c.name, c.allocated, c.total)).collect::<Vec<_>>().join(", ")
        };
        let mut parts = Vec::new();
        if !self.drivers.is_empty() {
            parts.push(format!("driver {}", list(&self.drivers)));
        }
        if !self.classes.is_empty() {
            parts.push(format!("class {}", list(&self.classes)));
        }
        parts.join("; ")
    }
}

#[cfg(test)]
mod tests {
    use ksched_engine::api::dra::{
        AllocationResult, AttributeValue, CelSelector, ClaimSpec, Device, DeviceClass, DeviceResult, ResourceClaim,
        ResourceSlice, SliceNodes,
    };

    use super::*;

    fn slice(name: &str, pool: &str, generation: i64, models: &[&str]) -> ResourceSlice {
        ResourceSlice {
            name: Sym::new(name),
            driver: Sym::new("gpu.example.com"),
            pool: Sym::new(pool),
            generation,
            resource_slice_count: 1,
            nodes: SliceNodes::Node(Sym::new(pool)),
            devices: models
                .iter()
                .enumerate()
                .map(|(i, m)| Device::new(&format!("gpu-{i}")).attribute("model", AttributeValue::String((*m).into())))
                .collect(),
        }
    }

    fn class(model: &str) -> DeviceClass {
        let expr = format!(r#"device.attributes["gpu.example.com"].model == "{model}""#);
        DeviceClass { name: Sym::new(model), selectors: vec![CelSelector::compile(&expr).unwrap()] }
    }

    fn claim(name: &str, devices: &[(&str, &str)], admin: bool) -> ResourceClaim {
        let mut c = ResourceClaim::new("default", name, ClaimSpec::default());
        c.allocation = Some(AllocationResult {
            results: devices
                .iter()
                .map(|(pool, d)| DeviceResult {
                    request: Sym::new("r"),
                    driver: Sym::new("gpu.example.com"),
                    pool: Sym::new(pool),
                    device: Sym::new(d),
                    admin_access: admin,
                })
                .collect(),
            node_selector: None,
        });
        c
    }

    #[test]
    fn device_use_counts_newest_generations_and_allocations() {
        let mut dra = DraObjects::default();
        dra.upsert_class(class("a100"));
        dra.upsert_class(class("h100"));
        dra.upsert_class(class("b200")); // selects nothing: listed with 0/0
        dra.upsert_slice(slice("n1-old", "n1", 1, &["h100"; 8])); // outdated: not counted
        dra.upsert_slice(slice("n1", "n1", 2, &["a100", "a100", "h100", "h100"]));
        dra.upsert_slice(slice("n2", "n2", 1, &["h100"; 4]));
        dra.upsert_claim(claim("c1", &[("n1", "gpu-0"), ("n2", "gpu-3")], false));
        dra.upsert_claim(claim("watch", &[("n1", "gpu-1")], true)); // admin access: not taken
        dra.upsert_claim(claim("gone", &[("n9", "gpu-0")], false)); // no such device now
        let u = DeviceUse::of(&dra);
        let count = |name: &str, allocated, total| DeviceCount { name: name.into(), allocated, total };
        assert_eq!(u.drivers, [count("gpu.example.com", 2, 8)]);
        assert_eq!(u.classes, [count("a100", 1, 2), count("b200", 0, 0), count("h100", 1, 6)]);
        assert_eq!(u.line(), "driver gpu.example.com 2/8; class a100 1/2, b200 0/0, h100 1/6");
        assert!(DeviceUse::of(&DraObjects::default()).is_empty());
    }
}
