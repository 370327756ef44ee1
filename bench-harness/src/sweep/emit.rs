//! `ksched sweep PLAN --emit-k8s DIR`: the sweep as Kubernetes objects, built through
//! k8s-openapi's types.
//!
//! - `DIR/configmap.yaml`: a ConfigMap holding the plan (key `plan.yaml`, its paths rewritten
//!   to the mount and each entry named by its label, so scenario ids stay the same) and every
//!   input file (keys `fN-NAME`, flattened to ConfigMap key characters). The volume's `items`
//!   put each file at `files/<its path relative to the inputs' common directory>`, so a
//!   workload file finds the templates it names relative to itself.
//! - `DIR/job.yaml`: an Indexed Job, one completion index per scenario, whose container runs
//!   `ksched sweep /plan/plan.yaml --index-from-env` (the Job controller sets
//!   JOB_COMPLETION_INDEX) and prints one result line; `ksched sweep merge` reads the logs.
//!   Pods run as a numeric non-root user with a read-only root filesystem, no privilege
//!   escalation, no capabilities, the runtime's default seccomp profile, no service-account
//!   token, and equal requests and limits. Each index is retried up to twice
//!   (`backoffLimitPerIndex`), except on exit code 2 (bad input), which fails the index at once.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use k8s_openapi::api::batch::v1::{
    Job, JobSpec, PodFailurePolicy, PodFailurePolicyOnExitCodesRequirement, PodFailurePolicyRule,
};
use k8s_openapi::api::core::v1::{
    Capabilities, ConfigMap, ConfigMapVolumeSource, Container, EmptyDirVolumeSource, KeyToPath, PodSecurityContext,
    PodSpec, PodTemplateSpec, ResourceRequirements, SeccompProfile, SecurityContext, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::plan::{self, Plan};

/// Where the ConfigMap is mounted in the container.
pub const MOUNT: &str = "/plan";
/// The numeric user and group the pods run as (distroless's `nonroot`).
pub const USER: i64 = 65532;
/// A ConfigMap holds at most 1 MiB.
const CONFIGMAP_LIMIT: usize = 1024 * 1024;

#[derive(Clone, Debug)]
pub struct Options {
    pub name: String,
    pub image: String,
    pub parallelism: i32,
    pub cpu: String,
    pub memory: String,
    /// `--feature-gates` and `--preemption-api-delay` the Job's pods run under.
    pub settings: super::scenario::Settings,
}

/// The ConfigMap and the Job for `plan`.
pub fn objects(plan: &Plan, opts: &Options) -> Result<(ConfigMap, Job), String> {
    check_name(&opts.name)?;
    let files = plan::input_files(plan)?;
    let canon: Vec<PathBuf> = files
        .iter()
        .map(|f| f.canonicalize().map_err(|e| format!("{}: {e}", f.display())))
        .collect::<Result<_, _>>()?;
    let root = common_dir(&canon);
    let rel = |p: &Path| -> Result<String, String> {
        let c = p.canonicalize().map_err(|e| format!("{}: {e}", p.display()))?;
        let r = c.strip_prefix(&root).map_err(|_| format!("{}: outside {}", c.display(), root.display()))?;
        Ok(r.components()
            .filter_map(|c| if let Component::Normal(s) = c { s.to_str() } else { None })
            .collect::<Vec<_>>()
            .join("/"))
    };
    let mut data = BTreeMap::new();
    let mut items = vec![KeyToPath { key: "plan.yaml".into(), path: "plan.yaml".into(), mode: None }];
    let mut mounted: BTreeMap<PathBuf, String> = BTreeMap::new();
    for (i, f) in files.iter().enumerate() {
        let text =
            std::fs::read_to_string(f).map_err(|e| format!("{}: cannot read as UTF-8 text: {e}", f.display()))?;
        let r = rel(f)?;
        let key = config_map_key(i, f);
        items.push(KeyToPath { key: key.clone(), path: format!("files/{r}"), mode: None });
        data.insert(key, text);
        mounted.insert(f.canonicalize().map_err(|e| e.to_string())?, format!("files/{r}"));
    }
    let plan_text = std::fs::read_to_string(&plan.path).map_err(|e| format!("{}: {e}", plan.path.display()))?;
    let map = |p: &Path| -> String {
        p.canonicalize().ok().and_then(|c| mounted.get(&c).cloned()).unwrap_or_else(|| p.display().to_string())
    };
    data.insert("plan.yaml".into(), plan::rewrite(&plan_text, plan, &map)?);
    let size: usize = data.iter().map(|(k, v)| k.len() + v.len()).sum();
    if size > CONFIGMAP_LIMIT {
        return Err(format!(
            "the plan and its inputs are {size} bytes, over a ConfigMap's limit of {CONFIGMAP_LIMIT}: \
             put large inputs in an image or a volume of your own"
        ));
    }
    let labels = BTreeMap::from([
        ("app.kubernetes.io/name".to_owned(), "ksched-sweep".to_owned()),
        ("app.kubernetes.io/instance".to_owned(), opts.name.clone()),
    ]);
    let cm_name = format!("{}-plan", opts.name);
    let config_map = ConfigMap {
        metadata: ObjectMeta { name: Some(cm_name.clone()), labels: Some(labels.clone()), ..ObjectMeta::default() },
        data: Some(data),
        ..ConfigMap::default()
    };
    let quantities = BTreeMap::from([
        ("cpu".to_owned(), Quantity(opts.cpu.clone())),
        ("memory".to_owned(), Quantity(opts.memory.clone())),
    ]);
    let container = Container {
        name: "ksched".into(),
        image: Some(opts.image.clone()),
        args: Some(
            ["sweep".into(), format!("{MOUNT}/plan.yaml"), "--index-from-env".into()]
                .into_iter()
                .chain(opts.settings.child_args())
                .collect(),
        ),
        resources: Some(ResourceRequirements {
            requests: Some(quantities.clone()),
            limits: Some(quantities),
            ..ResourceRequirements::default()
        }),
        security_context: Some(SecurityContext {
            allow_privilege_escalation: Some(false),
            read_only_root_filesystem: Some(true),
            run_as_non_root: Some(true),
            run_as_user: Some(USER),
            run_as_group: Some(USER),
            capabilities: Some(Capabilities { drop: Some(vec!["ALL".into()]), add: None }),
            ..SecurityContext::default()
        }),
        volume_mounts: Some(vec![
            VolumeMount {
                name: "plan".into(),
                mount_path: MOUNT.into(),
                read_only: Some(true),
                ..VolumeMount::default()
            },
            VolumeMount { name: "tmp".into(), mount_path: "/tmp".into(), ..VolumeMount::default() },
        ]),
        ..Container::default()
    };
    let pod = PodSpec {
        containers: vec![container],
        restart_policy: Some("Never".into()),
        automount_service_account_token: Some(false),
        enable_service_links: Some(false),
        security_context: Some(PodSecurityContext {
            run_as_non_root: Some(true),
            run_as_user: Some(USER),
            run_as_group: Some(USER),
            seccomp_profile: Some(SeccompProfile { type_: "RuntimeDefault".into(), localhost_profile: None }),
            ..PodSecurityContext::default()
        }),
        volumes: Some(vec![
            Volume {
                name: "plan".into(),
                config_map: Some(ConfigMapVolumeSource {
                    name: cm_name,
                    items: Some(items),
                    ..ConfigMapVolumeSource::default()
                }),
                ..Volume::default()
            },
            Volume {
                name: "tmp".into(),
                empty_dir: Some(EmptyDirVolumeSource { size_limit: Some(Quantity("64Mi".into())), medium: None }),
                ..Volume::default()
            },
        ]),
        ..PodSpec::default()
    };
    let n = i32::try_from(plan.scenarios.len()).map_err(|_| "too many scenarios for one Job".to_owned())?;
    let job = Job {
        metadata: ObjectMeta { name: Some(opts.name.clone()), labels: Some(labels.clone()), ..ObjectMeta::default() },
        spec: Some(JobSpec {
            completion_mode: Some("Indexed".into()),
            completions: Some(n),
            parallelism: Some(opts.parallelism.min(n)),
            backoff_limit_per_index: Some(2),
            pod_failure_policy: Some(PodFailurePolicy {
                rules: vec![PodFailurePolicyRule {
                    action: "FailIndex".into(),
                    on_exit_codes: Some(PodFailurePolicyOnExitCodesRequirement {
                        container_name: Some("ksched".into()),
                        operator: "In".into(),
                        values: vec![2],
                    }),
                    on_pod_conditions: None,
                }],
            }),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta { labels: Some(labels), ..ObjectMeta::default() }),
                spec: Some(pod),
            },
            ..JobSpec::default()
        }),
        ..Job::default()
    };
    Ok((config_map, job))
}

/// Writes `DIR/configmap.yaml` and `DIR/job.yaml`; returns their paths.
pub fn write(plan: &Plan, dir: &Path, opts: &Options) -> Result<Vec<PathBuf>, String> {
    let (cm, job) = objects(plan, opts)?;
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let cm_path = dir.join("configmap.yaml");
    let job_path = dir.join("job.yaml");
    for (path, text) in [(&cm_path, to_yaml(&cm)?), (&job_path, to_yaml(&job)?)] {
        std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(vec![cm_path, job_path])
}

/// An object as YAML with its `apiVersion` and `kind` (k8s-openapi's serializer adds them).
pub fn to_yaml<T: serde::Serialize>(o: &T) -> Result<String, String> {
    yaml_serde::to_string(o).map_err(|e| e.to_string())
}

/// A DNS-1123 label short enough for the pods' names (the Job's name, an index and a suffix).
fn check_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 52
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "--name {name:?}: must be 1-52 lowercase letters, digits and '-', starting and ending alphanumeric"
        ))
    }
}

/// `fI-NAME`: the file's name with every character a ConfigMap key may not hold as `_`.
fn config_map_key(i: usize, f: &Path) -> String {
    let name = f.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let clean: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') { c } else { '_' }).collect();
    let mut key = format!("f{i}-{clean}");
    key.truncate(253);
    key
}

/// The deepest directory holding every file.
fn common_dir(files: &[PathBuf]) -> PathBuf {
    let mut dirs = files.iter().map(|f| f.parent().unwrap_or(Path::new("/")).to_path_buf());
    let Some(mut common) = dirs.next() else { return PathBuf::from("/") };
    for d in dirs {
        while !d.starts_with(&common) {
            if !common.pop() {
                break;
            }
        }
    }
    common
}
