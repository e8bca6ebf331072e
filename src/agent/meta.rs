//! The meta-tools the loop itself answers: the plan (`todo_write`), the end of a run
//! (`final_answer`, for native tool calling) and the toolbelt, which lets a run start with few
//! tools and take on the ones it needs. Their inputs are typed like every tool's, so their
//! doc comments are what the model reads and their schemas become grammars.

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::events::AgentEvent;
use super::prompt;
use super::protocol::TodoChange;
use super::state::RunState;
use super::todo::TodoWrite;
use crate::tools::{spec_for, ToolError, ToolRegistry, ToolSpec};

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
    /// The items the answer rests on, as the results named them: repo#12, repo:path:line,
    /// repo@hash. None when the workspace does not hold the answer.
    #[serde(default)]
    pub citations: Vec<String>,
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
    let mut spec = spec::<TodoWriteTool>();
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
        spec::<ToolbeltList>(),
        with_names(spec::<ToolbeltInspect>(), all.iter().collect()),
    ];
    if !addable.is_empty() {
        specs.push(with_names(spec::<ToolbeltAdd>(), addable));
    }
    if !active.is_empty() {
        specs.push(with_names(
            spec::<ToolbeltRemove>(),
            active.iter().collect(),
        ));
    }
    specs
}

/// What a meta-tool works on: the run's own state, the tools the toolbelt takes from, and
/// the run's event stream (a plan change is shown as it happens).
pub(super) struct MetaContext<'r> {
    pub state: &'r mut RunState,
    pub tools: &'r ToolRegistry,
    pub on_event: &'r mut dyn FnMut(AgentEvent),
}

/// A tool the loop answers itself, over the run's state. Like every tool it has a `NAME` and a
/// typed `Input` whose doc comments the model reads; it is erased only in `call`.
pub(super) trait MetaTool {
    const NAME: &'static str;
    type Input: JsonSchema + DeserializeOwned;

    fn call(input: Self::Input, cx: &mut MetaContext<'_>) -> Result<String, ToolError>;
}

fn spec<T: MetaTool>() -> ToolSpec {
    spec_for::<T::Input>(T::NAME)
}

/// Runs `name` when it is a meta-tool this run has: the plan's, where the protocol plans
/// with a tool, and the toolbelt's, while the toolbelt is on. `None` for any other name.
pub(super) fn call(
    name: &str,
    args: &Map<String, Value>,
    plan_tool: bool,
    cx: &mut MetaContext<'_>,
) -> Option<Result<String, ToolError>> {
    fn typed<T: MetaTool>(
        args: &Map<String, Value>,
        cx: &mut MetaContext<'_>,
    ) -> Result<String, ToolError> {
        let input = serde_json::from_value(Value::Object(args.clone()))
            .map_err(|e| ToolError::InvalidArguments(e.to_string()))?;
        T::call(input, cx)
    }
    let toolbelt = cx.state.toolbelt;
    Some(match name {
        TODO_WRITE if plan_tool => typed::<TodoWriteTool>(args, cx),
        TOOLBELT_LIST if toolbelt => typed::<ToolbeltList>(args, cx),
        TOOLBELT_INSPECT if toolbelt => typed::<ToolbeltInspect>(args, cx),
        TOOLBELT_ADD if toolbelt => typed::<ToolbeltAdd>(args, cx),
        TOOLBELT_REMOVE if toolbelt => typed::<ToolbeltRemove>(args, cx),
        _ => return None,
    })
}

struct TodoWriteTool;

impl MetaTool for TodoWriteTool {
    const NAME: &'static str = TODO_WRITE;
    type Input = TodoWrite;

    fn call(input: TodoWrite, cx: &mut MetaContext<'_>) -> Result<String, ToolError> {
        cx.state
            .change_plan(&TodoChange::Write(input), cx.on_event)
            .map_err(|e| ToolError::InvalidArguments(e.to_string()))?;
        let plan = format!("The plan is now:\n{}", cx.state.plan.render());
        // Qwen2.5-Coder-0.5B marked the item it had found "completed" in the plan, step after
        // step, as if that were the answer: a plan with nothing left to do says what is next.
        Ok(if cx.state.plan.actionable().is_empty() {
            format!("{plan}\n{}", crate::notes::PLAN_DONE)
        } else {
            plan
        })
    }
}

struct ToolbeltList;

impl MetaTool for ToolbeltList {
    const NAME: &'static str = TOOLBELT_LIST;
    type Input = ToolbeltListInput;

    fn call(_: ToolbeltListInput, cx: &mut MetaContext<'_>) -> Result<String, ToolError> {
        Ok(cx
            .tools
            .specs()
            .iter()
            .map(|s| {
                let first = s.description.split(". ").next().unwrap_or("");
                let mark = if cx.state.active.contains(&s.name) {
                    " (in the toolbelt)"
                } else {
                    ""
                };
                format!("- {}{mark}: {first}", s.name)
            })
            .collect::<Vec<_>>()
            .join("\n"))
    }
}

/// The registered tool a toolbelt call names.
fn named(tools: &ToolRegistry, name: &str) -> Result<ToolSpec, ToolError> {
    tools.spec(name).ok_or_else(|| {
        ToolError::NotFound(format!(
            "no tool named {name:?}; {TOOLBELT_LIST} lists them"
        ))
    })
}

struct ToolbeltInspect;

impl MetaTool for ToolbeltInspect {
    const NAME: &'static str = TOOLBELT_INSPECT;
    type Input = ToolbeltInspectInput;

    fn call(input: ToolbeltInspectInput, cx: &mut MetaContext<'_>) -> Result<String, ToolError> {
        Ok(prompt::tool_details(&named(cx.tools, &input.name)?))
    }
}

struct ToolbeltAdd;

impl MetaTool for ToolbeltAdd {
    const NAME: &'static str = TOOLBELT_ADD;
    type Input = ToolbeltAddInput;

    fn call(input: ToolbeltAddInput, cx: &mut MetaContext<'_>) -> Result<String, ToolError> {
        let spec = named(cx.tools, &input.name)?;
        if !cx.state.active.contains(&spec.name) {
            cx.state.active.push(spec.name.clone());
        }
        // A call that failed because the tool was not there may work now.
        cx.state.failed.clear();
        Ok(format!(
            "{} is in the toolbelt; call it from the next step: {}",
            spec.name,
            prompt::tool_signature(&spec)
        ))
    }
}

struct ToolbeltRemove;

impl MetaTool for ToolbeltRemove {
    const NAME: &'static str = TOOLBELT_REMOVE;
    type Input = ToolbeltRemoveInput;

    fn call(input: ToolbeltRemoveInput, cx: &mut MetaContext<'_>) -> Result<String, ToolError> {
        let spec = named(cx.tools, &input.name)?;
        cx.state.active.retain(|n| *n != spec.name);
        Ok(format!("{} was removed from the toolbelt.", spec.name))
    }
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
