//! The plan itself: its items in order, changed all or nothing, every change checked (ids,
//! dependencies, cycles) before it takes effect.

use serde::{Deserialize, Serialize};

use super::{Priority, TodoError, TodoItem, TodoPatch, TodoStatus, TodoWrite};

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

    /// Items the model could still act on: pending or in progress (a blocked or failed item
    /// waits on something the run cannot do).
    pub fn actionable(&self) -> Vec<&TodoItem> {
        self.items
            .iter()
            .filter(|i| matches!(i.status, TodoStatus::Pending | TodoStatus::InProgress))
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
                .find(|i| !w.id.is_empty() && i.id == w.id)
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

    fn commit(&mut self, mut next: Vec<TodoItem>) -> Result<(), TodoError> {
        number_new_items(&mut next);
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

/// Items without an id (new ones: the model does not write ids) get the next free number.
fn number_new_items(items: &mut [TodoItem]) {
    let mut next = items
        .iter()
        .filter_map(|i| i.id.parse::<u64>().ok())
        .max()
        .unwrap_or(0);
    for i in items.iter_mut().filter(|i| i.id.trim().is_empty()) {
        next += 1;
        i.id = next.to_string();
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
    use crate::agent::todo::TodoStatus;
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
