//! The meta-tools the loop itself answers: the plan (`todo_write`), the end of a run
//! (`final_answer`, for native tool calling) and the toolbelt, which lets a run start with few
//! tools and take on the ones it needs. Their inputs are typed like every tool's, so their
//! doc comments are what the model reads and their schemas become grammars.

use schemars::JsonSchema;
use serde::Deserialize;

use super::todo::TodoWrite;
use crate::tools::{spec_for, ToolSpec};

pub const TODO_WRITE: &str = "todo_write";
pub const FINAL_ANSWER: &str = "final_answer";
pub const TOOLBELT_LIST: &str = "toolbelt_list_tools";
pub const TOOLBELT_INSPECT: &str = "toolbelt_inspect_tool";
pub const TOOLBELT_ADD: &str = "toolbelt_add_tool";
pub const TOOLBELT_REMOVE: &str = "toolbelt_remove_tool";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AnswerStatus {
    Completed,
    Blocked,
    Failed,
}

/// Give the final answer and end the task.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct FinalAnswerInput {
    /// The answer for the user, citing files, issues, pull requests or commits.
    pub answer: String,
    /// completed, blocked (cannot go on) or failed.
    pub status: AnswerStatus,
}

/// List every tool that can be added to the toolbelt, with a line about each.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ToolbeltListInput {}

/// Show a tool's description and arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ToolbeltInspectInput {
    /// The tool's name.
    pub name: String,
}

/// Add a tool to the toolbelt, so it can be called from the next step on.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ToolbeltAddInput {
    /// The tool's name.
    pub name: String,
}

/// Remove a tool from the toolbelt.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ToolbeltRemoveInput {
    /// The tool's name.
    pub name: String,
}

/// `todo_write` takes `TodoWrite`, whose own doc comment speaks to programmers.
pub fn todo_write_spec() -> ToolSpec {
    let mut spec = spec_for::<TodoWrite>(TODO_WRITE);
    spec.description = "Write the plan: a short list of items with their status. With merge, \
         only the items given change (matched by id) and new ids are added; without, they \
         replace the plan."
        .into();
    spec
}

pub fn final_answer_spec() -> ToolSpec {
    spec_for::<FinalAnswerInput>(FINAL_ANSWER)
}

/// The toolbelt's meta-tools, their `name` arguments limited to the tools they can take: a
/// grammar then keeps the model from naming a tool that does not exist.
pub fn toolbelt_specs(all: &[String], active: &[String]) -> Vec<ToolSpec> {
    let with_names = |mut spec: ToolSpec, names: Vec<&String>| {
        if !names.is_empty() {
            spec.parameters["properties"]["name"]["enum"] = serde_json::json!(names);
        }
        spec
    };
    let addable: Vec<&String> = all.iter().filter(|n| !active.contains(n)).collect();
    let mut specs = vec![
        spec_for::<ToolbeltListInput>(TOOLBELT_LIST),
        with_names(
            spec_for::<ToolbeltInspectInput>(TOOLBELT_INSPECT),
            all.iter().collect(),
        ),
    ];
    if !addable.is_empty() {
        specs.push(with_names(
            spec_for::<ToolbeltAddInput>(TOOLBELT_ADD),
            addable,
        ));
    }
    if !active.is_empty() {
        specs.push(with_names(
            spec_for::<ToolbeltRemoveInput>(TOOLBELT_REMOVE),
            active.iter().collect(),
        ));
    }
    specs
}

pub fn is_meta(name: &str) -> bool {
    matches!(
        name,
        TODO_WRITE
            | FINAL_ANSWER
            | TOOLBELT_LIST
            | TOOLBELT_INSPECT
            | TOOLBELT_ADD
            | TOOLBELT_REMOVE
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::grammar::Grammar;

    #[test]
    fn meta_tools_describe_themselves_and_compile_to_grammars() {
        let mut specs = vec![todo_write_spec(), final_answer_spec()];
        let all = vec!["search".to_string(), "read_file".to_string()];
        specs.extend(toolbelt_specs(&all, &all[..1]));
        let add = specs.iter().find(|s| s.name == TOOLBELT_ADD).unwrap();
        assert_eq!(
            add.parameters["properties"]["name"]["enum"],
            serde_json::json!(["read_file"])
        );
        let remove = specs.iter().find(|s| s.name == TOOLBELT_REMOVE).unwrap();
        assert_eq!(
            remove.parameters["properties"]["name"]["enum"],
            serde_json::json!(["search"])
        );
        // Nothing to add once every tool is in: no add tool.
        assert!(!toolbelt_specs(&all, &all)
            .iter()
            .any(|s| s.name == TOOLBELT_ADD));
        for s in &specs {
            assert!(is_meta(&s.name));
            assert!(s.description.len() > 15, "{}: {:?}", s.name, s.description);
            assert_eq!(s.parameters["type"], "object", "{}", s.name);
            Grammar::JsonSchema(s.parameters.clone())
                .validate()
                .unwrap_or_else(|e| panic!("{}: {e}", s.name));
        }
        let todo = todo_write_spec();
        assert!(
            todo.parameters["properties"]["todos"].is_object(),
            "{}",
            todo.parameters
        );
        assert!(!is_meta("search"));
    }
}
