//! The agent's TODO plan. One model for both ways protocols change it: `todo_patch` (one
//! operation with a reason: replace, add, update, remove) and `todo_write` (the whole list, or
//! merged into it by id). A change is checked whole before it takes effect, so a bad patch
//! (an unknown id, a duplicate, a dependency on nothing, a cycle) leaves the plan as it was and
//! its error goes back to the model as an observation.
//!
//! Here the plan's items and the changes a model writes to it; `list` holds the plan, applies
//! the changes and checks them.

mod list;

pub use list::TodoList;

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

    pub(super) fn mark(self) -> &'static str {
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
    /// Unique in the plan. Burrow numbers new items ("1", "2"...): a model that had to invent
    /// ids invented items with them, so the grammar leaves the id out.
    #[serde(default)]
    #[schemars(skip)]
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
    /// With merge, the id of the item to change. New items are numbered by Burrow.
    #[serde(default, skip_serializing_if = "String::is_empty")]
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
