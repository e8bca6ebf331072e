//! The agent's TODO plan. One model for both ways protocols change it: `todo_patch` (one
//! operation with a reason: replace, add, update, remove) and `todo_write` (the whole list, or
//! merged into it by id). A change is checked whole before it takes effect, so a bad patch
//! (an unknown id, a duplicate, a dependency on nothing, a cycle) leaves the plan as it was and
//! its error goes back to the model as an observation.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    #[default]
    Pending,
    InProgress,
    Completed,
    Failed,
    Blocked,
    Cancelled,
}

impl TodoStatus {
    /// Done with: nothing more is expected of it before a final answer.
    pub fn is_closed(self) -> bool {
        matches!(self, TodoStatus::Completed | TodoStatus::Cancelled)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            TodoStatus::Pending => "pending",
            TodoStatus::InProgress => "in_progress",
            TodoStatus::Completed => "completed",
            TodoStatus::Failed => "failed",
            TodoStatus::Blocked => "blocked",
            TodoStatus::Cancelled => "cancelled",
        }
    }

    fn mark(self) -> &'static str {
        match self {
            TodoStatus::Pending => "[ ]",
            TodoStatus::InProgress => "[~]",
            TodoStatus::Completed => "[x]",
            TodoStatus::Failed => "[!]",
            TodoStatus::Blocked => "[b]",
            TodoStatus::Cancelled => "[-]",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Priority {
    High,
    Medium,
    Low,
}

/// One item of the plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TodoItem {
    /// A short id, unique in the plan, like "1" or "find-crash".
    #[schemars(length(max = 24))]
    pub id: String,
    /// What to do, in a few words.
    #[schemars(length(max = 80))]
    pub title: String,
    /// More detail, when useful.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(length(max = 160))]
    pub description: String,
    /// pending, in_progress, completed, failed, blocked or cancelled.
    #[serde(default)]
    pub status: TodoStatus,
    /// high, medium or low.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<Priority>,
    /// Ids of the items that must be done first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 6))]
    pub dependencies: Vec<String>,
}

/// New values for some fields of an item; the others stay.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TodoItemUpdate {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 80))]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 160))]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<TodoStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<Priority>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 6))]
    pub dependencies: Option<Vec<String>>,
}

/// One change to the plan, with why it is made.
/// Items a plan written at once may have, as the step grammar allows (a small model otherwise
/// writes items until its token budget runs out). Longer plans are built with `add`.
pub const PLAN_ITEMS: u32 = 6;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum TodoPatch {
    /// Replace the whole plan with these items.
    Replace {
        #[schemars(length(max = PLAN_ITEMS))]
        items: Vec<TodoItem>,
        #[schemars(length(max = 120))]
        reason: String,
    },
    /// Add one item at the end.
    Add {
        item: TodoItem,
        #[schemars(length(max = 120))]
        reason: String,
    },
    /// Change some fields of the item with this id.
    Update {
        #[schemars(length(max = 24))]
        item_id: String,
        item: TodoItemUpdate,
        #[schemars(length(max = 120))]
        reason: String,
    },
    /// Remove the item with this id.
    Remove {
        #[schemars(length(max = 24))]
        item_id: String,
        #[schemars(length(max = 120))]
        reason: String,
    },
}

/// An item as `todo_write` gives it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TodoWriteItem {
    /// A short id, unique in the plan.
    #[schemars(length(max = 24))]
    pub id: String,
    /// What to do.
    #[schemars(length(max = 80))]
    pub content: String,
    /// pending, in_progress, completed, failed, blocked or cancelled.
    #[serde(default)]
    pub status: TodoStatus,
}

/// `todo_write`: the plan's items; with `merge`, only the items given change (matched by id)
/// and new ids are added, otherwise they replace the plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TodoWrite {
    #[schemars(length(max = PLAN_ITEMS))]
    pub todos: Vec<TodoWriteItem>,
    #[serde(default)]
    pub merge: bool,
}

/// Why a change to the plan was refused. The model made it; it reads this as an observation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TodoError {
    #[error("no plan item has the id {id:?} (the ids are: {known})")]
    UnknownId { id: String, known: String },
    #[error("two plan items have the id {0:?}; ids must be unique")]
    DuplicateId(String),
    #[error("a plan item has an empty id")]
    EmptyId,
    #[error("item {item:?} depends on {missing:?}, which is not in the plan")]
    UnknownDependency { item: String, missing: String },
    #[error("the dependencies form a cycle: {0}")]
    Cycle(String),
}

/// The plan: items in order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TodoList {
    items: Vec<TodoItem>,
}

impl TodoList {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn items(&self) -> &[TodoItem] {
        &self.items
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// A plan as recorded in a step.
    pub fn from_items(items: Vec<TodoItem>) -> Self {
        let mut list = TodoList::new();
        // Recorded plans were valid when recorded; one that is not (edited by hand) starts empty.
        let _ = list.apply_patch(&TodoPatch::Replace {
            items,
            reason: String::new(),
        });
        list
    }

    /// Items neither completed nor cancelled.
    pub fn unfinished(&self) -> Vec<&TodoItem> {
        self.items
            .iter()
            .filter(|i| !i.status.is_closed())
            .collect()
    }

    /// Applies one patch, all or nothing.
    pub fn apply_patch(&mut self, patch: &TodoPatch) -> Result<(), TodoError> {
        let mut next = self.items.clone();
        match patch {
            TodoPatch::Replace { items, .. } => next = items.clone(),
            TodoPatch::Add { item, .. } => next.push(item.clone()),
            TodoPatch::Update { item_id, item, .. } => {
                let i = self.position(item_id)?;
                let target = &mut next[i];
                if let Some(t) = &item.title {
                    target.title = t.clone();
                }
                if let Some(d) = &item.description {
                    target.description = d.clone();
                }
                if let Some(s) = item.status {
                    target.status = s;
                }
                if let Some(p) = item.priority {
                    target.priority = Some(p);
                }
                if let Some(d) = &item.dependencies {
                    target.dependencies = d.clone();
                }
            }
            TodoPatch::Remove { item_id, .. } => {
                let i = self.position(item_id)?;
                next.remove(i);
            }
        }
        self.commit(next)
    }

    /// Applies a `todo_write`, all or nothing.
    pub fn apply_write(&mut self, write: &TodoWrite) -> Result<(), TodoError> {
        let mut next = if write.merge {
            self.items.clone()
        } else {
            Vec::new()
        };
        for w in &write.todos {
            match next
                .iter_mut()
                .find(|i| i.id == w.id)
                .filter(|_| write.merge)
            {
                Some(existing) => {
                    if !w.content.trim().is_empty() {
                        existing.title = w.content.clone();
                    }
                    existing.status = w.status;
                }
                None => next.push(TodoItem {
                    id: w.id.clone(),
                    title: w.content.clone(),
                    description: String::new(),
                    status: w.status,
                    priority: None,
                    dependencies: Vec::new(),
                }),
            }
        }
        self.commit(next)
    }

    fn position(&self, id: &str) -> Result<usize, TodoError> {
        self.items
            .iter()
            .position(|i| i.id == id)
            .ok_or_else(|| TodoError::UnknownId {
                id: id.to_string(),
                known: if self.items.is_empty() {
                    "none, the plan is empty".into()
                } else {
                    self.items
                        .iter()
                        .map(|i| i.id.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                },
            })
    }

    fn commit(&mut self, next: Vec<TodoItem>) -> Result<(), TodoError> {
        validate(&next)?;
        self.items = next;
        Ok(())
    }

    /// The plan as the prompt shows it, one line per item.
    pub fn render(&self) -> String {
        if self.items.is_empty() {
            return "(no plan yet)".into();
        }
        let mut out = String::new();
        for i in &self.items {
            out.push_str(&format!("{} {}: {}", i.status.mark(), i.id, i.title));
            let mut notes = vec![i.status.as_str().to_string()];
            if let Some(p) = i.priority {
                notes.push(
                    match p {
                        Priority::High => "high priority",
                        Priority::Medium => "medium priority",
                        Priority::Low => "low priority",
                    }
                    .into(),
                );
            }
            if !i.dependencies.is_empty() {
                notes.push(format!("after {}", i.dependencies.join(", ")));
            }
            out.push_str(&format!(" ({})", notes.join("; ")));
            if !i.description.is_empty() {
                out.push_str(&format!(" - {}", i.description));
            }
            out.push('\n');
        }
        out.pop();
        out
    }
}

/// Ids non-empty and unique, dependencies on items of the plan, no cycles.
fn validate(items: &[TodoItem]) -> Result<(), TodoError> {
    let mut seen = std::collections::HashSet::new();
    for i in items {
        if i.id.trim().is_empty() {
            return Err(TodoError::EmptyId);
        }
        if !seen.insert(i.id.as_str()) {
            return Err(TodoError::DuplicateId(i.id.clone()));
        }
    }
    for i in items {
        if let Some(missing) = i.dependencies.iter().find(|d| !seen.contains(d.as_str())) {
            return Err(TodoError::UnknownDependency {
                item: i.id.clone(),
                missing: missing.clone(),
            });
        }
    }
    // Depth-first, colouring items on the path; meeting one on the path again is a cycle.
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        OnPath,
        Done,
    }
    let index: std::collections::HashMap<&str, usize> = items
        .iter()
        .enumerate()
        .map(|(n, i)| (i.id.as_str(), n))
        .collect();
    let mut marks = vec![Mark::New; items.len()];
    for start in 0..items.len() {
        if marks[start] != Mark::New {
            continue;
        }
        // (item, next dependency to visit); an explicit stack, so depth costs no recursion.
        let mut stack = vec![(start, 0usize)];
        marks[start] = Mark::OnPath;
        while let Some(&(n, next)) = stack.last() {
            match items[n].dependencies.get(next) {
                Some(dep) => {
                    if let Some(top) = stack.last_mut() {
                        top.1 += 1;
                    }
                    // Every dependency was checked to name an item above.
                    let Some(&d) = index.get(dep.as_str()) else {
                        continue;
                    };
                    match marks[d] {
                        Mark::OnPath => {
                            let from = stack.iter().position(|&(s, _)| s == d).unwrap_or(0);
                            let mut path: Vec<&str> = stack[from..]
                                .iter()
                                .map(|&(s, _)| items[s].id.as_str())
                                .collect();
                            path.push(items[d].id.as_str());
                            return Err(TodoError::Cycle(path.join(" -> ")));
                        }
                        Mark::New => {
                            marks[d] = Mark::OnPath;
                            stack.push((d, 0));
                        }
                        Mark::Done => {}
                    }
                }
                None => {
                    marks[n] = Mark::Done;
                    stack.pop();
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn patch(v: serde_json::Value) -> TodoPatch {
        serde_json::from_value(v).unwrap()
    }

    fn plan() -> TodoList {
        let mut t = TodoList::new();
        t.apply_patch(&patch(json!({
            "op": "replace", "reason": "start",
            "items": [
                {"id": "1", "title": "Find the crash report", "priority": "high"},
                {"id": "2", "title": "Read the code", "dependencies": ["1"]},
                {"id": "3", "title": "Answer", "dependencies": ["1", "2"]},
            ]
        })))
        .unwrap();
        t
    }

    fn ids(t: &TodoList) -> Vec<&str> {
        t.items().iter().map(|i| i.id.as_str()).collect()
    }

    #[test]
    fn patches_add_update_and_remove() {
        let mut t = plan();
        assert_eq!(ids(&t), ["1", "2", "3"]);
        assert_eq!(t.items()[0].status, TodoStatus::Pending);
        t.apply_patch(&patch(json!({
            "op": "add", "reason": "more", "item": {"id": "4", "title": "Check PRs", "status": "in_progress"}
        })))
        .unwrap();
        t.apply_patch(&patch(json!({
            "op": "update", "reason": "found it", "item_id": "1",
            "item": {"status": "completed", "description": "issue #918"}
        })))
        .unwrap();
        let first = &t.items()[0];
        assert_eq!(first.status, TodoStatus::Completed);
        assert_eq!(first.title, "Find the crash report");
        assert_eq!(first.description, "issue #918");
        t.apply_patch(&patch(
            json!({"op": "remove", "reason": "not needed", "item_id": "4"}),
        ))
        .unwrap();
        assert_eq!(ids(&t), ["1", "2", "3"]);
        assert_eq!(
            t.unfinished()
                .iter()
                .map(|i| i.id.as_str())
                .collect::<Vec<_>>(),
            ["2", "3"]
        );
    }

    #[test]
    fn bad_patches_leave_the_plan_as_it_was() {
        let mut t = plan();
        let before = t.clone();
        let e = t
            .apply_patch(&patch(
                json!({"op": "update", "reason": "x", "item_id": "9", "item": {}}),
            ))
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "no plan item has the id \"9\" (the ids are: 1, 2, 3)"
        );
        let e = t
            .apply_patch(&patch(
                json!({"op": "add", "reason": "x", "item": {"id": "2", "title": "again"}}),
            ))
            .unwrap_err();
        assert_eq!(e, TodoError::DuplicateId("2".into()));
        // Removing an item others depend on would leave them pointing at nothing.
        let e = t
            .apply_patch(&patch(
                json!({"op": "remove", "reason": "x", "item_id": "1"}),
            ))
            .unwrap_err();
        assert!(
            matches!(&e, TodoError::UnknownDependency { item, missing } if item == "2" && missing == "1"),
            "{e}"
        );
        let e = t
            .apply_patch(&patch(json!({
                "op": "update", "reason": "x", "item_id": "1", "item": {"dependencies": ["3"]}
            })))
            .unwrap_err();
        assert_eq!(e.to_string(), "the dependencies form a cycle: 1 -> 3 -> 1");
        let e = t
            .apply_patch(&patch(json!({
                "op": "add", "reason": "x", "item": {"id": "5", "title": "self", "dependencies": ["5"]}
            })))
            .unwrap_err();
        assert_eq!(e, TodoError::Cycle("5 -> 5".into()));
        assert_eq!(t, before);
        let e = TodoList::new()
            .apply_patch(&patch(
                json!({"op": "remove", "reason": "x", "item_id": "1"}),
            ))
            .unwrap_err();
        assert!(e.to_string().contains("the plan is empty"), "{e}");
    }

    #[test]
    fn todo_write_replaces_or_merges_by_id() {
        let mut t = plan();
        let write: TodoWrite = serde_json::from_value(json!({
            "merge": true,
            "todos": [
                {"id": "1", "content": "", "status": "completed"},
                {"id": "5", "content": "Cite the commit", "status": "pending"}
            ]
        }))
        .unwrap();
        t.apply_write(&write).unwrap();
        assert_eq!(ids(&t), ["1", "2", "3", "5"]);
        assert_eq!(t.items()[0].title, "Find the crash report");
        assert_eq!(t.items()[0].status, TodoStatus::Completed);
        // Merging keeps the dependencies todo_write cannot express.
        assert_eq!(t.items()[2].dependencies, ["1", "2"]);

        let write: TodoWrite = serde_json::from_value(json!({
            "todos": [{"id": "a", "content": "Only this", "status": "in_progress"}]
        }))
        .unwrap();
        t.apply_write(&write).unwrap();
        assert_eq!(ids(&t), ["a"]);
        let dup: TodoWrite = serde_json::from_value(json!({
            "todos": [{"id": "a", "content": "x"}, {"id": "a", "content": "y"}]
        }))
        .unwrap();
        assert_eq!(t.apply_write(&dup), Err(TodoError::DuplicateId("a".into())));
        assert_eq!(ids(&t), ["a"]);
    }

    #[test]
    fn the_prompt_shows_status_priority_and_order() {
        assert_eq!(TodoList::new().render(), "(no plan yet)");
        let mut t = plan();
        t.apply_patch(&patch(json!({
            "op": "update", "reason": "x", "item_id": "1", "item": {"status": "completed"}
        })))
        .unwrap();
        assert_eq!(
            t.render(),
            "[x] 1: Find the crash report (completed; high priority)\n\
             [ ] 2: Read the code (pending; after 1)\n\
             [ ] 3: Answer (pending; after 1, 2)"
        );
    }

    #[test]
    fn both_forms_can_be_enforced_by_a_grammar() {
        for spec in [
            crate::tools::spec_for::<TodoPatch>("todo_patch"),
            crate::tools::spec_for::<TodoWrite>("todo_write"),
        ] {
            crate::llm::grammar::Grammar::JsonSchema(spec.parameters.clone())
                .validate()
                .unwrap_or_else(|e| panic!("{}: {e}\n{}", spec.name, spec.parameters));
        }
        let spec = crate::tools::spec_for::<TodoPatch>("todo_patch");
        let text = spec.parameters.to_string();
        for op in [
            "replace",
            "add",
            "update",
            "remove",
            "in_progress",
            "item_id",
        ] {
            assert!(text.contains(op), "{op} missing from {text}");
        }
    }

    #[test]
    fn a_long_chain_is_checked_without_recursion() {
        let items: Vec<TodoItem> = (0..100_000)
            .map(|n| TodoItem {
                id: n.to_string(),
                title: "step".into(),
                description: String::new(),
                status: TodoStatus::Pending,
                priority: None,
                dependencies: if n > 0 {
                    vec![(n - 1).to_string()]
                } else {
                    vec![]
                },
            })
            .collect();
        assert!(validate(&items).is_ok());
        let mut cyclic = items;
        cyclic[0].dependencies = vec!["99999".into()];
        assert!(matches!(validate(&cyclic), Err(TodoError::Cycle(_))));
    }
}
