//! The tools the agent calls. A tool is a type with a `NAME` and a typed `Input` whose doc
//! comments are what the model reads (turned into a JSON Schema); types are erased only at the
//! registry, where the agent finds tools by name and calls them with JSON arguments.
//!
//! Every tool here is read-only: the workspace tools read the index and the indexed files, and
//! `calculate` evaluates arithmetic and touches nothing. None writes, deletes or executes
//! anything.

pub mod calculate;
pub mod locator;
pub mod mcp_client;
pub mod workspace;

pub use locator::Locator;

use std::sync::Arc;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::llm::grammar::{Grammar, GrammarError};

/// What a tool returns: compact text for the model's context, the same result as data for the
/// UI, and a locator for each item the text shows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolOutput {
    pub text: String,
    pub data: serde_json::Value,
    pub items: Vec<Locator>,
    /// The text is one item opened (an issue, a file, a commit), not a list of matches.
    pub opened: bool,
}

impl ToolOutput {
    pub fn new(text: impl Into<String>, data: impl Serialize) -> Self {
        ToolOutput {
            text: text.into(),
            data: serde_json::to_value(data).unwrap_or(serde_json::Value::Null),
            items: Vec::new(),
            opened: false,
        }
    }

    /// The text is this one item, opened.
    pub fn opening(mut self, item: Locator) -> Self {
        self.opened = true;
        self.with_items([item])
    }

    /// The items the text shows, in its order, each once.
    pub fn with_items(mut self, items: impl IntoIterator<Item = Locator>) -> Self {
        for item in items {
            if !self.items.contains(&item) {
                self.items.push(item);
            }
        }
        self
    }
}

/// Why a tool call failed. The model sees every one of these as an observation; only
/// `Transient` is worth retrying as is.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ToolError {
    /// The arguments do not fit the tool (the model's mistake; retrying the same call fails).
    #[error("invalid arguments: {0}")]
    InvalidArguments(String),
    /// The thing asked for does not exist.
    #[error("{0}")]
    NotFound(String),
    /// Outside what the tool may touch (a path outside the indexed repositories).
    #[error("refused: {0}")]
    Refused(String),
    /// A passing condition (the database is busy): the same call may work in a moment.
    #[error("temporarily unavailable: {0}")]
    Transient(String),
    /// The tool itself failed.
    #[error("tool failed: {0}")]
    Failed(String),
}

impl ToolError {
    pub fn is_retryable(&self) -> bool {
        matches!(self, ToolError::Transient(_))
    }
}

impl From<crate::workspace::WorkspaceError> for ToolError {
    fn from(e: crate::workspace::WorkspaceError) -> Self {
        use crate::workspace::WorkspaceError as W;
        if e.is_transient() {
            return ToolError::Transient(e.to_string());
        }
        match e {
            W::UnknownRepo { .. } | W::NotFound(_) => ToolError::NotFound(e.to_string()),
            W::BadQuery(m) => ToolError::InvalidArguments(m),
            W::BadSlug { .. } => ToolError::InvalidArguments(e.to_string()),
            W::Refused(m) => ToolError::Refused(m),
            other => ToolError::Failed(other.to_string()),
        }
    }
}

/// A tool with typed input.
pub trait Tool: Send + Sync + 'static {
    const NAME: &'static str;
    /// The arguments. Its doc comment is the tool's description; its fields' doc comments
    /// describe the parameters.
    type Input: JsonSchema + DeserializeOwned;
    /// The argument that names the one item the tool opens, where it opens one: the step
    /// grammar holds it to the items the run has seen (or the task names), so a model cannot
    /// open an issue number or a path it invented.
    const OPENS: Option<Opens> = None;

    fn run(&self, input: Self::Input) -> Result<ToolOutput, ToolError>;
}

/// A tool's argument that names an item to open, and which items it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Opens {
    pub argument: &'static str,
    pub items: OpensItems,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpensItems {
    /// Issues, by number.
    Issues,
    /// Pull requests, by number.
    PullRequests,
    /// Files, by path.
    File,
    /// Commits, by hash (cut as citations cut it).
    Commit,
}

impl Opens {
    /// The argument's value that opens `item`, when it is an item of this kind.
    pub fn value(&self, item: &Locator) -> Option<serde_json::Value> {
        match (self.items, item) {
            // A number the task names without saying what it is (`#12`, no repository) may be
            // either; the results name what each number they show is (the text protocol's
            // Qwen2.5-Coder-0.5B opened an issue with get_pull_request and was refused).
            (OpensItems::Issues, Locator::Issue { number, .. })
            | (OpensItems::PullRequests, Locator::PullRequest { number, .. })
            | (OpensItems::PullRequests, Locator::Issue { number, repo: None }) => {
                Some(serde_json::json!(number))
            }
            (OpensItems::File, Locator::File { path, .. }) => Some(serde_json::json!(path)),
            (OpensItems::Commit, Locator::Commit { hash, .. }) => Some(serde_json::json!(hash
                .chars()
                .take(locator::COMMIT_CITE_DIGITS)
                .collect::<String>())),
            _ => None,
        }
    }
}

/// A tool as the model sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments (an object).
    pub parameters: serde_json::Value,
    /// The argument that opens an item (see `Tool::OPENS`); the model is not told.
    #[serde(skip)]
    pub opens: Option<Opens>,
}

impl ToolSpec {
    /// The form chat templates take in `tools`.
    pub fn to_chat_tool(&self) -> serde_json::Value {
        serde_json::json!({
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            }
        })
    }
}

/// The schema of `T`, with subschemas inlined (small models follow flat schemas better, and
/// grammars need no references), split into description and parameters.
pub fn spec_for<T: JsonSchema>(name: &str) -> ToolSpec {
    let settings = schemars::generate::SchemaSettings::draft2020_12().with(|s| {
        s.inline_subschemas = true;
    });
    let schema = settings.into_generator().into_root_schema_for::<T>();
    let mut value = schema.to_value();
    unwrap_descriptions(&mut value);
    let description = value
        .get("description")
        .and_then(|d| d.as_str())
        .unwrap_or_default()
        .to_string();
    if let Some(o) = value.as_object_mut() {
        for key in ["$schema", "title", "description"] {
            o.remove(key);
        }
        // A tool without parameters takes an empty object, not any object: listed (empty)
        // properties close it in grammars, so a model cannot invent arguments.
        if o.get("type").and_then(|t| t.as_str()) == Some("object") {
            o.entry("properties")
                .or_insert_with(|| serde_json::json!({}));
        }
    }
    ToolSpec {
        name: name.to_string(),
        description,
        parameters: value,
        opens: None,
    }
}

/// Doc comments are wrapped at 100 columns; the model reads descriptions as prose, so line
/// breaks within a paragraph become spaces (blank lines stay).
fn unwrap_descriptions(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(o) => {
            for (k, child) in o.iter_mut() {
                match child {
                    serde_json::Value::String(s) if k == "description" => {
                        *s = s
                            .split("\n\n")
                            .map(|p| p.split('\n').map(str::trim).collect::<Vec<_>>().join(" "))
                            .collect::<Vec<_>>()
                            .join("\n\n");
                    }
                    other => unwrap_descriptions(other),
                }
            }
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(unwrap_descriptions),
        _ => {}
    }
}

trait ErasedTool: Send + Sync {
    fn spec(&self) -> &ToolSpec;
    fn call(&self, args: serde_json::Value) -> Result<ToolOutput, ToolError>;
}

struct Typed<T: Tool> {
    tool: T,
    spec: ToolSpec,
}

impl<T: Tool> ErasedTool for Typed<T> {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call(&self, args: serde_json::Value) -> Result<ToolOutput, ToolError> {
        // Models send `null` or nothing for a tool without parameters.
        let args = if args.is_null() {
            serde_json::json!({})
        } else {
            args
        };
        let input: T::Input = serde_json::from_value(args).map_err(|e| {
            ToolError::InvalidArguments(format!("{e} (expected: {})", self.spec.parameters))
        })?;
        self.tool.run(input)
    }
}

/// A tool known only at run time (an MCP server's): its spec, and a call on JSON arguments.
pub type DynamicCall =
    Box<dyn Fn(serde_json::Value) -> Result<ToolOutput, ToolError> + Send + Sync>;

struct Dynamic {
    spec: ToolSpec,
    call: DynamicCall,
}

impl ErasedTool for Dynamic {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call(&self, args: serde_json::Value) -> Result<ToolOutput, ToolError> {
        (self.call)(args)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error("a tool named {0:?} is already registered")]
    Duplicate(String),
    #[error("tool {name:?}: its parameters cannot become a grammar: {source}")]
    Ungrammatical {
        name: String,
        #[source]
        source: GrammarError,
    },
    #[error("tool {name:?}: its parameters cannot become a grammar: {why}")]
    Unusable { name: String, why: String },
}

/// How deep references into a schema's own definitions are written out.
const MAX_REF_DEPTH: usize = 16;

/// A tool's parameter schema as the step grammars hold it: references into its own `$defs`
/// (or `definitions`) written out where they are, since a step's grammar nests the schema,
/// where `#/$defs/…` points at nothing (a pydantic or zod schema of one MCP tool stopped
/// every step of every run); and the arguments an object where the schema says no type (`{}`,
/// which let the model write a string the tool refused).
pub fn grammar_ready(schema: &serde_json::Value) -> Result<serde_json::Value, String> {
    use serde_json::Value;
    let defs: serde_json::Map<String, Value> = ["$defs", "definitions"]
        .iter()
        .filter_map(|k| schema.get(*k).and_then(Value::as_object))
        .flat_map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())))
        .collect();
    fn resolve(
        v: &Value,
        defs: &serde_json::Map<String, Value>,
        depth: usize,
    ) -> Result<Value, String> {
        match v {
            Value::Object(o) => {
                let mut out = serde_json::Map::new();
                if let Some(r) = o.get("$ref").and_then(Value::as_str) {
                    let name = r
                        .strip_prefix("#/$defs/")
                        .or_else(|| r.strip_prefix("#/definitions/"))
                        .ok_or_else(|| format!("it refers to {r:?}, outside its definitions"))?;
                    let def = defs
                        .get(name)
                        .ok_or_else(|| format!("it refers to {r:?}, which it does not define"))?;
                    if depth >= MAX_REF_DEPTH {
                        return Err(format!(
                            "its definitions refer to themselves ({r:?}), which a grammar cannot \
                             write out"
                        ));
                    }
                    if let Value::Object(d) = resolve(def, defs, depth + 1)? {
                        out = d;
                    }
                }
                for (k, x) in o {
                    let x = match k.as_str() {
                        "$ref" | "$defs" | "definitions" => continue,
                        // Maps of names to schemas: the names are data (a parameter may be
                        // called `definitions`), each schema is resolved.
                        "properties" | "patternProperties" | "dependentSchemas" => match x {
                            Value::Object(m) => Value::Object(
                                m.iter()
                                    .map(|(n, s)| Ok((n.clone(), resolve(s, defs, depth)?)))
                                    .collect::<Result<_, String>>()?,
                            ),
                            other => other.clone(),
                        },
                        // Values, not schemas: kept as written.
                        "default" | "enum" | "const" | "examples" | "required" => x.clone(),
                        _ => resolve(x, defs, depth)?,
                    };
                    out.insert(k.clone(), x);
                }
                Ok(Value::Object(out))
            }
            Value::Array(a) => a
                .iter()
                .map(|x| resolve(x, defs, depth))
                .collect::<Result<_, _>>()
                .map(Value::Array),
            other => Ok(other.clone()),
        }
    }
    let mut out = resolve(schema, &defs, 0)?;
    let Value::Object(o) = &mut out else {
        return Err("it is not a JSON schema object".into());
    };
    match o.get("type") {
        None => {
            o.insert("type".into(), Value::String("object".into()));
        }
        Some(t) if t == "object" => {}
        Some(t) => return Err(format!("its arguments must be an object, not {t}")),
    }
    Ok(out)
}

/// The tools the agent can use, in registration order.
#[derive(Default, Clone)]
pub struct ToolRegistry {
    tools: Vec<Arc<dyn ErasedTool>>,
    /// How many came from outside Burrow at run time (an MCP server's).
    dynamic: usize,
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.tools.iter().map(|t| &t.spec().name))
            .finish()
    }
}

impl ToolRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a tool. Its parameter schema must compile to a grammar: steps are decoded under one,
    /// and a schema that cannot be enforced is better found now than in the middle of a run.
    pub fn register<T: Tool>(&mut self, tool: T) -> Result<(), RegistryError> {
        let spec = ready(ToolSpec {
            opens: T::OPENS,
            ..spec_for::<T::Input>(T::NAME)
        })?;
        self.add(Arc::new(Typed { tool, spec }))
    }

    /// Adds a tool known only at run time, under the same rules as `register`: a new name, and
    /// parameters that compile to a grammar.
    pub fn register_dynamic(
        &mut self,
        spec: ToolSpec,
        call: DynamicCall,
    ) -> Result<(), RegistryError> {
        let spec = ready(spec)?;
        self.add(Arc::new(Dynamic { spec, call }))?;
        self.dynamic += 1;
        Ok(())
    }

    /// Whether any tool came from outside Burrow (`register_dynamic`): those may answer from
    /// elsewhere than the workspace.
    pub fn has_dynamic(&self) -> bool {
        self.dynamic > 0
    }

    fn add(&mut self, tool: Arc<dyn ErasedTool>) -> Result<(), RegistryError> {
        let spec = tool.spec();
        if self.get(&spec.name).is_some() {
            return Err(RegistryError::Duplicate(spec.name.clone()));
        }
        Grammar::JsonSchema(spec.parameters.clone())
            .validate()
            .map_err(|source| RegistryError::Ungrammatical {
                name: spec.name.clone(),
                source,
            })?;
        self.tools.push(tool);
        Ok(())
    }

    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools.iter().map(|t| t.spec().clone()).collect()
    }

    pub fn names(&self) -> Vec<String> {
        self.tools.iter().map(|t| t.spec().name.clone()).collect()
    }

    pub fn spec(&self, name: &str) -> Option<ToolSpec> {
        self.get(name).map(|t| t.spec().clone())
    }

    fn get(&self, name: &str) -> Option<&Arc<dyn ErasedTool>> {
        self.tools.iter().find(|t| t.spec().name == name)
    }

    /// Calls a tool by name with JSON arguments.
    pub fn call(&self, name: &str, args: serde_json::Value) -> Result<ToolOutput, ToolError> {
        match self.get(name) {
            Some(t) => t.call(args),
            None => Err(ToolError::NotFound(format!(
                "no tool named {name:?}; the tools are: {}",
                self.names().join(", ")
            ))),
        }
    }
}

/// `spec` with its parameters as grammars take them (`grammar_ready`).
fn ready(mut spec: ToolSpec) -> Result<ToolSpec, RegistryError> {
    spec.parameters = grammar_ready(&spec.parameters).map_err(|why| RegistryError::Unusable {
        name: spec.name.clone(),
        why,
    })?;
    Ok(spec)
}

/// Every tool the agent has: the workspace's, and `calculate`.
pub fn all_tools(ws: Arc<crate::workspace::Workspace>) -> Result<ToolRegistry, RegistryError> {
    let mut r = workspace::workspace_tools(ws)?;
    r.register(calculate::Calculate)?;
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Says hello to someone.
    #[derive(serde::Deserialize, JsonSchema)]
    struct HelloInput {
        /// Who to greet.
        name: String,
        /// How many times.
        #[serde(default)]
        times: Option<u32>,
    }

    struct Hello;

    impl Tool for Hello {
        const NAME: &'static str = "hello";
        type Input = HelloInput;
        fn run(&self, input: HelloInput) -> Result<ToolOutput, ToolError> {
            let n = input.times.unwrap_or(1) as usize;
            Ok(ToolOutput::new(
                vec![format!("hello {}", input.name); n].join(" "),
                (),
            ))
        }
    }

    #[test]
    fn doc_comments_become_the_spec_and_calls_are_typed() {
        let mut reg = ToolRegistry::new();
        reg.register(Hello).unwrap();
        let spec = reg.spec("hello").unwrap();
        assert_eq!(spec.description, "Says hello to someone.");
        assert_eq!(
            spec.parameters["properties"]["name"]["description"],
            "Who to greet."
        );
        assert_eq!(spec.parameters["required"], serde_json::json!(["name"]));
        let out = reg
            .call("hello", serde_json::json!({"name": "Ann", "times": 2}))
            .unwrap();
        assert_eq!(out.text, "hello Ann hello Ann");
        let e = reg
            .call("hello", serde_json::json!({"times": 2}))
            .unwrap_err();
        assert!(
            matches!(e, ToolError::InvalidArguments(_)) && e.to_string().contains("name"),
            "{e}"
        );
        assert!(!e.is_retryable());
        let e = reg.call("goodbye", serde_json::json!({})).unwrap_err();
        assert!(e.to_string().contains("hello"), "{e}");
        assert!(matches!(
            reg.register(Hello),
            Err(RegistryError::Duplicate(_))
        ));
    }

    #[test]
    fn a_parameter_named_definitions_is_kept() {
        let s = serde_json::json!({
            "type": "object",
            "properties": {"definitions": {"type": "string"}, "$defs": {"type": "string"}},
            "required": ["definitions"]
        });
        let r = grammar_ready(&s).unwrap();
        assert!(r["properties"].get("definitions").is_some(), "{r}");
    }
}
