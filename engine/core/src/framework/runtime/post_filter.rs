//! Running PostFilter: the plugins in order, the first decisive one deciding alone.

use crate::api::Pod;
use crate::framework::{Code, CycleState, Profile};

/// Runs the profile's PostFilter plugins in order, as upstream's RunPostFilterPlugins does:
/// the first plugin that succeeds, rejects the pod as unresolvable or fails decides alone
/// (an error keeps no result); otherwise every plugin's message is joined with ", " and the
/// last result that changes the nomination is kept. Returns that result and the message
/// (`None` when empty, as after a success).
pub fn run_post_filter_plugins(
    profile: &Profile,
    ctx: &mut crate::framework::PostFilterContext<'_>,
    state: &CycleState,
    pod: &Pod,
) -> (Option<crate::framework::PostFilterResult>, Option<String>) {
    let mut result = None;
    let mut messages = Vec::new();
    for p in &profile.post_filter {
        let (r, st) = p.post_filter(ctx, state, pod);
        let decisive = st.is_success() || !st.is_rejected() || st.code == Code::UnschedulableAndUnresolvable;
        if decisive {
            let msg = (!st.is_success()).then(|| st.message()).filter(|m| !m.is_empty());
            return (if st.code == Code::Error { None } else { r }, msg);
        }
        if r.as_ref().is_some_and(|r| r.nominating != crate::framework::Nominating::Noop) {
            result = r;
        }
        messages.push(st.message());
    }
    (result, Some(messages.join(", ")).filter(|m| !m.is_empty()))
}
