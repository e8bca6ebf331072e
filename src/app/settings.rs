//! The app's settings, kept in `$BURROW_HOME/settings.json`: how runs go (protocol, limits,
//! sampling, grammar, summarization, the plan gate) and each model's load settings.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::agent::protocol::{Protocol, PROTOCOLS};
use crate::agent::AgentConfig;
use crate::config::BurrowHome;
use crate::llm::llama::LoadOptions;

pub const SETTINGS_FILE: &str = "settings.json";

#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("{field}: {reason}")]
    Invalid { field: &'static str, reason: String },
    #[error("{path}: invalid settings: {reason}")]
    Parse { path: PathBuf, reason: String },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// What the Settings screen edits. Missing fields take their defaults, so older files load.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    /// The ReAct dialect (docs/measurements/answers.md shows why json-typed is the default).
    pub protocol: String,
    pub max_steps: usize,
    /// 0 decodes greedily (reproducible runs).
    pub temperature: f32,
    /// Decode every step under the protocol's grammar.
    pub grammar: bool,
    /// Before the model's first step, search the workspace with the task and open the best
    /// match.
    pub search_first: bool,
    /// The run starts with the model's choice of its first call, with filters held to what
    /// the task names (`agent/route.rs`).
    pub route_first: bool,
    /// Share of the context window past which older steps are summarized.
    pub summarize_at: f64,
    /// Refuse a final answer while the plan has open items.
    pub require_plan_done: bool,
    /// Who the agent is, in a line; empty keeps the built-in persona.
    pub persona: String,
    /// The embedding model search ranks by meaning with: a GGUF file's path or a catalogue
    /// id; empty keeps the catalogue's (all-MiniLM-L6-v2). Another model embeds the
    /// workspace again.
    pub embedding_model: String,
    /// What each query and each searchable unit is given before it is embedded, in place of
    /// the embedding model's own prompts (Burrow knows those of nomic-embed, bge, e5,
    /// arctic-embed, mxbai, EmbeddingGemma, gte-Qwen and Qwen3-Embedding), for the model they
    /// name. None: the model's own. Another document prompt embeds the workspace again.
    pub embedding_prompts: Option<EmbeddingPrompts>,
    /// Load settings per model, keyed by the model's file path; unset fields take the
    /// engine's defaults.
    #[serde(deserialize_with = "objects")]
    pub models: BTreeMap<String, LoadOptions>,
    /// MCP servers whose tools join the agent's toolbelt (started only for runs).
    pub mcp_servers: Vec<crate::tools::mcp_client::McpServerConfig>,
    /// The model in use, served over the OpenAI API on this machine (`burrow serve` from the
    /// app).
    #[serde(deserialize_with = "object")]
    pub serve: ServeSettings,
}

/// Texts put before a query and before a document for the embedding model they were written
/// for.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct EmbeddingPrompts {
    /// The embedding model they are for, as `embedding_model` names it (empty: the
    /// catalogue's); any other model has its own.
    pub model: String,
    pub query: String,
    pub document: String,
}

#[derive(Default, Deserialize)]
// A misspelt field ("qurey") would be dropped, and the model embedded without that prompt.
#[serde(default, deny_unknown_fields)]
struct PromptsFields {
    model: String,
    query: String,
    document: String,
}

/// From an object alone (see [`Object`]): `["search_query: ", "search_document: "]` became the
/// prompts of a model named "search_query: ", with the document prompt as the query's.
impl<'de> Deserialize<'de> for EmbeddingPrompts {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let f = object::<D, PromptsFields>(d)?;
        Ok(EmbeddingPrompts {
            model: f.model,
            query: f.query,
            document: f.document,
        })
    }
}

/// A settings object read from a JSON object alone: serde's derive also takes a list for a
/// struct, by position, and with defaults for every field a list of a few values passed for
/// settings (`["tool-calls", 3]`: that protocol, 3 steps).
struct Object<T>(T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Fields<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for Fields<T> {
            type Value = T;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object of settings")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                T::deserialize(serde::de::value::MapAccessDeserializer::new(map))
            }
        }
        d.deserialize_map(Fields(std::marker::PhantomData))
            .map(Object)
    }
}

fn object<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<T, D::Error> {
    Object::<T>::deserialize(d).map(|o| o.0)
}

/// A map whose values are settings objects, each read from an object alone.
fn objects<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<BTreeMap<String, T>, D::Error> {
    let map = BTreeMap::<String, Object<T>>::deserialize(d)?;
    Ok(map.into_iter().map(|(k, v)| (k, v.0)).collect())
}

/// Whether the app serves the model in use over the OpenAI API, and where.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ServeSettings {
    /// Serving now, and again when the app next opens.
    pub enabled: bool,
    /// On 127.0.0.1 (the app never serves other machines).
    pub port: u16,
    /// The environment variable holding the key clients must send; empty: none. The key
    /// itself is never saved.
    pub api_key_env: String,
}

impl Default for ServeSettings {
    fn default() -> Self {
        ServeSettings {
            enabled: false,
            port: 8089,
            api_key_env: String::new(),
        }
    }
}

impl Default for Settings {
    fn default() -> Self {
        let agent = AgentConfig::default();
        Settings {
            protocol: agent.protocol.as_str().to_string(),
            max_steps: agent.max_steps,
            temperature: agent.sampling.temperature,
            grammar: agent.grammar,
            search_first: agent.search_first,
            route_first: true,
            summarize_at: agent.summarize_at,
            require_plan_done: agent.require_plan_done,
            persona: String::new(),
            embedding_model: String::new(),
            embedding_prompts: None,
            models: BTreeMap::new(),
            mcp_servers: Vec::new(),
            serve: ServeSettings::default(),
        }
    }
}

/// Bounds the Settings screen offers; values outside them are refused, not clamped.
pub const MAX_STEPS: usize = 200;
pub const MAX_TEMPERATURE: f32 = 2.0;
pub const SUMMARIZE_RANGE: (f64, f64) = (0.3, 0.95);
pub const MAX_EMBEDDING_PROMPT: usize = 300;

impl Settings {
    /// The embedding model these settings name (None: the catalogue's).
    pub fn embedding_setting(&self) -> Option<&str> {
        Some(self.embedding_model.trim()).filter(|s| !s.is_empty())
    }

    pub fn path(home: &BurrowHome) -> PathBuf {
        home.path().join(SETTINGS_FILE)
    }

    /// The saved settings, or the defaults when none were saved.
    pub fn load(home: &BurrowHome) -> Result<Self, SettingsError> {
        let path = Self::path(home);
        let text = match crate::safe_open::read_regular_text(
            &path,
            crate::safe_open::Links::Follow,
            crate::safe_open::SMALL_FILE_BYTES,
        ) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Settings::default()),
            Err(source) => return Err(SettingsError::Io { path, source }),
        };
        let settings = serde_json::from_str::<Object<Settings>>(&text)
            .map(|o| o.0)
            .map_err(|e| SettingsError::Parse {
                path: path.clone(),
                reason: e.to_string(),
            })?;
        settings.validate().map_err(|e| SettingsError::Parse {
            path,
            reason: e.to_string(),
        })?;
        Ok(settings)
    }

    /// Checks and writes the settings. The file is replaced whole (`safe_open::replace_file`:
    /// written beside it, then renamed; through a symbolic link to its target), so a crash
    /// mid-write leaves the previous settings.
    pub fn save(&self, home: &BurrowHome) -> Result<(), SettingsError> {
        self.validate()?;
        let path = Self::path(home);
        let io = |source| SettingsError::Io {
            path: path.clone(),
            source,
        };
        std::fs::create_dir_all(home.path()).map_err(io)?;
        let text = serde_json::to_string_pretty(self).map_err(|e| SettingsError::Invalid {
            field: "settings",
            reason: e.to_string(),
        })?;
        crate::safe_open::replace_file(&path, text.as_bytes()).map_err(io)
    }

    pub fn validate(&self) -> Result<(), SettingsError> {
        let invalid = |field, reason: String| Err(SettingsError::Invalid { field, reason });
        if Protocol::parse_name(&self.protocol).is_none() {
            let names: Vec<&str> = PROTOCOLS.iter().map(|p| p.as_str()).collect();
            return invalid(
                "protocol",
                format!("{:?} is not one of {}", self.protocol, names.join(", ")),
            );
        }
        if !(1..=MAX_STEPS).contains(&self.max_steps) {
            return invalid(
                "max_steps",
                format!("{} is not between 1 and {MAX_STEPS}", self.max_steps),
            );
        }
        if !(0.0..=MAX_TEMPERATURE).contains(&self.temperature) {
            return invalid(
                "temperature",
                format!(
                    "{} is not between 0 and {MAX_TEMPERATURE}",
                    self.temperature
                ),
            );
        }
        let (lo, hi) = SUMMARIZE_RANGE;
        if !(lo..=hi).contains(&self.summarize_at) {
            return invalid(
                "summarize_at",
                format!("{} is not between {lo} and {hi}", self.summarize_at),
            );
        }
        for (model, m) in &self.models {
            if m.context_size.is_some_and(|c| c < 256) {
                return invalid(
                    "context_size",
                    format!("{model}: at least 256 tokens are needed"),
                );
            }
            if m.threads == Some(0) {
                return invalid("threads", format!("{model}: at least 1"));
            }
        }
        if let Some(p) = &self.embedding_prompts {
            for (field, text) in [
                ("embedding_prompts.query", &p.query),
                ("embedding_prompts.document", &p.document),
            ] {
                let n = text.chars().count();
                if n > MAX_EMBEDDING_PROMPT {
                    // Each text is embedded from its first 256 tokens: a long prompt leaves
                    // no room for the text.
                    return invalid(
                        field,
                        format!("{n} characters; at most {MAX_EMBEDDING_PROMPT}"),
                    );
                }
            }
        }
        if self.serve.port == 0 {
            return invalid("serve.port", "a port between 1 and 65535".into());
        }
        let var = &self.serve.api_key_env;
        if !var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return invalid(
                "serve.api_key_env",
                format!("{var:?} is not an environment variable's name"),
            );
        }
        let mut names = std::collections::HashSet::new();
        for server in &self.mcp_servers {
            server.validate().map_err(|reason| SettingsError::Invalid {
                field: "mcp_servers",
                reason,
            })?;
            if !names.insert(server.name.as_str()) {
                return invalid(
                    "mcp_servers",
                    format!("two MCP servers are named {:?}", server.name),
                );
            }
        }
        Ok(())
    }

    /// The agent's configuration for a run with these settings.
    pub fn agent_config(&self, task_context: String) -> AgentConfig {
        let mut config = AgentConfig {
            protocol: Protocol::parse_name(&self.protocol).unwrap_or(Protocol::JsonTyped),
            max_steps: self.max_steps,
            grammar: self.grammar,
            search_first: self.search_first,
            route_first: self.route_first,
            summarize_at: self.summarize_at,
            require_plan_done: self.require_plan_done,
            task_context,
            ..Default::default()
        };
        config.sampling.temperature = self.temperature;
        if !self.persona.trim().is_empty() {
            config.persona = self.persona.trim().to_string();
        }
        config
    }

    pub fn model(&self, path: &Path) -> LoadOptions {
        self.models
            .get(&path.to_string_lossy().into_owned())
            .cloned()
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_settings_are_the_defaults_and_saved_ones_come_back() {
        let dir = tempfile::tempdir().unwrap();
        let home = BurrowHome::new(dir.path());
        assert_eq!(Settings::load(&home).unwrap(), Settings::default());
        let mut s = Settings {
            protocol: "text".into(),
            max_steps: 30,
            embedding_prompts: Some(EmbeddingPrompts {
                model: "/models/e.gguf".into(),
                query: "q".repeat(MAX_EMBEDDING_PROMPT),
                document: "Instruct: find\nDocument: ".into(),
            }),
            ..Default::default()
        };
        s.models.insert(
            "/models/a.gguf".into(),
            LoadOptions {
                context_size: Some(8192),
                ..Default::default()
            },
        );
        s.save(&home).unwrap();
        assert_eq!(Settings::load(&home).unwrap(), s);
        assert_eq!(
            s.model(Path::new("/models/a.gguf")).context_size,
            Some(8192)
        );
        assert_eq!(s.model(Path::new("/models/b.gguf")), LoadOptions::default());
    }

    #[test]
    fn bad_values_are_refused_naming_the_field_and_nothing_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let home = BurrowHome::new(dir.path());
        for (s, field) in [
            (
                Settings {
                    protocol: "xml".into(),
                    ..Default::default()
                },
                "protocol",
            ),
            (
                Settings {
                    max_steps: 0,
                    ..Default::default()
                },
                "max_steps",
            ),
            (
                Settings {
                    temperature: -1.0,
                    ..Default::default()
                },
                "temperature",
            ),
            (
                Settings {
                    summarize_at: 1.5,
                    ..Default::default()
                },
                "summarize_at",
            ),
            (
                Settings {
                    serve: ServeSettings {
                        port: 0,
                        ..Default::default()
                    },
                    ..Default::default()
                },
                "serve.port",
            ),
            (
                Settings {
                    serve: ServeSettings {
                        api_key_env: "MY KEY".into(),
                        ..Default::default()
                    },
                    ..Default::default()
                },
                "serve.api_key_env",
            ),
            (
                Settings {
                    embedding_prompts: Some(EmbeddingPrompts {
                        document: "x".repeat(MAX_EMBEDDING_PROMPT + 1),
                        ..Default::default()
                    }),
                    ..Default::default()
                },
                "embedding_prompts.document",
            ),
        ] {
            let e = s.save(&home).unwrap_err();
            assert!(e.to_string().starts_with(field), "{e}");
            assert!(!Settings::path(&home).exists());
        }
    }

    #[test]
    fn a_corrupt_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let home = BurrowHome::new(dir.path());
        std::fs::write(Settings::path(&home), "{\"max_steps\": \"many\"}").unwrap();
        let e = Settings::load(&home).unwrap_err().to_string();
        assert!(
            e.contains(SETTINGS_FILE) && e.contains("line 1 column 20"),
            "{e}"
        );
        std::fs::write(
            Settings::path(&home),
            r#"{"embedding_prompts": {"qurey": "search_query: "}}"#,
        )
        .unwrap();
        let e = Settings::load(&home).unwrap_err().to_string();
        assert!(e.contains("qurey"), "{e}");
        // A list was taken by position: model "search_query: ", query "search_document: ".
        std::fs::write(
            Settings::path(&home),
            r#"{"embedding_prompts": ["search_query: ", "search_document: "]}"#,
        )
        .unwrap();
        let e = Settings::load(&home).unwrap_err().to_string();
        assert!(
            e.contains(SETTINGS_FILE) && e.contains("an object of settings"),
            "{e}"
        );
        // Nor the settings themselves, nor what they serve: a list took them by position.
        for list in [
            r#"["tool-calls", 3]"#,
            r#"{"serve": [true, 8080]}"#,
            r#"{"models": {"m.gguf": [4096]}}"#,
        ] {
            std::fs::write(Settings::path(&home), list).unwrap();
            let e = Settings::load(&home).unwrap_err().to_string();
            assert!(e.contains("an object of settings"), "{list}: {e}");
        }
        // An object, and none, still load.
        std::fs::write(
            Settings::path(&home),
            r#"{"embedding_prompts": {"model": "m.gguf", "query": "q: "}}"#,
        )
        .unwrap();
        let p = Settings::load(&home).unwrap().embedding_prompts.unwrap();
        assert_eq!(
            (p.model.as_str(), p.query.as_str(), p.document.as_str()),
            ("m.gguf", "q: ", "")
        );
        std::fs::write(Settings::path(&home), r#"{"embedding_prompts": null}"#).unwrap();
        assert_eq!(Settings::load(&home).unwrap().embedding_prompts, None);
    }

    #[test]
    fn settings_become_the_agent_configuration() {
        let s = Settings {
            protocol: "tool-calls".into(),
            max_steps: 7,
            temperature: 0.4,
            grammar: false,
            search_first: false,
            route_first: false,
            summarize_at: 0.5,
            require_plan_done: false,
            persona: "  A careful reviewer.  ".into(),
            embedding_model: String::new(),
            embedding_prompts: None,
            models: BTreeMap::new(),
            mcp_servers: Vec::new(),
            serve: ServeSettings::default(),
        };
        let c = s.agent_config("ctx".into());
        assert_eq!(c.protocol, Protocol::ToolCalls);
        assert_eq!(c.max_steps, 7);
        assert_eq!(c.sampling.temperature, 0.4);
        assert!(!c.grammar && !c.require_plan_done && !c.route_first);
        assert_eq!(c.summarize_at, 0.5);
        assert_eq!(c.persona, "A careful reviewer.");
        assert_eq!(c.task_context, "ctx");
    }
}
