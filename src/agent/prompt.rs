//! The agent's prompt. A minijinja template (Burrow's default, or the user's own file) renders
//! the system message once per run and an observation after each step; the messages are then
//! rendered by the model's own chat template. The system message, the task and every step
//! already taken never change, so each step's prompt extends the last one and the KV cache
//! keeps all of it: only the new output and observation are evaluated. The plan changes every
//! step, so it travels with the newest observation, at the end.

use std::path::{Path, PathBuf};

use minijinja::value::Value as JinjaValue;
use minijinja::Environment;
use serde::Serialize;
use serde_json::{Map, Value};

use super::protocol::Protocol;
use crate::llm::template::{json_to_value, ChatMessage, FunctionCall, ToolCall};
use crate::tools::ToolSpec;

pub const DEFAULT_PERSONA: &str = "You are Burrow, an assistant that answers questions about \
     the user's own code, commits, issues and pull requests from their local workspace.";

const DEFAULT_TEMPLATE: &str = include_str!("prompts/default.jinja");

#[derive(Debug, thiserror::Error)]
pub enum PromptError {
    #[error("cannot read the prompt template {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("prompt template {name}: {message}")]
    Template { name: String, message: String },
}

/// What a prompt template is rendered with.
#[derive(Debug, Clone)]
pub struct PromptVars<'a> {
    pub persona: &'a str,
    /// What the model should know about the workspace up front (its repositories).
    pub task_context: &'a str,
    pub tools: &'a [ToolSpec],
    pub protocol: Protocol,
    /// The plan is changed through the `todo_write` tool (every protocol but `json-typed`).
    pub plan_tools: bool,
    /// `tool-calls` through a chat template that shows the model the tools and formats its
    /// calls. When the model's template ignores `tools` (SmolLM2's does), this is false and
    /// the prompt lists the tools and the call format itself.
    pub native_tools: bool,
    /// A worked example of a run in the protocol's format (empty: none).
    pub example: String,
}

/// A compiled prompt template.
pub struct PromptTemplate {
    name: String,
    env: Environment<'static>,
}

impl std::fmt::Debug for PromptTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PromptTemplate")
            .field("name", &self.name)
            .finish()
    }
}

impl PromptTemplate {
    pub fn builtin() -> Result<Self, PromptError> {
        Self::from_source("(built in)", DEFAULT_TEMPLATE.to_string())
    }

    pub fn from_file(path: &Path) -> Result<Self, PromptError> {
        let source = std::fs::read_to_string(path).map_err(|source| PromptError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::from_source(&path.display().to_string(), source)
    }

    fn from_source(name: &str, source: String) -> Result<Self, PromptError> {
        let mut env = Environment::new();
        env.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
        env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
        env.add_template_owned("prompt", source)
            .map_err(|e| template_error(name, &e))?;
        Ok(PromptTemplate {
            name: name.to_string(),
            env,
        })
    }

    fn call(
        &self,
        vars: &PromptVars<'_>,
        macro_name: &str,
        args: &[JinjaValue],
    ) -> Result<String, PromptError> {
        let err = |e: minijinja::Error| template_error(&self.name, &e);
        let tmpl = self.env.get_template("prompt").map_err(err)?;
        let ctx = minijinja::context! {
            persona => vars.persona,
            task_context => vars.task_context,
            tools => json_to_value(&serde_json::to_value(
                vars.tools.iter().map(ToolView::new).collect::<Vec<_>>()
            ).unwrap_or(Value::Null)),
            protocol => vars.protocol.as_str(),
            format => vars.protocol.expected_format(),
            plan_tools => vars.plan_tools,
            native_tools => vars.native_tools,
            example => vars.example.as_str(),
        };
        let mut captured = tmpl.render_captured(ctx).map_err(err)?;
        captured
            .with_state_mut(|state| state.call_macro(macro_name, args))
            .map_err(|e| {
                if e.kind() == minijinja::ErrorKind::UnknownFunction {
                    PromptError::Template {
                        name: self.name.clone(),
                        message: format!("it defines no {macro_name}() macro"),
                    }
                } else {
                    err(e)
                }
            })
    }

    /// The system message.
    pub fn system(&self, vars: &PromptVars<'_>) -> Result<String, PromptError> {
        self.call(vars, "system", &[]).map(|s| s.trim().to_string())
    }

    /// What the model reads after a step: its observation, and the plan as it stands.
    pub fn observation(
        &self,
        vars: &PromptVars<'_>,
        text: &str,
        plan: &str,
    ) -> Result<String, PromptError> {
        self.call(vars, "observation", &[text.into(), plan.into()])
            .map(|s| s.trim().to_string())
    }
}

fn template_error(name: &str, e: &minijinja::Error) -> PromptError {
    let mut message = e.to_string();
    if let Some(line) = e.line() {
        if !message.contains("line") {
            message.push_str(&format!(" (line {line})"));
        }
    }
    PromptError::Template {
        name: name.to_string(),
        message,
    }
}

/// A tool as templates see it: its schema, and its arguments listed for a compact prompt.
#[derive(Debug, Serialize)]
struct ToolView {
    name: String,
    description: String,
    parameters: Value,
    arguments: Vec<ArgumentView>,
    /// The tool in a line (`tool_signature`): what the default prompt lists. The grammar
    /// holds each call to the whole schema, so the prompt need not spell every argument out;
    /// a listing in full took 1,300 of a 2,400-token first prompt.
    signature: String,
}

#[derive(Debug, Serialize)]
struct ArgumentView {
    name: String,
    #[serde(rename = "type")]
    kind: String,
    required: bool,
    description: String,
}

impl ToolView {
    fn new(t: &ToolSpec) -> Self {
        let required: Vec<&str> = t.parameters["required"]
            .as_array()
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let arguments = t.parameters["properties"]
            .as_object()
            .map(|props| {
                props
                    .iter()
                    .map(|(name, schema)| ArgumentView {
                        name: name.clone(),
                        kind: type_name(schema),
                        required: required.contains(&name.as_str()),
                        description: schema["description"].as_str().unwrap_or("").to_string(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let mut view = ToolView {
            name: t.name.clone(),
            description: t.description.clone(),
            parameters: t.parameters.clone(),
            arguments,
            signature: String::new(),
        };
        view.signature = signature(&view);
        view
    }
}

/// A tool in one line: its name, its arguments with their types (`?` after an optional one)
/// and the first sentence of its description. The toolbelt answers with this when a tool is
/// added mid-run: the observation is evaluated anew at every such step, so it stays short; the
/// grammar holds the call to the whole schema anyway.
pub fn tool_signature(spec: &ToolSpec) -> String {
    ToolView::new(spec).signature
}

fn signature(view: &ToolView) -> String {
    let arguments: Vec<String> = view
        .arguments
        .iter()
        .map(|a| {
            let optional = if a.required { "" } else { "?" };
            format!("{}{optional}: {}", a.name, a.kind)
        })
        .collect();
    // The first sentence, or line: a docstring-style description ("Reads a file.\n\nArgs: …")
    // came in whole, its lines at the start of the prompt's own.
    let description = view.description.trim();
    let line = description.lines().next().unwrap_or_default().trim();
    let first = match line.find(". ") {
        Some(end) => &line[..=end],
        None => line,
    };
    // `;` between arguments: an enum's values are already separated by commas.
    format!("{}({}): {first}", view.name, arguments.join("; "))
}

/// A tool in full, as the default prompt lists it: its description, then a line per argument
/// with its type and description. `toolbelt_inspect_tool` answers with this.
pub fn tool_details(spec: &ToolSpec) -> String {
    let view = ToolView::new(spec);
    let mut text = format!("{}: {}", view.name, view.description.trim());
    for a in &view.arguments {
        let required = if a.required { ", required" } else { "" };
        text.push_str(&format!("\n    {} ({}{required})", a.name, a.kind));
        if !a.description.is_empty() {
            text.push_str(&format!(": {}", a.description));
        }
    }
    text
}

/// A schema's type in a few words: `string`, `integer`, `one of "issue", "pr"`, `list of
/// string`. Enum values are quoted as JSON, as the model must write them, and so that a list of
/// them cannot be read on into the `, required` that may follow.
fn type_name(schema: &Value) -> String {
    if let Some(values) = schema["enum"].as_array() {
        // A null among the values only says the argument may be left out.
        let names: Vec<String> = values
            .iter()
            .filter(|v| !v.is_null())
            .map(Value::to_string)
            .collect();
        return format!("one of {}", names.join(", "));
    }
    let kind = match &schema["type"] {
        Value::String(s) => s.clone(),
        // ["string", "null"]: an optional value.
        Value::Array(a) => a
            .iter()
            .filter_map(Value::as_str)
            .filter(|t| *t != "null")
            .collect::<Vec<_>>()
            .join(" or "),
        _ => {
            // An option of an enum or object: anyOf [{...}, {"type": "null"}].
            let inner = schema["anyOf"]
                .as_array()
                .and_then(|a| a.iter().find(|s| s["type"] != "null"));
            return inner.map_or_else(|| "value".to_string(), type_name);
        }
    };
    if kind == "array" {
        return format!("list of {}", type_name(&schema["items"]));
    }
    kind
}

/// What the workspace holds, in a line per repository, for the prompt's start.
pub fn workspace_summary(
    ws: &crate::workspace::Workspace,
) -> Result<String, crate::workspace::WorkspaceError> {
    let lines: Vec<String> = ws
        .status()?
        .iter()
        .map(|r| {
            let mut parts = Vec::new();
            for (n, what) in [
                (r.files, "files"),
                (r.commits, "commits"),
                (r.issues, "issues"),
                (r.pull_requests, "pull requests"),
                (r.documents, "documents"),
            ] {
                if n > 0 {
                    parts.push(format!("{n} {what}"));
                }
            }
            format!("- {} ({})", r.repo.name, parts.join(", "))
        })
        .collect();
    Ok(if lines.is_empty() {
        "The workspace is empty: nothing is indexed yet.".into()
    } else {
        lines.join("\n")
    })
}

/// One step as the prompt replays it.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    /// What the model wrote.
    pub output: String,
    /// The thought alone (for `tool-calls`, the assistant message's text).
    pub thought: String,
    /// The tool called, for `tool-calls`, where the call is a structured message.
    pub call: Option<(String, Map<String, Value>)>,
    /// The rendered observation (see `PromptTemplate::observation`).
    pub observation: String,
}

/// The chat messages of a run so far: system, task, then each step and its observation. With
/// `native_calls`, tool calls are structured messages the chat template formats (and results
/// are `tool` messages); otherwise each step is replayed as the model wrote it, and its
/// observation is a user message.
pub fn messages(system: &str, task: &str, turns: &[Turn], native_calls: bool) -> Vec<ChatMessage> {
    let mut out = vec![ChatMessage::system(system), ChatMessage::user(task)];
    for (i, t) in turns.iter().enumerate() {
        match &t.call {
            Some((name, args)) if native_calls => {
                let id = format!("call_{i}");
                out.push(ChatMessage {
                    role: "assistant".into(),
                    content: t.thought.clone(),
                    tool_calls: vec![ToolCall {
                        id: id.clone(),
                        kind: "function".into(),
                        function: FunctionCall {
                            name: name.clone(),
                            arguments: Value::Object(args.clone()),
                        },
                    }],
                    ..Default::default()
                });
                out.push(ChatMessage::tool(&id, name, t.observation.clone()));
            }
            _ => {
                out.push(ChatMessage::assistant(t.output.clone()));
                out.push(ChatMessage::user(t.observation.clone()));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::protocol::PROTOCOLS;
    use crate::tools::calculate::CalculateInput;
    use crate::tools::spec_for;

    /// Finds issues.
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct FindInput {
        /// Words to look for.
        query: String,
        /// open or closed.
        state: Option<State>,
        /// Labels.
        labels: Option<Vec<String>>,
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[serde(rename_all = "snake_case")]
    #[allow(dead_code)]
    enum State {
        Open,
        Closed,
    }

    fn tools() -> Vec<ToolSpec> {
        vec![
            spec_for::<FindInput>("find_issues"),
            spec_for::<CalculateInput>("calculate"),
        ]
    }

    fn vars(protocol: Protocol, tools: &[ToolSpec]) -> PromptVars<'_> {
        PromptVars {
            persona: DEFAULT_PERSONA,
            task_context: "Repositories: acme/app (git, 120 files), bitcoin-core/gui (issues)",
            tools,
            protocol,
            plan_tools: !protocol.has_plan_field(),
            native_tools: protocol.calls_natively(),
            example: String::new(),
        }
    }

    #[test]
    fn system_prompts_of_every_protocol() {
        let t = PromptTemplate::builtin().unwrap();
        let tools = tools();
        for p in PROTOCOLS {
            let system = t.system(&vars(p, &tools)).unwrap();
            insta::assert_snapshot!(format!("system_{}", p.as_str()), system);
        }
    }

    #[test]
    fn arguments_are_listed_with_their_types() {
        let t = PromptTemplate::builtin().unwrap();
        let tools = tools();
        let system = t.system(&vars(Protocol::Text, &tools)).unwrap();
        // A line a tool (issue 22: a listing in full took most of a small model's prompt).
        assert!(
            system.contains(
                "- find_issues(query: string; state?: one of \"open\", \"closed\"; labels?: list of string): Finds issues.\n"
            ),
            "{system}"
        );
        // Native tool calling gets the tools through the chat template instead.
        let system = t.system(&vars(Protocol::ToolCalls, &tools)).unwrap();
        assert!(!system.contains("query: string"), "{system}");
        // A chat template that ignores the tools: the prompt lists them and the call format.
        let emulated = PromptVars {
            native_tools: false,
            example: String::new(),
            ..vars(Protocol::ToolCalls, &tools)
        };
        let system = t.system(&emulated).unwrap();
        insta::assert_snapshot!("system_tool-calls_emulated", system);
        assert!(system.contains("find_issues(query: string;"), "{system}");
        assert!(system.contains("<tool_call>"), "{system}");
    }

    #[test]
    fn a_tool_signature_is_one_line_with_every_argument() {
        let tools = tools();
        assert_eq!(
            tool_signature(&tools[0]),
            "find_issues(query: string; state?: one of \"open\", \"closed\"; \
             labels?: list of string): Finds issues."
        );
        let calculate = tool_signature(&tools[1]);
        assert!(
            calculate.starts_with("calculate(expression: string): "),
            "{calculate}"
        );
        assert!(!calculate.contains('\n'), "{calculate}");
        // As the system prompt lists tools; in full (with each argument's description), as
        // the toolbelt's inspect tool shows one.
        let system = PromptTemplate::builtin()
            .unwrap()
            .system(&vars(Protocol::Text, &tools))
            .unwrap();
        assert!(
            system.contains(&format!("- {}\n", tool_signature(&tools[0]))),
            "{system}"
        );
        assert!(tool_details(&tools[0]).contains("query (string, required): Words to look for."));
    }

    #[test]
    fn observations_carry_the_plan() {
        let t = PromptTemplate::builtin().unwrap();
        let tools = tools();
        let o = t
            .observation(
                &vars(Protocol::Text, &tools),
                "3 results",
                "[ ] 1: Search (pending)",
            )
            .unwrap();
        assert_eq!(
            o,
            "Observation: 3 results\n\nPlan:\n[ ] 1: Search (pending)"
        );
        let o = t
            .observation(&vars(Protocol::ToolCalls, &tools), "3 results", "")
            .unwrap();
        assert_eq!(o, "3 results");
        let emulated = PromptVars {
            native_tools: false,
            example: String::new(),
            ..vars(Protocol::ToolCalls, &tools)
        };
        let o = t.observation(&emulated, "3 results", "").unwrap();
        assert_eq!(o, "<tool_response>\n3 results\n</tool_response>");
    }

    #[test]
    fn earlier_messages_never_change_as_steps_are_added() {
        let turn = |i: usize| Turn {
            output: format!("{{\"thought\": \"t{i}\"}}"),
            thought: format!("t{i}"),
            call: Some(("calculate".into(), Map::new())),
            observation: format!("Observation: {i}"),
        };
        for native in [false, true] {
            let two = messages("sys", "task", &[turn(0), turn(1)], native);
            let three = messages("sys", "task", &[turn(0), turn(1), turn(2)], native);
            assert_eq!(two.len(), 6);
            assert_eq!(three[..6], two[..], "native calls: {native}");
        }
        let m = messages("sys", "task", &[turn(0)], true);
        assert_eq!(m[2].tool_calls[0].function.name, "calculate");
        assert_eq!(m[3].role, "tool");
        assert_eq!(m[3].tool_call_id.as_deref(), Some("call_0"));
        // Replayed as written: the call is in the assistant's text, the result a user message.
        let m = messages("sys", "task", &[turn(0)], false);
        assert!(m[2].tool_calls.is_empty());
        assert_eq!(m[2].content, turn(0).output);
        assert_eq!(m[3].role, "user");
    }

    #[test]
    fn a_template_of_ones_own_is_checked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mine.jinja");
        std::fs::write(
            &path,
            "{% macro system() %}{{ persona }} with {{ tools | length }} tools{% endmacro %}\
             {% macro observation(text, plan) %}Result: {{ text }}{% endmacro %}",
        )
        .unwrap();
        let t = PromptTemplate::from_file(&path).unwrap();
        let tools = tools();
        let v = PromptVars {
            persona: "Bot",
            ..vars(Protocol::Text, &tools)
        };
        assert_eq!(t.system(&v).unwrap(), "Bot with 2 tools");
        assert_eq!(t.observation(&v, "x", "").unwrap(), "Result: x");

        std::fs::write(&path, "{% macro system() %}{{ persona }{% endmacro %}").unwrap();
        let e = PromptTemplate::from_file(&path).unwrap_err().to_string();
        assert!(e.contains("mine.jinja") && e.contains("line 1"), "{e}");
        std::fs::write(&path, "{% macro system() %}{{ nonsense }}{% endmacro %}").unwrap();
        let t = PromptTemplate::from_file(&path).unwrap();
        let e = t.system(&v).unwrap_err().to_string();
        assert!(e.contains("undefined"), "{e}");
        let e = t.observation(&v, "x", "").unwrap_err().to_string();
        assert!(e.contains("no observation() macro"), "{e}");
        let e = PromptTemplate::from_file(&dir.path().join("none.jinja"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("none.jinja"), "{e}");
    }
}
