//! Resource quantities in the units kube-scheduler uses: CPU in millicores, memory and
//! ephemeral storage in bytes, pods as a count, and scalar (extended) resources by name.

use std::fmt;

use super::intern::Sym;
use crate::util::copy_vec::CopyVec;

/// A resource name: the four built-ins, or a scalar resource (`nvidia.com/gpu`, hugepages...).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ResourceName {
    Cpu,
    Memory,
    EphemeralStorage,
    Pods,
    Scalar(Sym),
}

impl ResourceName {
    /// Maps a Kubernetes resource name to ours.
    pub fn parse(name: &str) -> ResourceName {
        match name {
            "cpu" => ResourceName::Cpu,
            "memory" => ResourceName::Memory,
            "ephemeral-storage" => ResourceName::EphemeralStorage,
            "pods" => ResourceName::Pods,
            other => ResourceName::Scalar(Sym::new(other)),
        }
    }
}

impl fmt::Display for ResourceName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ResourceName::Cpu => f.write_str("cpu"),
            ResourceName::Memory => f.write_str("memory"),
            ResourceName::EphemeralStorage => f.write_str("ephemeral-storage"),
            ResourceName::Pods => f.write_str("pods"),
            ResourceName::Scalar(s) => f.write_str(s.as_str()),
        }
    }
}

/// Scalar resources, sorted by name; most pods and nodes have none or one or two.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Scalars(CopyVec<[(Sym, i64); 2]>);

// By hand: a derived `clone_from` would not reuse the buffer (nor skip the empty case).
impl Clone for Scalars {
    fn clone(&self) -> Self {
        Scalars(self.0.clone())
    }

    #[inline]
    fn clone_from(&mut self, source: &Self) {
        self.0.clone_from(&source.0);
    }
}

impl Scalars {
    pub fn get(&self, name: Sym) -> i64 {
        match self.0.binary_search_by_key(&name, |&(n, _)| n) {
            Ok(i) => self.0[i].1,
            Err(_) => 0,
        }
    }

    fn entry(&mut self, name: Sym) -> &mut i64 {
        let i = match self.0.binary_search_by_key(&name, |&(n, _)| n) {
            Ok(i) => i,
            Err(i) => {
                self.0.insert(i, (name, 0));
                i
            }
        };
        &mut self.0[i].1
    }

    pub fn iter(&self) -> impl Iterator<Item = (Sym, i64)> + '_ {
        self.0.iter().copied()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Drops entries that went to zero so equal totals compare equal.
    fn compact(&mut self) {
        self.0.retain(|&mut (_, v)| v != 0);
    }
}

/// A set of resource amounts.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Resource {
    pub milli_cpu: i64,
    pub memory: i64,
    pub ephemeral_storage: i64,
    /// Pod count: on a node's allocatable, how many pods fit.
    pub allowed_pod_number: i64,
    pub scalar: Scalars,
}

impl Clone for Resource {
    fn clone(&self) -> Self {
        Resource { scalar: self.scalar.clone(), ..*self }
    }

    /// Field by field, so the scalar list keeps its buffer (a derived `clone_from` would not).
    fn clone_from(&mut self, source: &Self) {
        self.milli_cpu = source.milli_cpu;
        self.memory = source.memory;
        self.ephemeral_storage = source.ephemeral_storage;
        self.allowed_pod_number = source.allowed_pod_number;
        self.scalar.clone_from(&source.scalar);
    }
}

impl Resource {
    pub fn get(&self, name: ResourceName) -> i64 {
        match name {
            ResourceName::Cpu => self.milli_cpu,
            ResourceName::Memory => self.memory,
            ResourceName::EphemeralStorage => self.ephemeral_storage,
            ResourceName::Pods => self.allowed_pod_number,
            ResourceName::Scalar(s) => self.scalar.get(s),
        }
    }

    pub fn set(&mut self, name: ResourceName, value: i64) {
        match name {
            ResourceName::Cpu => self.milli_cpu = value,
            ResourceName::Memory => self.memory = value,
            ResourceName::EphemeralStorage => self.ephemeral_storage = value,
            ResourceName::Pods => self.allowed_pod_number = value,
            ResourceName::Scalar(s) => {
                *self.scalar.entry(s) = value;
                self.scalar.compact();
            }
        }
    }

    /// Builder-style `set`.
    pub fn with(mut self, name: ResourceName, value: i64) -> Self {
        self.set(name, value);
        self
    }

    pub fn add(&mut self, other: &Resource) {
        self.milli_cpu += other.milli_cpu;
        self.memory += other.memory;
        self.ephemeral_storage += other.ephemeral_storage;
        self.allowed_pod_number += other.allowed_pod_number;
        if !other.scalar.is_empty() {
            for (name, v) in other.scalar.iter() {
                *self.scalar.entry(name) += v;
            }
            self.scalar.compact();
        }
    }

    pub fn sub(&mut self, other: &Resource) {
        self.milli_cpu -= other.milli_cpu;
        self.memory -= other.memory;
        self.ephemeral_storage -= other.ephemeral_storage;
        self.allowed_pod_number -= other.allowed_pod_number;
        if !other.scalar.is_empty() {
            for (name, v) in other.scalar.iter() {
                *self.scalar.entry(name) -= v;
            }
            self.scalar.compact();
        }
    }

    /// Per resource, the larger of the two.
    pub fn set_max(&mut self, other: &Resource) {
        self.milli_cpu = self.milli_cpu.max(other.milli_cpu);
        self.memory = self.memory.max(other.memory);
        self.ephemeral_storage = self.ephemeral_storage.max(other.ephemeral_storage);
        self.allowed_pod_number = self.allowed_pod_number.max(other.allowed_pod_number);
        for (name, v) in other.scalar.iter() {
            let e = self.scalar.entry(name);
            *e = (*e).max(v);
        }
        self.scalar.compact();
    }

    /// True when no resource is requested (a best-effort pod's requests).
    pub fn is_zero(&self) -> bool {
        self.milli_cpu == 0
            && self.memory == 0
            && self.ephemeral_storage == 0
            && self.allowed_pod_number == 0
            && self.scalar.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clone_from_copies_every_field_whatever_the_lengths() {
        let gpu = ResourceName::Scalar(Sym::new("nvidia.com/gpu"));
        let fpga = ResourceName::Scalar(Sym::new("example.com/fpga"));
        let none = Resource::default().with(ResourceName::Cpu, 7);
        let one = Resource::default().with(ResourceName::Memory, 5).with(gpu, 1);
        let two = Resource::default().with(ResourceName::Pods, 3).with(gpu, 2).with(fpga, 4);
        for source in [&none, &one, &two] {
            for start in [&none, &one, &two] {
                let mut r = start.clone();
                r.clone_from(source);
                assert_eq!(&r, source, "{start:?} <- {source:?}");
                assert_eq!(&r.clone(), source);
            }
        }
    }

    #[test]
    fn resource_add_sub_roundtrip_keeps_scalars_compact() {
        let gpu = ResourceName::Scalar(Sym::new("nvidia.com/gpu"));
        let a = Resource::default().with(ResourceName::Cpu, 100).with(gpu, 2);
        let mut total = Resource::default();
        total.add(&a);
        total.add(&a);
        assert_eq!(total.get(gpu), 4);
        total.sub(&a);
        total.sub(&a);
        assert_eq!(total, Resource::default());
    }

    #[test]
    fn resource_set_max_per_resource() {
        let mut a = Resource::default().with(ResourceName::Cpu, 100).with(ResourceName::Memory, 5);
        a.set_max(&Resource::default().with(ResourceName::Cpu, 50).with(ResourceName::Memory, 9));
        assert_eq!((a.milli_cpu, a.memory), (100, 9));
    }
}
