//! What a model file's header says: a `ModelInfo`, read over all the parts of a split model.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::Catalogue;
use crate::llm::arch;
use crate::llm::engine::LlmError;
use crate::llm::gguf::{ggml_type_name, GgufHeader, MetaValue};

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
    /// An embedding model (an encoder, or any model whose file names a pooling into a vector,
    /// such as Qwen3-Embedding): it turns text into vectors and cannot chat.
    #[serde(default)]
    pub embedding: bool,
    /// Not a chat model: an embedding model, a reranker, or another encoder.
    #[serde(default)]
    pub not_for_chat: bool,
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
            Some(MetaValue::Array(a)) => Some(a.len),
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
            embedding: arch::is_embedding_model(&architecture, h.arch_u64("pooling_type")),
            not_for_chat: arch::is_not_for_chat(&architecture, h.arch_u64("pooling_type")),
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
pub(super) fn split_name(path: &Path) -> Option<(String, (u32, u32))> {
    let name = path.file_name()?.to_str()?;
    let base = name.strip_suffix(".gguf")?;
    let (rest, total) = base.rsplit_once("-of-")?;
    let (stem, index) = rest.rsplit_once('-')?;
    if index.len() != 5 || total.len() != 5 {
        return None;
    }
    Some((stem.to_string(), (index.parse().ok()?, total.parse().ok()?)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::library::tiny;

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
}
