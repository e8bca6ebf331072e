//! The toolbelt as a budget: a run starts with every tool unless their descriptions would
//! take more than a share of the context window; then it starts with the tools most relevant
//! to the task that fit, `search` first, and the toolbelt's meta-tools take on the others.
//! (A fixed count made a 14-tool registry start with meta-tools only, and small models then
//! spent every step listing and inspecting tools.)

use super::first::SEARCH;
use super::prompt::tool_signature;
use crate::llm::engine::LanguageModel;
use crate::tools::ToolSpec;

/// The tools a run starts with, and whether the toolbelt is on.
pub(super) fn initial_tools(
    model: &dyn LanguageModel,
    specs: &[ToolSpec],
    share: f64,
    task: &str,
) -> (Vec<String>, bool) {
    let all: Vec<String> = specs.iter().map(|s| s.name.clone()).collect();
    let window = model.descriptor().context_length;
    // Counted as the default prompt lists them, a line each; a count that fails is estimated (four characters a
    // token), since the choice only needs to be about right.
    let cost = |s: &ToolSpec| {
        let text = tool_signature(s);
        model
            .count_tokens(&text)
            .unwrap_or(text.chars().count() / 4)
    };
    let costs: Vec<usize> = specs.iter().map(cost).collect();
    let budget = share.max(0.0) * window as f64;
    if window == 0 || costs.iter().sum::<usize>() as f64 <= budget {
        return (all, false);
    }
    let mut order: Vec<usize> = (0..specs.len()).collect();
    let task_words = words(task);
    // Stable: ties keep the registry's order.
    order.sort_by_key(|&i| {
        let s = &specs[i];
        let first = s.name == SEARCH;
        let about = words(&format!("{} {}", s.name.replace('_', " "), s.description));
        let overlap = task_words.iter().filter(|w| about.contains(w)).count();
        (!first, std::cmp::Reverse(overlap))
    });
    let mut active = Vec::new();
    let mut used = 0usize;
    for i in order {
        let fits = used as f64 + costs[i] as f64 <= budget;
        if fits || specs[i].name == SEARCH {
            used += costs[i];
            active.push(specs[i].name.clone());
        }
    }
    (active, true)
}

/// The words of a text that say what it is about: lowercased, three letters or more, a
/// trailing plural `s` dropped, common words left out.
fn words(text: &str) -> Vec<String> {
    const COMMON: [&str; 24] = [
        "the", "and", "for", "with", "that", "this", "which", "what", "where", "when", "who",
        "how", "does", "did", "are", "was", "from", "into", "about", "its", "their", "there",
        "one", "all",
    ];
    let mut out: Vec<String> = Vec::new();
    for w in text
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.len() >= 3 && !COMMON.contains(w))
    {
        let w = w.strip_suffix('s').filter(|s| s.len() >= 3).unwrap_or(w);
        if !out.iter().any(|o| o == w) {
            out.push(w.to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::fake::FakeModel;

    #[test]
    fn the_toolbelt_engages_past_its_share_and_starts_with_the_relevant_tools() {
        let dir = tempfile::tempdir().unwrap();
        let ws = crate::workspace::Workspace::open_at(&dir.path().join("w.db")).unwrap();
        let specs = crate::tools::all_tools(std::sync::Arc::new(ws))
            .unwrap()
            .specs();
        let model = FakeModel::new([]);
        // A large window: every tool from the start, no toolbelt.
        let (active, on) = initial_tools(&model, &specs, 0.25, "which commit fixed it");
        assert!(!on);
        assert_eq!(active.len(), specs.len());
        // A small window: search first, then the tools about the task's words.
        let small = FakeModel::new([]).with_context_length(1024);
        let (active, on) = initial_tools(&small, &specs, 0.25, "Which commit fixed the hang?");
        assert!(on);
        assert!(active.len() < specs.len(), "{active:?}");
        assert_eq!(active[0], "search");
        assert!(active.iter().any(|n| n.contains("commit")), "{active:?}");
        // No budget at all: still the search the run starts with.
        let (active, on) = initial_tools(&small, &specs, 0.0, "anything");
        assert!(on);
        assert_eq!(active, ["search"]);
    }
}
