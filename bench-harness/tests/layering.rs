//! The layering, kept: which crate and which engine module may name which. Each crate's
//! `lib.rs` (and `main.rs` here) says its own arrows; this test reads the sources and fails on
//! an import against them, naming the file, the line and the rule.
//!
//! The arrows:
//!
//! ```text
//! ksched (bench-harness) ──→ ksched-k8s ──→ ksched-engine
//!          └──────────────────→ ksched-sim ──→ ksched-engine
//! inside ksched-engine:
//!   scheduler → framework, queue, cache, parallel, config, cluster, observer
//!   config    → framework (builds profiles; the registry names the plugins)
//!   framework → snapshot, api, parallel     (never queue, cache, scheduler, config; never a plugin)
//!   plugins   → framework, snapshot, api    (never queue, cache, scheduler, config)
//!   queue, cache → snapshot, api            (never each other, never the scheduler)
//!   snapshot  → api                         (never queue, cache, framework, scheduler)
//! ```
//!
//! Arrows against this that exist today are listed in `KNOWN`, each with the issue that
//! removes it: the list may shrink (an entry that no longer matches fails, so it is taken
//! out), never grow. Test code (`tests.rs`, `tests/`, `testing/`, `test_util.rs`, and a file's
//! part after its first `#[cfg(test)]`) is exempt from the module rules, which are about what
//! the engine's running code depends on; the crate rules hold for tests too.

use std::path::{Path, PathBuf};

/// One rule: under `dir` (minus `except`), no code line names any of `forbidden`.
struct Rule {
    name: &'static str,
    dir: &'static str,
    except: Option<&'static str>,
    forbidden: &'static [&'static str],
    /// Whether test code is held to the rule too.
    tests_too: bool,
}

const RULES: &[Rule] = &[
    Rule {
        name: "ksched-engine knows no other ksched crate, no YAML and no Kubernetes API types",
        dir: "engine/core/src",
        except: None,
        forbidden: &["ksched_sim", "ksched_k8s", "ksched_bench", "k8s_openapi", "yaml_serde", "serde_yaml"],
        tests_too: true,
    },
    Rule {
        name: "ksched-sim depends on the engine only",
        dir: "engine/sim/src",
        except: None,
        forbidden: &["ksched_k8s", "ksched_bench", "k8s_openapi", "yaml_serde", "serde_yaml"],
        tests_too: true,
    },
    Rule {
        name: "ksched-k8s depends on the engine (add no new k8s → sim import)",
        dir: "engine/k8s/src",
        except: None,
        forbidden: &["ksched_bench", "ksched_sim"],
        tests_too: true,
    },
    Rule {
        name: "the framework names no plugin and never reaches the queue, the cache, the scheduler or the config",
        dir: "engine/core/src/framework",
        except: Some("engine/core/src/framework/plugins"),
        forbidden: &["crate::queue", "crate::cache", "crate::scheduler", "crate::config", "plugins::"],
        tests_too: false,
    },
    Rule {
        name: "plugins read the snapshot, never the queue, the cache, the scheduler or the config",
        dir: "engine/core/src/framework/plugins",
        except: None,
        forbidden: &["crate::queue", "crate::cache", "crate::scheduler", "crate::config"],
        tests_too: false,
    },
    Rule {
        name: "the queue never imports the cache or the scheduler",
        dir: "engine/core/src/queue",
        except: None,
        forbidden: &["crate::cache", "crate::scheduler", "crate::framework::plugins"],
        tests_too: false,
    },
    Rule {
        name: "the cache never imports the queue, the scheduler or the framework",
        dir: "engine/core/src/cache",
        except: None,
        forbidden: &["crate::queue", "crate::scheduler", "crate::framework"],
        tests_too: false,
    },
    Rule {
        name: "the snapshot is below the queue, the cache, the framework and the scheduler",
        dir: "engine/core/src/snapshot",
        except: None,
        forbidden: &["crate::queue", "crate::cache", "crate::scheduler", "crate::framework"],
        tests_too: false,
    },
];

/// Arrows against the rules that exist today: (file, forbidden name, the issue that removes it).
const KNOWN: &[(&str, &str, &str)] = &[];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace root").to_path_buf()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

fn is_test_file(rel: &str) -> bool {
    rel.ends_with("/tests.rs") || rel.ends_with("/test_util.rs") || rel.contains("/tests/") || rel.contains("/testing/")
}

/// Whether `line` names `name` as a path: not inside a longer identifier or path, and not in
/// a comment.
fn names(line: &str, name: &str) -> bool {
    let code = line.split("//").next().unwrap_or("");
    code.match_indices(name).any(|(i, _)| {
        let before = code[..i].chars().next_back();
        !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

/// The (line number, forbidden name) pairs of `text` (the file `rel`) against `rule`.
fn violations(rel: &str, text: &str, rule: &Rule) -> Vec<(usize, &'static str)> {
    if !rule.tests_too && is_test_file(rel) {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        if !rule.tests_too && t.starts_with("#[cfg(test)]") {
            break;
        }
        if t.starts_with("//") {
            continue;
        }
        out.extend(rule.forbidden.iter().filter(|f| names(line, f)).map(|f| (i + 1, *f)));
    }
    out
}

#[test]
fn no_import_goes_against_the_layering() {
    let root = root();
    let mut found = Vec::new();
    let mut known_used = vec![false; KNOWN.len()];
    for rule in RULES {
        let mut files = Vec::new();
        rust_files(&root.join(rule.dir), &mut files);
        for path in files {
            let rel = path.strip_prefix(&root).unwrap().to_string_lossy().replace('\\', "/");
            if rule.except.is_some_and(|e| rel.starts_with(e)) {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            for (line, name) in violations(&rel, &text, rule) {
                match KNOWN.iter().position(|k| k.0 == rel && k.1 == name) {
                    Some(k) => known_used[k] = true,
                    None => found.push(format!("{rel}:{line}: names {name} — {}", rule.name)),
                }
            }
        }
    }
    assert!(found.is_empty(), "imports against the layering (see this file's docs):\n{}", found.join("\n"));
    let stale: Vec<_> = KNOWN.iter().zip(&known_used).filter(|(_, used)| !**used).map(|(k, _)| k.0).collect();
    assert!(stale.is_empty(), "KNOWN entries that no longer occur (take them out): {stale:?}");
}

#[test]
fn the_scan_finds_an_import_and_skips_comments_and_tests() {
    let rule = &RULES[3];
    let text = "use crate::api::Pod;\n\
                // crate::queue in a comment\n\
                use crate::queue::Nominator;\n\
                let x = my_crate::queue::y; // not ours\n\
                fn f() { crate::scheduler::select_host(); }\n\
                #[cfg(test)]\n\
                mod tests { use crate::cache::Cache; }\n";
    let found = violations("engine/core/src/framework/x.rs", text, rule);
    assert_eq!(found, vec![(3, "crate::queue"), (5, "crate::scheduler")]);
    assert!(violations("engine/core/src/framework/tests.rs", text, rule).is_empty(), "test files are exempt");
    // The crate rules hold in tests too.
    let found = violations("engine/k8s/src/x/tests.rs", "use ksched_sim::Simulation;\n", &RULES[2]);
    assert_eq!(found, vec![(1, "ksched_sim")]);
}
