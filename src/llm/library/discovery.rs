//! Discovery: the folders where models are looked for, and the GGUF files found in them as
//! each app lays them out (plain folders, the Hugging Face cache, Ollama's blobs).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::info::split_name;
use super::{ModelInfo, ModelSource};
use crate::config::{BurrowHome, Config};

/// A folder to search, and how its models are laid out.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchRoot {
    pub path: PathBuf,
    pub source: ModelSource,
}

/// What discovery found: models, and files that looked like models but could not be read.
#[derive(Debug, Default, Serialize)]
pub struct Discovery {
    pub models: Vec<ModelInfo>,
    pub problems: Vec<DiscoveryProblem>,
}

#[derive(Debug, Clone, Serialize)]
pub struct DiscoveryProblem {
    pub path: PathBuf,
    pub source: ModelSource,
    /// The whole message, naming the file, so it can be shown as it is.
    pub error: String,
}

/// The standard places, in priority order: the project's models/, Burrow's own folder,
/// configured folders, then other apps' caches.
pub fn default_roots(
    home: &BurrowHome,
    config: &Config,
    project_models: Option<&Path>,
) -> Vec<SearchRoot> {
    let mut roots = Vec::new();
    if let Some(p) = project_models {
        roots.push(SearchRoot {
            path: p.to_path_buf(),
            source: ModelSource::Project,
        });
    }
    roots.push(SearchRoot {
        path: home.models_dir(),
        source: ModelSource::BurrowHome,
    });
    let env_dirs = std::env::var_os("BURROW_MODEL_DIRS")
        .map(|v| std::env::split_paths(&v).collect::<Vec<_>>())
        .unwrap_or_default();
    for d in config.model_dirs.iter().cloned().chain(env_dirs) {
        roots.push(SearchRoot {
            path: d,
            source: ModelSource::Config,
        });
    }
    let user_home = dirs::home_dir();
    let hf = std::env::var_os("HF_HUB_CACHE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HF_HOME").map(|h| PathBuf::from(h).join("hub")))
        .or_else(|| user_home.as_ref().map(|h| h.join(".cache/huggingface/hub")));
    if let Some(hf) = hf {
        roots.push(SearchRoot {
            path: hf,
            source: ModelSource::HuggingFace,
        });
    }
    if let Some(h) = &user_home {
        for p in [
            h.join(".lmstudio/models"),
            h.join(".cache/lm-studio/models"),
        ] {
            roots.push(SearchRoot {
                path: p,
                source: ModelSource::LmStudio,
            });
        }
    }
    let ollama = std::env::var_os("OLLAMA_MODELS")
        .map(PathBuf::from)
        .or_else(|| user_home.as_ref().map(|h| h.join(".ollama/models")));
    if let Some(o) = ollama {
        roots.push(SearchRoot {
            path: o,
            source: ModelSource::Ollama,
        });
    }
    roots
}

/// Finds every GGUF model under `roots`. A file reachable from several roots (a symlinked
/// blob, a folder listed twice) is listed once, under the first root that reaches it.
pub fn discover(roots: &[SearchRoot]) -> Discovery {
    let mut out = Discovery::default();
    let mut seen: HashSet<PathBuf> = HashSet::new();
    for root in roots {
        if !root.path.is_dir() {
            continue;
        }
        let candidates = match root.source {
            ModelSource::Ollama => ollama_models(&root.path, &mut out.problems),
            ModelSource::HuggingFace => gguf_files(&root.path, 6)
                .into_iter()
                .filter(|p| p.components().any(|c| c.as_os_str() == "snapshots"))
                .map(|p| (p, None))
                .collect(),
            _ => gguf_files(&root.path, 4)
                .into_iter()
                .map(|p| (p, None))
                .collect(),
        };
        for (path, display_name) in candidates {
            // Later parts of a split model are reached through the first part.
            if let Some((_, (index, _))) = split_name(&path) {
                if index != 1 {
                    continue;
                }
            }
            let canonical = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
            if !seen.insert(canonical) {
                continue;
            }
            match ModelInfo::from_path(&path, root.source) {
                Ok(mut info) => {
                    if let Some(n) = display_name {
                        info.name = n;
                    } else if root.source == ModelSource::HuggingFace {
                        if let Some(repo) = hf_repo_name(&path) {
                            info.name = format!("{repo}/{}", file_label(&path));
                        }
                    }
                    out.models.push(info);
                }
                Err(e) => out.problems.push(DiscoveryProblem {
                    path,
                    source: root.source,
                    error: e.to_string(),
                }),
            }
        }
    }
    tell_apart(&mut out.models);
    out
}

/// Files listed under one name (a copy, or a fine-tune that kept its base's `general.name`) get
/// their file name added, so the list, a load failure and History never mean two models by one
/// name.
fn tell_apart(models: &mut [ModelInfo]) {
    let mut count: HashMap<String, usize> = HashMap::new();
    for m in models.iter() {
        *count.entry(m.name.to_lowercase()).or_default() += 1;
    }
    for m in models.iter_mut() {
        if count.get(&m.name.to_lowercase()).is_some_and(|&n| n > 1) {
            m.name = format!("{} ({})", m.name, file_label(&m.path));
        }
    }
}

pub(super) fn file_label(path: &Path) -> String {
    path.file_name()
        .map(|f| f.to_string_lossy().to_string())
        .unwrap_or_default()
}

/// `hub/models--Org--Repo/snapshots/<rev>/file.gguf` → `Org/Repo`.
fn hf_repo_name(path: &Path) -> Option<String> {
    path.ancestors()
        .filter_map(|a| a.file_name()?.to_str())
        .find_map(|n| n.strip_prefix("models--"))
        .map(|n| n.replace("--", "/"))
}

/// `.gguf` files under `dir`, up to `depth` levels down, sorted, following symlinks to files.
fn gguf_files(dir: &Path, depth: usize) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![(dir.to_path_buf(), 0usize)];
    while let Some((d, level)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            let Ok(meta) = std::fs::metadata(&p) else {
                continue;
            };
            if meta.is_dir() {
                if level < depth && !e.file_name().to_string_lossy().starts_with('.') {
                    stack.push((p, level + 1));
                }
            } else if p
                .extension()
                .is_some_and(|x| x.eq_ignore_ascii_case("gguf"))
            {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Ollama keeps models as content-addressed blobs; manifests name them
/// (`manifests/<registry>/<namespace>/<model>/<tag>`) and point at the GGUF layer.
fn ollama_models(
    root: &Path,
    problems: &mut Vec<DiscoveryProblem>,
) -> Vec<(PathBuf, Option<String>)> {
    let manifests = root.join("manifests");
    let mut files = Vec::new();
    let mut stack = vec![(manifests.clone(), 0usize)];
    while let Some((d, level)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() && level < 4 {
                stack.push((p, level + 1));
            } else if p.is_file() {
                files.push(p);
            }
        }
    }
    files.sort();
    let mut out = Vec::new();
    for manifest in files {
        let Ok(rel) = manifest.strip_prefix(&manifests) else {
            continue;
        };
        let parts: Vec<String> = rel
            .iter()
            .map(|c| c.to_string_lossy().to_string())
            .collect();
        // [registry, namespace, model, tag]
        let name = match parts.as_slice() {
            [_, ns, model, tag] if ns == "library" => format!("{model}:{tag}"),
            [_, ns, model, tag] => format!("{ns}/{model}:{tag}"),
            _ => continue,
        };
        let parsed: Result<serde_json::Value, String> = crate::safe_open::read_regular_text(
            &manifest,
            crate::safe_open::Links::Follow,
            crate::safe_open::SMALL_FILE_BYTES,
        )
        .map_err(|e| e.to_string())
        .and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()));
        let layer = parsed.as_ref().ok().and_then(|m| {
            m.get("layers")?
                .as_array()?
                .iter()
                .find(|l| {
                    l.get("mediaType").and_then(|t| t.as_str())
                        == Some("application/vnd.ollama.image.model")
                })?
                .get("digest")?
                .as_str()
                .map(str::to_string)
        });
        match layer {
            Some(digest) => {
                let blob = root.join("blobs").join(digest.replace(':', "-"));
                out.push((blob, Some(name)));
            }
            None => problems.push(DiscoveryProblem {
                path: manifest.clone(),
                source: ModelSource::Ollama,
                error: match parsed {
                    Err(e) => format!("{}: unreadable manifest: {e}", manifest.display()),
                    Ok(_) => format!("{}: manifest has no model layer", manifest.display()),
                },
            }),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::library::{resolve, tiny, ResolvedModel};

    #[test]
    fn discovers_every_layout() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        // A plain folder with one model and one corrupt file.
        std::fs::create_dir_all(d.join("plain/sub")).unwrap();
        tiny("llama", "Plain")
            .write_to(&d.join("plain/sub/plain.gguf"), false)
            .unwrap();
        std::fs::write(d.join("plain/broken.gguf"), b"GGUF\x03\0\0\0").unwrap();
        // A split model in two parts.
        let split = |i: u32| {
            tiny("qwen2", "Split")
                .meta("split.count", crate::llm::gguf::MetaValue::U16(2))
                .meta("split.no", crate::llm::gguf::MetaValue::U16((i - 1) as u16))
        };
        split(1)
            .write_to(&d.join("plain/big-00001-of-00002.gguf"), false)
            .unwrap();
        split(2)
            .write_to(&d.join("plain/big-00002-of-00002.gguf"), false)
            .unwrap();
        // A Hugging Face cache entry (snapshot symlink to a blob).
        let repo = d.join("hf/models--Org--Repo");
        std::fs::create_dir_all(repo.join("blobs")).unwrap();
        std::fs::create_dir_all(repo.join("snapshots/abc")).unwrap();
        tiny("gemma2", "HF")
            .write_to(&repo.join("blobs/deadbeef"), false)
            .unwrap();
        std::os::unix::fs::symlink(
            repo.join("blobs/deadbeef"),
            repo.join("snapshots/abc/model-Q4_K_M.gguf"),
        )
        .unwrap();
        // An Ollama store.
        let o = d.join("ollama");
        std::fs::create_dir_all(o.join("blobs")).unwrap();
        std::fs::create_dir_all(o.join("manifests/registry.ollama.ai/library/tinyllama")).unwrap();
        tiny("llama", "Ollama")
            .write_to(&o.join("blobs/sha256-0123"), false)
            .unwrap();
        std::fs::write(
            o.join("manifests/registry.ollama.ai/library/tinyllama/latest"),
            r#"{"layers":[{"mediaType":"application/vnd.ollama.image.model","digest":"sha256:0123"}]}"#,
        )
        .unwrap();
        let roots = vec![
            SearchRoot {
                path: d.join("plain"),
                source: ModelSource::Config,
            },
            SearchRoot {
                path: d.join("hf"),
                source: ModelSource::HuggingFace,
            },
            SearchRoot {
                path: o.clone(),
                source: ModelSource::Ollama,
            },
            // The same folder twice: its models are listed once.
            SearchRoot {
                path: d.join("plain"),
                source: ModelSource::Project,
            },
            SearchRoot {
                path: d.join("missing"),
                source: ModelSource::LmStudio,
            },
        ];
        let found = discover(&roots);
        let mut names: Vec<&str> = found.models.iter().map(|m| m.name.as_str()).collect();
        names.sort();
        assert_eq!(
            names,
            vec![
                "Org/Repo/model-Q4_K_M.gguf",
                "Plain",
                "Split",
                "tinyllama:latest"
            ]
        );
        let split = found.models.iter().find(|m| m.name == "Split").unwrap();
        assert_eq!(split.split_count, 2);
        let one = found.models.iter().find(|m| m.name == "Plain").unwrap();
        let parts: u64 = ["big-00001-of-00002.gguf", "big-00002-of-00002.gguf"]
            .iter()
            .map(|f| std::fs::metadata(d.join("plain").join(f)).unwrap().len())
            .sum();
        assert_eq!(split.file_size, parts);
        assert_eq!(split.parameters, 2 * one.parameters);
        assert_eq!(one.quantization, "Q4_K_M");
        assert_eq!(one.context_length, Some(8192));
        assert!(one.has_chat_template);
        assert_eq!(one.parameters, 256 * 16);
        assert_eq!(found.problems.len(), 1, "{:?}", found.problems);
        assert!(found.problems[0].path.ends_with("broken.gguf"));
        let ollama = found
            .models
            .iter()
            .find(|m| m.source == ModelSource::Ollama)
            .unwrap();
        assert_eq!(ollama.architecture, "llama");
    }

    /// Issue 5: two files with one `general.name` were listed (and failed to load, and were
    /// recorded in History) under the same name.
    #[test]
    fn files_that_share_a_name_are_told_apart_by_their_file_names() {
        let dir = tempfile::tempdir().unwrap();
        for file in ["base.gguf", "base-copy.gguf"] {
            tiny("llama", "Base")
                .write_to(&dir.path().join(file), false)
                .unwrap();
        }
        tiny("llama", "Other")
            .write_to(&dir.path().join("other.gguf"), false)
            .unwrap();
        let found = discover(&[SearchRoot {
            path: dir.path().to_path_buf(),
            source: ModelSource::Config,
        }]);
        let mut names: Vec<&str> = found.models.iter().map(|m| m.name.as_str()).collect();
        names.sort();
        assert_eq!(
            names,
            ["Base (base-copy.gguf)", "Base (base.gguf)", "Other"]
        );
        let copy = dir.path().join("base-copy.gguf");
        assert!(matches!(
            resolve("base (base-copy.gguf)", &found.models),
            Ok(ResolvedModel::Found(m)) if m.path == copy
        ));
    }
}
