//! The PreEnqueue plugins of every profile, by scheduler name, as the queue runs them
//! (upstream's preEnqueuePluginMap): which plugin holds a pod back, and which events may let
//! it go.

use std::sync::Arc;

use super::events::{ClusterEvent, Event};
use super::{ClusterView, PreEnqueuePlugin, Profile, Status};
use crate::api::{Pod, Sym};
use crate::util::hash::FxHashMap;

struct Entry {
    plugin: Arc<dyn PreEnqueuePlugin>,
    events: Vec<ClusterEvent>,
}

/// Every profile's PreEnqueue plugins with the events each registered (see
/// `PreEnqueuePlugin` for how the queue uses them).
#[derive(Clone, Default)]
pub struct PreEnqueuePlugins {
    by_scheduler: FxHashMap<Sym, Arc<[Entry]>>,
}

impl PreEnqueuePlugins {
    /// Adds a profile's plugins under its scheduler name.
    pub fn add_profile(&mut self, profile: &Profile) {
        let entries: Vec<Entry> = profile
            .pre_enqueue
            .iter()
            .map(|p| Entry { plugin: Arc::clone(p), events: p.events_to_register() })
            .collect();
        self.by_scheduler.insert(Sym::new(&profile.scheduler_name), entries.into());
    }

    pub fn is_empty(&self) -> bool {
        self.by_scheduler.values().all(|e| e.is_empty())
    }

    /// Runs the plugins of `pod`'s scheduler, the one named `first` (the plugin that gated it
    /// last) first, each reading `cluster`: `None` when every one lets it in, else the first
    /// rejection (its `plugin` set). A pod of a scheduler without PreEnqueue plugins always
    /// passes.
    pub fn run(&self, pod: &Pod, first: Option<&'static str>, cluster: ClusterView<'_>) -> Option<Status> {
        let entries = self.by_scheduler.get(&pod.scheduler_name)?;
        let ordered = entries
            .iter()
            .filter(|e| Some(e.plugin.name()) == first)
            .chain(entries.iter().filter(|e| Some(e.plugin.name()) != first));
        for e in ordered {
            let st = e.plugin.pre_enqueue(pod, cluster);
            if !st.is_success() {
                return Some(st.with_plugin(e.plugin.name()));
            }
        }
        None
    }

    /// Whether `event` is one `plugin` (a PreEnqueue plugin of `pod`'s scheduler) registered
    /// for: the only events that may move a pod it gated. A wildcard event is not, unless the
    /// plugin registered the wildcard itself.
    pub fn registered_for(&self, pod: &Pod, plugin: &str, event: &Event) -> bool {
        let Some(entries) = self.by_scheduler.get(&pod.scheduler_name) else { return false };
        entries
            .iter()
            .filter(|e| e.plugin.name() == plugin)
            .flat_map(|e| e.events.iter())
            .any(|r| r.is_wildcard() || (!event.kind.is_wildcard() && r.covers(&event.kind)))
    }
}

impl std::fmt::Debug for PreEnqueuePlugins {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut m = f.debug_map();
        for (k, entries) in &self.by_scheduler {
            let v: Vec<&str> = entries.iter().map(|e| e.plugin.name()).collect();
            m.entry(k, &v);
        }
        m.finish()
    }
}
