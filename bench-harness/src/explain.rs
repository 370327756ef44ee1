//! `ksched explain POD -f FILE...`: one pod's scheduling cycle, plugin by plugin.

use clap::Args;

#[derive(Args, Debug, Clone)]
pub struct ExplainArgs {}

pub fn run(_args: &ExplainArgs) -> Result<(), String> {
    Err("not yet".into())
}
