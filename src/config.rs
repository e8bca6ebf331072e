//! Where Burrow keeps its data, and the user's configuration file.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot find a data directory: set BURROW_HOME or pass --home")]
    NoHome,
    #[error("{path}: cannot read the configuration: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: invalid configuration: {reason}")]
    Parse { path: PathBuf, reason: String },
    #[error("{path}: cannot write the configuration: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Burrow's data directory: `--home`, else `$BURROW_HOME`, else the platform data directory
/// (`$XDG_DATA_HOME/burrow`, usually `~/.local/share/burrow`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BurrowHome(PathBuf);

impl BurrowHome {
    pub fn resolve(explicit: Option<&Path>) -> Result<Self, ConfigError> {
        if let Some(p) = explicit {
            return Ok(BurrowHome(p.to_path_buf()));
        }
        if let Some(p) = std::env::var_os("BURROW_HOME").filter(|p| !p.is_empty()) {
            return Ok(BurrowHome(PathBuf::from(p)));
        }
        dirs::data_dir()
            .map(|d| BurrowHome(d.join("burrow")))
            .ok_or(ConfigError::NoHome)
    }

    pub fn new(path: impl Into<PathBuf>) -> Self {
        BurrowHome(path.into())
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    /// Where the agent keeps the KV state of its system prompt between processes.
    pub fn warm_start_dir(&self) -> PathBuf {
        self.0.join("cache").join("kv")
    }

    pub fn models_dir(&self) -> PathBuf {
        self.0.join("models")
    }

    pub fn config_path(&self) -> PathBuf {
        self.0.join("config.json")
    }

    pub fn load_config(&self) -> Result<Config, ConfigError> {
        Config::load(&self.config_path())
    }
}

/// `$BURROW_HOME/config.json`. Missing means defaults.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Extra folders searched for GGUF models.
    pub model_dirs: Vec<PathBuf>,
    /// The model `chat` and the app use when none is named (a catalogue id, a name or a path).
    pub default_model: Option<String>,
    /// Models served by other programs over the OpenAI API (`burrow models add-remote`).
    pub remote_backends: Vec<RemoteBackend>,
}

/// A server of OpenAI-compatible models (llama-server, vLLM, Ollama, LM Studio), by name. The
/// API key is never kept: only the name of the environment variable that holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RemoteBackend {
    /// What `-m` calls it.
    pub name: String,
    pub url: String,
    /// The server's model to use (default: the first it lists).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// The context window, for servers that do not report theirs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_length: Option<usize>,
    /// A llama-server built with llguidance: grammars go to it as llguidance's.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub llguidance: bool,
}

impl Config {
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = match crate::safe_open::read_regular_text(
            path,
            crate::safe_open::Links::Follow,
            crate::safe_open::SMALL_FILE_BYTES,
        ) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Config::default()),
            Err(source) => {
                return Err(ConfigError::Read {
                    path: path.to_path_buf(),
                    source,
                })
            }
        };
        serde_json::from_str(&text).map_err(|e| ConfigError::Parse {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })
    }

    /// Writes atomically (`safe_open::replace_file`), so a crash never leaves half a config,
    /// and through a symbolic link to its target.
    pub fn save(&self, path: &Path) -> Result<(), ConfigError> {
        let write_err = |source| ConfigError::Write {
            path: path.to_path_buf(),
            source,
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(write_err)?;
        }
        let text = serde_json::to_string_pretty(self).map_err(|e| ConfigError::Parse {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
        crate::safe_open::replace_file(path, text.as_bytes()).map_err(write_err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_config_is_default_and_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let home = BurrowHome::new(dir.path());
        assert_eq!(home.load_config().unwrap(), Config::default());
        let cfg = Config {
            model_dirs: vec!["/models".into()],
            default_model: Some("x".into()),
            remote_backends: vec![RemoteBackend {
                name: "gpu".into(),
                url: "http://10.0.0.2:8080".into(),
                model: None,
                api_key_env: Some("GPU_KEY".into()),
                context_length: None,
                llguidance: true,
            }],
        };
        cfg.save(&home.config_path()).unwrap();
        assert_eq!(home.load_config().unwrap(), cfg);
    }

    #[test]
    fn bad_config_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("config.json");
        std::fs::write(&p, "{\"model_dirz\": []}").unwrap();
        let e = Config::load(&p).unwrap_err().to_string();
        assert!(e.contains("config.json") && e.contains("model_dirz"), "{e}");
    }

    /// A config kept with one's dotfiles (a symbolic link to it) is saved through the link:
    /// renamed over the link, the saved file was cut off from the copy it stood for (found in
    /// review). No temporary file is left beside either.
    #[test]
    fn a_symlinked_config_is_saved_through_its_link() {
        let dir = tempfile::tempdir().unwrap();
        let dotfiles = dir.path().join("dotfiles/burrow-config.json");
        std::fs::create_dir_all(dotfiles.parent().unwrap()).unwrap();
        std::fs::write(&dotfiles, "{}").unwrap();
        let home = BurrowHome::new(dir.path().join("home"));
        std::fs::create_dir_all(home.path()).unwrap();
        std::os::unix::fs::symlink(&dotfiles, home.config_path()).unwrap();
        let mut cfg = home.load_config().unwrap();
        cfg.default_model = Some("qwen".into());
        cfg.save(&home.config_path()).unwrap();
        assert!(
            std::fs::symlink_metadata(home.config_path())
                .unwrap()
                .file_type()
                .is_symlink(),
            "the link was replaced by a file"
        );
        assert!(std::fs::read_to_string(&dotfiles).unwrap().contains("qwen"));
        assert_eq!(
            home.load_config().unwrap().default_model.as_deref(),
            Some("qwen")
        );
        for d in [home.path(), dotfiles.parent().unwrap()] {
            assert_eq!(std::fs::read_dir(d).unwrap().count(), 1, "{}", d.display());
        }
    }
}
