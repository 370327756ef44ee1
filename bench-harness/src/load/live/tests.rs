use std::sync::Arc;

use super::*;
use crate::load::{LoadSim, Loaded};
use ksched_engine::framework::Profile;
use ksched_engine::queue::QueueConfig;
use ksched_k8s::manifest::Manifests;
use ksched_sim::simulation::{RunOptions, Until};

/// Nodes with room for `per_node` pods of 1 CPU each.
fn nodes(n: usize, per_node: u32) -> String {
    (0..n)
        .map(|i| {
            format!(
                "apiVersion: v1\nkind: Node\nmetadata: {{name: n{i}, labels: {{topology.kubernetes.io/zone: z{}}}}}\n\
                 status: {{allocatable: {{cpu: '{per_node}', memory: 64Gi, pods: '110'}}}}\n---\n",
                i % 2
            )
        })
        .collect()
}

struct Run {
    loaded: Loaded,
    watch: PodWatch,
    start: Timestamp,
}

fn load(text: &str) -> Run {
    let mut m = Manifests::new();
    m.read_str("f.yaml", text).unwrap_or_else(|e| panic!("{e}"));
    let loaded = m.load_full(Profile::default_profile(), QueueConfig::new(), 3).unwrap_or_else(|e| panic!("{e}"));
    let watch = loaded.sim.cluster.watch_pods();
    let start = loaded.sim.clock.now();
    Run { loaded, watch, start }
}

/// One pod's life as the events tell it: created, bound (its node), gone.
#[derive(Clone, Debug, Default)]
struct Life {
    name: String,
    created: Option<u64>,
    gone: Option<(u64, PodExit)>,
    terminating: Option<u64>,
}

impl Run {
    fn run_for(&mut self, secs: u64) {
        let until = Until::Time(self.start.saturating_add(Duration::from_secs(secs)));
        let sim = &mut self.loaded.sim;
        sim.run(until, &RunOptions::default(), &mut [&mut self.loaded.controllers], &mut [])
            .unwrap_or_else(|e| panic!("{e}"));
    }

    fn secs(&self, t: Timestamp) -> u64 {
        t.saturating_since(self.start).as_secs()
    }

    /// Every pod's life since the watch started, in order of first sight.
    fn lives(&mut self) -> Vec<Life> {
        let events = self.loaded.sim.cluster.pod_events(&mut self.watch);
        let mut out: Vec<Life> = Vec::new();
        let at = |out: &mut Vec<Life>, p: &Pod| -> usize {
            match out.iter().position(|l| l.name == *p.name && l.gone.is_none()) {
                Some(i) => i,
                None => {
                    out.push(Life { name: p.name.to_string(), ..Life::default() });
                    out.len() - 1
                }
            }
        };
        for e in events {
            match e {
                PodEvent::Created { pod, at: t } => {
                    let i = at(&mut out, &pod);
                    out[i].created = Some(self.secs(t));
                }
                PodEvent::Terminating(g) => {
                    let i = at(&mut out, &g.pod);
                    out[i].terminating = Some(self.secs(g.at));
                }
                PodEvent::Gone(g) => {
                    let i = at(&mut out, &g.pod);
                    out[i].gone = Some((self.secs(g.at), g.exit));
                }
            }
        }
        out
    }

    fn manager(&self) -> &ControllerManager {
        &self.loaded.controllers.manager
    }
}

/// The most pods of `lives` active (created, not marked for deletion nor gone) at once; the
/// ones present before the watch count from 0.
fn most_at_once(lives: &[Life]) -> usize {
    let mut points: Vec<(u64, i32)> = Vec::new();
    for l in lives {
        points.push((l.created.unwrap_or(0), 1));
        if let Some(t) = l.terminating.or(l.gone.map(|g| g.0)) {
            points.push((t, -1));
        }
    }
    // Ends before starts at the same instant.
    points.sort();
    let (mut now, mut most) = (0i32, 0i32);
    for (_, d) in points {
        now += d;
        most = most.max(now);
    }
    most as usize
}

const POD: &str = "containers: [{name: c, image: busybox, resources: {requests: {cpu: '1'}}}]";

#[test]
fn live_job_of_ten_completions_runs_three_at_a_time() {
    let job = format!(
        "apiVersion: batch/v1\nkind: Job\nmetadata: {{name: batch}}\nspec: {{completions: 10, parallelism: 3, template: \
         {{metadata: {{annotations: {{ksched.io/run-duration: 60s}}}}, spec: {{restartPolicy: Never, {POD}}}}}}}\n"
    );
    let mut r = load(&(nodes(2, 8) + &job));
    r.run_for(3600);
    let lives = r.lives();
    // The first three were created when loading, before the watch: 7 more.
    let made: Vec<u64> = lives.iter().filter_map(|l| l.created).collect();
    assert_eq!(made, [60, 60, 60, 120, 120, 120, 180], "{lives:?}");
    let ends: Vec<u64> = lives.iter().filter_map(|l| l.gone.map(|g| g.0)).collect();
    assert_eq!(ends, [60, 60, 60, 120, 120, 120, 180, 180, 180, 240], "{lives:?}");
    assert!(lives.iter().all(|l| l.gone.is_some_and(|g| g.1 == PodExit::Succeeded)));
    assert_eq!(most_at_once(&lives), 3, "never more than parallelism");
    let st = r.manager().stats();
    assert_eq!((st.pods_created, st.jobs_completed, st.jobs_failed), (7, 1, 0));
    assert!(r.manager().notes().is_empty(), "{:?}", r.manager().notes());
}

#[test]
fn live_indexed_job_completes_every_index_once() {
    let job = format!(
        "apiVersion: batch/v1\nkind: Job\nmetadata: {{name: ix}}\nspec: {{completions: 5, parallelism: 2, completionMode: Indexed, \
         template: {{metadata: {{annotations: {{ksched.io/run-duration: 30s}}}}, spec: {{restartPolicy: Never, {POD}}}}}}}\n"
    );
    let mut r = load(&(nodes(1, 8) + &job));
    r.run_for(600);
    let lives = r.lives();
    let mut indexes: Vec<String> = lives.iter().map(|l| l.name.split('-').nth(1).unwrap().to_owned()).collect();
    indexes.sort();
    assert_eq!(indexes, ["0", "1", "2", "3", "4"], "{lives:?}");
    assert_eq!(most_at_once(&lives), 2);
    assert_eq!(r.manager().stats().jobs_completed, 1);
}

#[test]
fn live_job_fails_after_its_backoff_limit_with_growing_delays() {
    // Each pod hits its deadline after 10 s; backoffLimit 2: the third failure fails the Job.
    let job = format!(
        "apiVersion: batch/v1\nkind: Job\nmetadata: {{name: flaky}}\nspec: {{backoffLimit: 2, template: \
         {{spec: {{restartPolicy: Never, activeDeadlineSeconds: 10, {POD}}}}}}}\n"
    );
    let mut r = load(&(nodes(1, 8) + &job));
    r.run_for(3600);
    let lives = r.lives();
    let created: Vec<u64> = lives.iter().filter_map(|l| l.created).collect();
    // Fails at 10; retried 10 s later (20), fails at 30; retried 20 s later (50), fails at 60.
    assert_eq!(created, [20, 50], "{lives:?}");
    assert!(lives.iter().all(|l| l.gone.is_some_and(|g| g.1 == PodExit::DeadlineExceeded)));
    let st = r.manager().stats();
    assert_eq!((st.jobs_completed, st.jobs_failed), (0, 1));
}

#[test]
fn live_job_without_lifetimes_says_its_pods_never_end() {
    let job = format!("apiVersion: batch/v1\nkind: Job\nmetadata: {{name: forever}}\nspec: {{template: {{spec: {{restartPolicy: Never, {POD}}}}}}}\n");
    let mut r = load(&(nodes(1, 8) + &job));
    r.run_for(600);
    assert!(r.lives().is_empty());
    assert!(r.manager().notes()[0].contains("never end"), "{:?}", r.manager().notes());
}

/// A CronJob with `spec` fields, whose Jobs run one pod for `run`.
fn cron(spec: &str, run: &str) -> String {
    format!(
        "apiVersion: batch/v1\nkind: CronJob\nmetadata: {{name: report}}\nspec: {{{spec}, jobTemplate: {{spec: {{template: \
         {{metadata: {{annotations: {{ksched.io/run-duration: {run}}}}}, spec: {{restartPolicy: Never, {POD}}}}}}}}}}}\n"
    )
}

#[test]
fn live_cronjob_fires_over_a_simulated_day() {
    // Every 6 hours in Tokyo (UTC+9): 15:00, 21:00, 03:00 and 09:00 UTC after a start at
    // midnight UTC; each Job's pod runs 30 minutes.
    let mut r = load(&(nodes(1, 8) + &cron("schedule: '0 */6 * * *', timeZone: Asia/Tokyo", "30m")));
    r.run_for(24 * 3600);
    let lives = r.lives();
    let hours: Vec<f64> = lives.iter().filter_map(|l| l.created).map(|s| s as f64 / 3600.0).collect();
    assert_eq!(hours, [3.0, 9.0, 15.0, 21.0], "{lives:?}");
    for l in &lives {
        let (c, (g, exit)) = (l.created.unwrap(), l.gone.unwrap());
        assert_eq!((g - c, exit), (1800, PodExit::Succeeded), "{l:?}");
        // Jobs are named by their scheduled minute since the epoch.
        let minute = (default_start().as_second() as u64 + c) / 60;
        assert!(l.name.starts_with(&format!("report-{minute}-")), "{}", l.name);
    }
    let st = r.manager().stats();
    assert_eq!((st.jobs_created, st.jobs_completed, st.pods_created), (4, 4, 4));
}

#[test]
fn live_cronjob_concurrency_policies() {
    // Every 10 minutes, Jobs of 25 minutes, over 2 hours.
    // (spec, want creation minutes, want most Jobs at once, want skipped times)
    let cases: [(&str, &[u64], usize, u64); 5] = [
        ("concurrencyPolicy: Allow", &[10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120], 3, 0),
        // A time held back starts when the running Job ends (late), then the next on time.
        ("concurrencyPolicy: Forbid", &[10, 35, 60, 85, 110], 1, 6),
        // Each time replaces the running Job.
        ("concurrencyPolicy: Replace", &[10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120], 1, 0),
        // A held time older than 60 s when the Job ends is dropped: the next time starts on time.
        ("concurrencyPolicy: Forbid, startingDeadlineSeconds: 60", &[10, 40, 70, 100], 1, 6),
        ("suspend: true", &[], 0, 0),
    ];
    for (policy, want, most, skipped) in cases {
        let mut r = load(&(nodes(1, 8) + &cron(&format!("schedule: '*/10 * * * *', {policy}"), "25m")));
        r.run_for(2 * 3600 + 1);
        let lives = r.lives();
        let minutes: Vec<u64> = lives.iter().filter_map(|l| l.created).map(|s| s / 60).collect();
        assert_eq!(minutes, want, "{policy}: {lives:?}");
        assert_eq!(most_at_once(&lives), most, "{policy}");
        assert_eq!(r.manager().stats().cron_skipped, skipped, "{policy}");
        if policy.contains("Replace") {
            assert!(lives.iter().filter_map(|l| l.gone).filter(|g| g.1 == PodExit::Deleted).count() >= 10, "{policy}");
        }
    }
}

#[test]
fn live_cronjob_refuses_a_bad_schedule_naming_the_field() {
    let mut m = Manifests::new();
    m.read_str("c.yaml", &cron("schedule: 'every day'", "1m")).unwrap();
    let err = m.load_full(Profile::default_profile(), QueueConfig::new(), 1).err().unwrap().to_string();
    assert!(err.starts_with("c.yaml: document 1") && err.contains("cronjob default/report: spec.schedule"), "{err}");
    let mut m = Manifests::new();
    m.read_str("c.yaml", &cron("schedule: '@daily', timeZone: Nowhere/Town", "1m")).unwrap();
    let err = m.load_full(Profile::default_profile(), QueueConfig::new(), 1).err().unwrap().to_string();
    assert!(err.contains("spec.timeZone") && err.contains("unknown time zone"), "{err}");
}

#[test]
fn live_replicaset_replaces_pods_that_end_and_scales() {
    let rs = format!(
        "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {{name: web}}\nspec: {{replicas: 3, selector: {{matchLabels: {{app: web}}}}, \
         template: {{metadata: {{labels: {{app: web}}, annotations: {{ksched.io/run-duration: 100s}}}}, spec: {{{POD}}}}}}}\n"
    );
    let mut r = load(&(nodes(1, 8) + &rs));
    assert!(r.manager().recurs(), "pods that end and come back: a run must be bounded");
    r.run_for(350);
    let lives = r.lives();
    let made: Vec<u64> = lives.iter().filter_map(|l| l.created).collect();
    assert_eq!(made, [100, 100, 100, 200, 200, 200, 300, 300, 300], "{lives:?}");
    assert_eq!(most_at_once(&lives), 3);
    // Scaled to 1: two are deleted (terminating for their 30 s grace period).
    let sim = &mut r.loaded.sim;
    r.loaded.controllers.manager.scale(sim, "rs", "default", "web", 1).unwrap();
    let running = r.loaded.sim.cache.pods().into_iter().filter(|(p, _)| !p.is_terminating()).count();
    assert_eq!(running, 1);
    let err = r.loaded.controllers.manager.scale(&mut r.loaded.sim, "deploy", "default", "web", 1).unwrap_err();
    assert!(err.contains("no such controller"), "{err}");
}

#[test]
fn live_deployment_scale_goes_through_its_replicaset_and_deletions_are_replaced_at_once() {
    let d = format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: api}}\nspec: {{replicas: 2, selector: {{matchLabels: {{app: api}}}}, \
         template: {{metadata: {{labels: {{app: api}}}}, spec: {{terminationGracePeriodSeconds: 30, {POD}}}}}}}\n"
    );
    let mut r = load(&(nodes(1, 8) + &d));
    r.run_for(1);
    let sim = &mut r.loaded.sim;
    r.loaded.controllers.manager.scale(sim, "Deployment", "default", "api", 4).unwrap();
    r.run_for(2);
    assert_eq!(r.loaded.sim.cache.pods().len(), 4);
    // A deleted pod (30 s grace) is replaced as soon as it is marked for deletion.
    let victim = r.loaded.sim.cache.pods()[0].0.clone();
    r.loaded.sim.cluster.delete_pod(&victim, None, PodExit::Deleted);
    r.run_for(3);
    let lives = r.lives();
    let replaced = lives.iter().filter(|l| l.created == Some(2)).count();
    assert_eq!(replaced, 1, "{lives:?}");
    assert_eq!(r.loaded.sim.cache.pods().len(), 5, "the victim still holds its node while terminating");
    r.run_for(40);
    assert_eq!(r.loaded.sim.cache.pods().len(), 4);
}

#[test]
fn live_statefulset_recreates_a_pod_under_its_name_once_gone() {
    let s = format!(
        "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {{name: db}}\nspec: {{replicas: 2, selector: {{matchLabels: {{app: db}}}}, \
         template: {{metadata: {{labels: {{app: db}}}}, spec: {{terminationGracePeriodSeconds: 20, {POD}}}}}}}\n"
    );
    let mut r = load(&(nodes(1, 8) + &s));
    r.run_for(5);
    let db0 = r.loaded.sim.cache.pods().into_iter().map(|(p, _)| p).find(|p| &*p.name == "db-0").unwrap();
    r.loaded.sim.cluster.delete_pod(&db0, None, PodExit::Deleted);
    r.run_for(60);
    let lives = r.lives();
    let db0: Vec<(Option<u64>, Option<u64>)> =
        lives.iter().filter(|l| l.name == "db-0").map(|l| (l.created, l.gone.map(|g| g.0))).collect();
    assert_eq!(db0, [(Some(0), Some(25)), (Some(25), None)], "created again once the old one was gone (20 s grace)");
    // Scaled to 3 then 1: db-2 comes, then db-2 and db-1 go.
    let sim = &mut r.loaded.sim;
    r.loaded.controllers.manager.scale(sim, "sts", "default", "db", 3).unwrap();
    r.run_for(61);
    let names = |r: &Run| {
        let mut v: Vec<String> = r.loaded.sim.cache.pods().into_iter().map(|(p, _)| p.name.to_string()).collect();
        v.sort();
        v
    };
    assert_eq!(names(&r), ["db-0", "db-1", "db-2"]);
    let sim = &mut r.loaded.sim;
    r.loaded.controllers.manager.scale(sim, "sts", "default", "db", 1).unwrap();
    r.run_for(200);
    assert_eq!(names(&r), ["db-0"]);
}

#[test]
fn live_daemonset_recreates_its_pod_on_a_node_that_stays() {
    let ds = format!(
        "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {{name: agent}}\nspec: {{selector: {{matchLabels: {{app: agent}}}}, \
         template: {{metadata: {{labels: {{app: agent}}}}, spec: {{terminationGracePeriodSeconds: 0, {POD}}}}}}}\n"
    );
    let mut r = load(&(nodes(2, 8) + &ds));
    r.run_for(1);
    let on_n0 =
        r.loaded.sim.cache.pods().into_iter().map(|(p, _)| p).find(|p| p.node_name == Some(Sym::new("n0"))).unwrap();
    r.loaded.sim.cluster.delete_pod(&on_n0, None, PodExit::Evicted);
    r.loaded.sim.cluster.delete_node(Sym::new("n1")).unwrap();
    r.run_for(10);
    let pods: Vec<Pod> = r.loaded.sim.cache.pods().into_iter().map(|(p, _)| p).collect();
    assert_eq!(pods.len(), 1, "{pods:?}");
    assert_eq!(pods[0].node_name, Some(Sym::new("n0")));
    assert_ne!(pods[0].uid, on_n0.uid);
    let _ = Arc::clone(&r.loaded.sim.cache);
}
