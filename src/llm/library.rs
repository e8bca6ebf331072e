//! The model library: the catalogue in `models/`, and discovery of the GGUF models on this
//! machine, including those downloaded with other apps (Hugging Face cache, LM Studio, Ollama).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::arch;
use super::engine::LlmError;
use super::gguf::{ggml_type_name, GgufHeader};
use crate::config::{BurrowHome, Config};

/// The catalogue shipped in `models/catalogue.json`.
pub const CATALOGUE_JSON: &str = include_str!("../../models/catalogue.json");

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Catalogue {
    pub default: String,
    pub models: Vec<CatalogueEntry>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CatalogueEntry {
    pub id: String,
    pub name: String,
    pub file: String,
    pub sha256: String,
    pub size: u64,
    pub architecture: String,
    pub quantization: String,
    pub licence: String,
    pub homepage: String,
    pub sources: Vec<serde_json::Value>,
}

impl Catalogue {
    /// The catalogue compiled into this build, parsed once.
    pub fn builtin() -> &'static Catalogue {
        static CATALOGUE: std::sync::OnceLock<Catalogue> = std::sync::OnceLock::new();
        CATALOGUE.get_or_init(|| {
            serde_json::from_str(CATALOGUE_JSON).unwrap_or_else(|e| {
                // Covered by a test, so only a broken build gets here; without the catalogue,
                // models are still found, just without catalogue names and licences.
                tracing::error!("models/catalogue.json is invalid: {e}");
                Catalogue {
                    default: String::new(),
                    models: Vec::new(),
                }
            })
        })
    }

    pub fn default_entry(&self) -> Option<&CatalogueEntry> {
        self.models.iter().find(|m| m.id == self.default)
    }

    pub fn by_file(&self, file_name: &str) -> Option<&CatalogueEntry> {
        self.models.iter().find(|m| m.file == file_name)
    }
}

/// Where a model was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ModelSource {
    /// The project's `models/` folder.
    Project,
    /// `$BURROW_HOME/models`.
    BurrowHome,
    HuggingFace,
    LmStudio,
    Ollama,
    /// A folder listed in the configuration (or `BURROW_MODEL_DIRS`).
    Config,
    /// A path given directly.
    Path,
}

impl ModelSource {
    pub fn label(self) -> &'static str {
        match self {
            ModelSource::Project => "project models/",
            ModelSource::BurrowHome => "burrow home",
            ModelSource::HuggingFace => "hugging face cache",
            ModelSource::LmStudio => "lm studio",
            ModelSource::Ollama => "ollama",
            ModelSource::Config => "config folder",
            ModelSource::Path => "path",
        }
    }
}

/// A model file (or set of split files) and what its header says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelInfo {
    pub name: String,
    pub path: PathBuf,
    pub architecture: String,
    pub parameters: u64,
    pub quantization: String,
    /// Bytes on disk, over all split files.
    pub file_size: u64,
    pub context_length: Option<u64>,
    pub has_chat_template: bool,
    pub source: ModelSource,
    /// 1 for a single file; N for a model split into N files (`*-00001-of-0000N.gguf`).
    pub split_count: u32,
    pub supported: bool,
    /// The catalogue id, when this is a catalogue model.
    pub catalogue_id: Option<String>,
    pub licence: Option<String>,
    /// Transformer shape, for memory estimates.
    pub block_count: Option<u64>,
    pub embedding_length: Option<u64>,
    pub head_count: Option<u64>,
    pub head_count_kv: Option<u64>,
    pub vocab_size: Option<u64>,
    pub tensor_data_bytes: u64,
}

impl ModelInfo {
    pub fn parameters_label(&self) -> String {
        let p = self.parameters as f64;
        if p >= 1e9 {
            format!("{:.1}B", p / 1e9)
        } else if p >= 1e6 {
            format!("{:.0}M", p / 1e6)
        } else {
            format!("{:.0}K", p / 1e3)
        }
    }

    /// Reads a model's header (and its other parts, when split) into a `ModelInfo`.
    pub fn from_path(path: &Path, source: ModelSource) -> Result<Self, LlmError> {
        let header = GgufHeader::read(path)?;
        let mut parts = vec![header];
        let split_count = parts[0].get_u64("split.count").unwrap_or(1).max(1);
        if split_count > 1 {
            if parts[0].get_u64("split.no").unwrap_or(0) != 0 {
                return Err(LlmError::NotAModel {
                    path: path.to_path_buf(),
                    reason: "this is not the first part of a split model; open the -00001-of- file"
                        .into(),
                });
            }
            for i in 2..=split_count {
                let part = split_part_path(path, i as u32, split_count as u32).ok_or_else(|| {
                    LlmError::NotAModel {
                        path: path.to_path_buf(),
                        reason: format!(
                            "split model of {split_count} parts, but the file name does not follow the -00001-of-{split_count:05} pattern"
                        ),
                    }
                })?;
                if !part.exists() {
                    return Err(LlmError::NotAModel {
                        path: path.to_path_buf(),
                        reason: format!("part {i} of {split_count} is missing: {}", part.display()),
                    });
                }
                parts.push(GgufHeader::read(&part)?);
            }
        }
        let h = &parts[0];
        let architecture = h
            .architecture()
            .ok_or_else(|| LlmError::NotAModel {
                path: path.to_path_buf(),
                reason: "no general.architecture key".into(),
            })?
            .to_string();
        let file_name = path
            .file_name()
            .map(|f| f.to_string_lossy().to_string())
            .unwrap_or_default();
        let catalogue = Catalogue::builtin();
        let entry = catalogue.by_file(&file_name);
        let name = entry
            .map(|e| e.name.clone())
            .or_else(|| h.get_str("general.name").map(str::to_string))
            .unwrap_or_else(|| {
                path.file_stem()
                    .map(|s| s.to_string_lossy().to_string())
                    .unwrap_or_default()
            });
        let tensor_data_bytes: u64 = parts.iter().map(GgufHeader::tensor_data_bytes).sum();
        let vocab_size = match h.get("tokenizer.ggml.tokens") {
            Some(super::gguf::MetaValue::Array(a)) => Some(a.len),
            _ => None,
        };
        Ok(ModelInfo {
            name,
            path: path.to_path_buf(),
            supported: arch::is_supported(&architecture),
            parameters: parts.iter().map(GgufHeader::n_parameters).sum(),
            quantization: quantization_label(&parts),
            file_size: parts.iter().map(|p| p.file_size).sum(),
            context_length: h.arch_u64("context_length"),
            has_chat_template: h.get_str("tokenizer.chat_template").is_some(),
            source,
            split_count: split_count as u32,
            catalogue_id: entry.map(|e| e.id.clone()),
            licence: entry
                .map(|e| e.licence.clone())
                .or_else(|| h.get_str("general.license").map(str::to_string)),
            block_count: h.arch_u64("block_count"),
            embedding_length: h.arch_u64("embedding_length"),
            head_count: h.arch_u64("attention.head_count"),
            head_count_kv: h
                .arch_u64("attention.head_count_kv")
                .or(h.arch_u64("attention.head_count")),
            vocab_size,
            tensor_data_bytes,
            architecture,
        })
    }
}

/// `general.file_type` names, as llama.cpp numbers them (LLAMA_FTYPE_*).
fn file_type_name(ft: u64) -> Option<&'static str> {
    Some(match ft {
        0 => "F32",
        1 => "F16",
        2 => "Q4_0",
        3 => "Q4_1",
        7 => "Q8_0",
        8 => "Q5_0",
        9 => "Q5_1",
        10 => "Q2_K",
        11 => "Q3_K_S",
        12 => "Q3_K_M",
        13 => "Q3_K_L",
        14 => "Q4_K_S",
        15 => "Q4_K_M",
        16 => "Q5_K_S",
        17 => "Q5_K_M",
        18 => "Q6_K",
        19 => "IQ2_XXS",
        20 => "IQ2_XS",
        21 => "Q2_K_S",
        22 => "IQ3_XS",
        23 => "IQ3_XXS",
        24 => "IQ1_S",
        25 => "IQ4_NL",
        26 => "IQ3_S",
        27 => "IQ3_M",
        28 => "IQ2_S",
        29 => "IQ2_M",
        30 => "IQ4_XS",
        31 => "IQ1_M",
        32 => "BF16",
        36 => "TQ1_0",
        37 => "TQ2_0",
        38 => "MXFP4_MOE",
        39 => "NVFP4",
        40 => "Q1_0",
        41 => "Q2_0",
        _ => return None,
    })
}

/// The declared file type, else the tensor type holding the most bytes.
fn quantization_label(parts: &[GgufHeader]) -> String {
    if let Some(name) = parts[0]
        .get_u64("general.file_type")
        .and_then(file_type_name)
    {
        return name.to_string();
    }
    let mut by_type: BTreeMap<u32, u64> = BTreeMap::new();
    for t in parts.iter().flat_map(|p| &p.tensors) {
        *by_type.entry(t.ggml_type).or_default() += t.size_bytes;
    }
    by_type
        .into_iter()
        .max_by_key(|(_, bytes)| *bytes)
        .and_then(|(ty, _)| ggml_type_name(ty))
        .unwrap_or("unknown")
        .to_string()
}

/// For `name-00001-of-00003.gguf`, the path of part `i`.
fn split_part_path(first: &Path, i: u32, n: u32) -> Option<PathBuf> {
    let (stem, _) = split_name(first)?;
    Some(first.with_file_name(format!("{stem}-{i:05}-of-{n:05}.gguf")))
}

/// Splits `stem-00001-of-00003.gguf` into ("stem", (1, 3)).
fn split_name(path: &Path) -> Option<(String, (u32, u32))> {
    let name = path.file_name()?.to_str()?;
    let base = name.strip_suffix(".gguf")?;
    let (rest, total) = base.rsplit_once("-of-")?;
    let (stem, index) = rest.rsplit_once('-')?;
    if index.len() != 5 || total.len() != 5 {
        return None;
    }
    Some((stem.to_string(), (index.parse().ok()?, total.parse().ok()?)))
}

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

fn file_label(path: &Path) -> String {
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
        let parsed: Result<serde_json::Value, String> = std::fs::read_to_string(&manifest)
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

/// Resolves what the user typed (`--model`): a path to a GGUF file, or a name, catalogue id or
/// file name among the discovered models (exact, then a unique case-insensitive substring).
pub fn resolve<'a>(query: &str, found: &'a [ModelInfo]) -> Result<ResolvedModel<'a>, LlmError> {
    let as_path = Path::new(query);
    if as_path.exists() {
        // A listed model asked for by its path (as the app's Models screen does) is the listed
        // entry, so it keeps the name the list shows (a Hugging Face repository, an Ollama tag).
        let canonical = std::fs::canonicalize(as_path).ok();
        let listed = found.iter().find(|m| {
            m.path == as_path
                || canonical.is_some() && std::fs::canonicalize(&m.path).ok() == canonical
        });
        return Ok(match listed {
            Some(m) => ResolvedModel::Found(m),
            None => ResolvedModel::Path(as_path.to_path_buf()),
        });
    }
    let q = query.to_lowercase();
    let exact: Vec<&ModelInfo> = found
        .iter()
        .filter(|m| {
            m.name.to_lowercase() == q
                || m.catalogue_id.as_deref().map(str::to_lowercase).as_deref() == Some(q.as_str())
                || file_label(&m.path).to_lowercase() == q
        })
        .collect();
    if let Some(m) = exact.first() {
        return Ok(ResolvedModel::Found(m));
    }
    let partial: Vec<&ModelInfo> = found
        .iter()
        .filter(|m| {
            m.name.to_lowercase().contains(&q) || file_label(&m.path).to_lowercase().contains(&q)
        })
        .collect();
    match partial.as_slice() {
        [one] => Ok(ResolvedModel::Found(one)),
        _ => Err(LlmError::ModelNotFound {
            query: query.to_string(),
            available: if partial.is_empty() {
                found.iter().map(|m| m.name.clone()).collect()
            } else {
                partial.iter().map(|m| m.name.clone()).collect()
            },
        }),
    }
}

#[derive(Debug)]
pub enum ResolvedModel<'a> {
    Found(&'a ModelInfo),
    Path(PathBuf),
}

impl ResolvedModel<'_> {
    pub fn path(&self) -> &Path {
        match self {
            ResolvedModel::Found(m) => &m.path,
            ResolvedModel::Path(p) => p,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::gguf::GgufWriter;

    fn tiny(arch: &str, name: &str) -> GgufWriter {
        GgufWriter::new()
            .meta_str("general.architecture", arch)
            .meta_str("general.name", name)
            .meta_u32("general.file_type", 15)
            .meta_u32(&format!("{arch}.context_length"), 8192)
            .meta_str("tokenizer.chat_template", "{{ messages }}")
            .tensor("token_embd.weight", &[256, 16], 12)
    }

    #[test]
    fn catalogue_parses_and_has_the_default() {
        let c = Catalogue::builtin();
        let d = c.default_entry().unwrap();
        assert_eq!(d.file, "SmolLM2-135M-Instruct.Q4_1.gguf");
        assert_eq!(d.sha256.len(), 64);
    }

    #[test]
    fn split_names() {
        assert_eq!(
            split_name(Path::new("/m/qwen-7b-00002-of-00003.gguf")),
            Some(("qwen-7b".into(), (2, 3)))
        );
        assert_eq!(split_name(Path::new("/m/qwen-7b.gguf")), None);
        assert_eq!(
            split_part_path(Path::new("/m/a-00001-of-00002.gguf"), 2, 2),
            Some(PathBuf::from("/m/a-00002-of-00002.gguf"))
        );
    }

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

    #[test]
    fn a_split_model_with_a_missing_part_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        tiny("llama", "S")
            .meta("split.count", crate::llm::gguf::MetaValue::U16(3))
            .write_to(&dir.path().join("s-00001-of-00003.gguf"), false)
            .unwrap();
        let e = ModelInfo::from_path(&dir.path().join("s-00001-of-00003.gguf"), ModelSource::Path)
            .unwrap_err()
            .to_string();
        assert!(e.contains("part 2 of 3 is missing"), "{e}");
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

    #[test]
    fn resolve_by_name_id_file_or_path() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("Tiny-Q4.gguf");
        tiny("llama", "Tiny Model").write_to(&p, false).unwrap();
        let found = vec![ModelInfo::from_path(&p, ModelSource::Config).unwrap()];
        assert!(matches!(
            resolve("tiny model", &found),
            Ok(ResolvedModel::Found(_))
        ));
        assert!(matches!(
            resolve("Tiny-Q4.gguf", &found),
            Ok(ResolvedModel::Found(_))
        ));
        assert!(matches!(
            resolve("tiny", &found),
            Ok(ResolvedModel::Found(_))
        ));
        // A listed model's path is the listed entry, through a symlink too; any other model
        // file is taken as it is.
        assert!(matches!(
            resolve(p.to_str().unwrap(), &found),
            Ok(ResolvedModel::Found(m)) if m.name == "Tiny Model"
        ));
        let link = dir.path().join("link.gguf");
        std::os::unix::fs::symlink(&p, &link).unwrap();
        assert!(matches!(
            resolve(link.to_str().unwrap(), &found),
            Ok(ResolvedModel::Found(m)) if m.path == p
        ));
        let other = dir.path().join("Other.gguf");
        tiny("llama", "Other").write_to(&other, false).unwrap();
        assert!(matches!(
            resolve(other.to_str().unwrap(), &found),
            Ok(ResolvedModel::Path(_))
        ));
        let e = resolve("llama-70b", &found).unwrap_err().to_string();
        assert!(e.contains("llama-70b") && e.contains("Tiny Model"), "{e}");
    }
}
