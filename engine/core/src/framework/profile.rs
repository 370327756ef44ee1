//! A profile: which plugins run at each extension point, score weights, and the sampling
//! and parallelism settings (one `KubeSchedulerProfile`). The framework constructs no plugin:
//! the default plugin set is declared, and `Profile::default_profile` built, in the config
//! registry (`config/registry.rs`).

use std::sync::Arc;

use super::extender::Extender;
use super::pick::TieBreak;
use super::score_memo::ScoreMemo;
use super::{
    BindPlugin, FilterPlugin, PostFilterPlugin, PreBindPlugin, PreEnqueuePlugin, PreFilterPlugin, PreScorePlugin,
    ReservePlugin, ScorePlugin,
};

/// The default scheduler name, given to a lone profile without one (the config reads it
/// from here: the framework names no config item).
pub const DEFAULT_SCHEDULER_NAME: &str = "default-scheduler";

/// A score plugin with its weight.
#[derive(Clone)]
pub struct WeightedScore {
    pub plugin: Arc<dyn ScorePlugin>,
    pub weight: i64,
}

#[derive(Clone)]
pub struct Profile {
    pub scheduler_name: String,
    /// Run by the queue, not the cycle (`PreEnqueuePlugin`).
    pub pre_enqueue: Vec<Arc<dyn PreEnqueuePlugin>>,
    pub pre_filter: Vec<Arc<dyn PreFilterPlugin>>,
    pub filter: Vec<Arc<dyn FilterPlugin>>,
    pub post_filter: Vec<Arc<dyn PostFilterPlugin>>,
    pub pre_score: Vec<Arc<dyn PreScorePlugin>>,
    pub score: Vec<WeightedScore>,
    pub reserve: Vec<Arc<dyn ReservePlugin>>,
    pub pre_bind: Vec<Arc<dyn PreBindPlugin>>,
    /// Empty: the scheduler's cluster `Binder` binds (upstream's DefaultBinder).
    pub bind: Vec<Arc<dyn BindPlugin>>,
    /// `None` or `Some(0)`: adaptive (50% − nodes/125, at least 5%).
    pub percentage_of_nodes_to_score: Option<u32>,
    /// Filter workers, the caller included (1 = sequential).
    pub parallelism: usize,
    /// How a cycle picks among nodes tied at the highest total: upstream's heap root by
    /// default, or a seeded uniform draw (`TieBreak`). Not part of upstream's configuration.
    pub tie_break: TieBreak,
    /// The configuration's extenders (upstream's are shared by every profile), in order.
    pub extenders: Vec<Arc<dyn Extender>>,
    /// Column scores kept from cycle to cycle (`ScorePlugin::memo_key`).
    pub score_memo: ScoreMemo,
}

impl Profile {
    /// How many feasible nodes a cycle's search over `nodes` nodes looks for: one when
    /// nothing scores and no extender filters or prioritizes (any fits), else upstream's
    /// numFeasibleNodesToFind.
    pub fn nodes_to_find(&self, nodes: usize) -> usize {
        if self.score.is_empty() && !self.extenders.iter().any(|e| e.is_filter() || e.is_prioritizer()) {
            1
        } else {
            crate::parallel::num_feasible_nodes_to_find(self.percentage_of_nodes_to_score, nodes)
        }
    }

    /// The plugins whose verdicts and scores a pod's signature covers (upstream's PreFilter,
    /// Filter, PreScore and Score points), a plugin once per point it runs at.
    pub fn signing_plugins(&self) -> impl Iterator<Item = &dyn super::Plugin> + '_ {
        let pre_filter = self.pre_filter.iter().map(|p| &**p as &dyn super::Plugin);
        let filter = self.filter.iter().map(|p| &**p as &dyn super::Plugin);
        let pre_score = self.pre_score.iter().map(|p| &**p as &dyn super::Plugin);
        let score = self.score.iter().map(|w| &*w.plugin as &dyn super::Plugin);
        pre_filter.chain(filter).chain(pre_score).chain(score)
    }

    /// Whether this profile signs pods, so that OpportunisticBatching can batch them: no
    /// extender, and every plugin of the signed points signs pods (`Plugin::signs_pods`).
    pub fn signs_pods(&self) -> bool {
        self.extenders.is_empty() && self.signing_plugins().all(|p| p.signs_pods())
    }

    /// An empty profile (no plugins): every node fits and scores 0.
    pub fn empty(name: &str) -> Profile {
        Profile {
            scheduler_name: name.to_owned(),
            pre_enqueue: Vec::new(),
            pre_filter: Vec::new(),
            filter: Vec::new(),
            post_filter: Vec::new(),
            pre_score: Vec::new(),
            score: Vec::new(),
            reserve: Vec::new(),
            pre_bind: Vec::new(),
            bind: Vec::new(),
            percentage_of_nodes_to_score: None,
            parallelism: 1,
            tie_break: TieBreak::Upstream,
            extenders: Vec::new(),
            score_memo: ScoreMemo::default(),
        }
    }
}

/// Every profile of one scheduler (upstream runs all of a configuration's profiles in one
/// scheduler, over one queue): at least one, with distinct scheduler names. A pod is scheduled
/// by the profile its `spec.schedulerName` names; a pod naming none of them is not this
/// scheduler's.
#[derive(Clone)]
pub struct Profiles(Vec<Profile>);

impl Profiles {
    /// The profiles in configuration order; `None` when `profiles` is empty.
    pub fn new(profiles: Vec<Profile>) -> Option<Profiles> {
        (!profiles.is_empty()).then_some(Profiles(profiles))
    }

    pub fn iter(&self) -> std::slice::Iter<'_, Profile> {
        self.0.iter()
    }

    pub fn iter_mut(&mut self) -> std::slice::IterMut<'_, Profile> {
        self.0.iter_mut()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Never true (kept for clippy's `len_without_is_empty`).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The profile named `scheduler_name`.
    pub fn get(&self, scheduler_name: &str) -> Option<&Profile> {
        self.0.iter().find(|p| p.scheduler_name == scheduler_name)
    }

    /// Whether a pod with this `spec.schedulerName` is scheduled by one of the profiles.
    pub fn responsible_for(&self, scheduler_name: &str) -> bool {
        self.get(scheduler_name).is_some()
    }

    /// The `default-scheduler` profile, or the first.
    pub fn primary(&self) -> &Profile {
        self.get(DEFAULT_SCHEDULER_NAME).unwrap_or(&self.0[0])
    }

    /// The scheduler names, in configuration order.
    pub fn names(&self) -> Vec<&str> {
        self.0.iter().map(|p| p.scheduler_name.as_str()).collect()
    }

    pub fn into_vec(self) -> Vec<Profile> {
        self.0
    }
}

impl From<Profile> for Profiles {
    fn from(p: Profile) -> Profiles {
        Profiles(vec![p])
    }
}

impl std::fmt::Debug for Profiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}
