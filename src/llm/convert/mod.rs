//! Converting a Hugging Face BERT-family sentence embedding model (a sentence-transformers
//! folder: `config.json`, `tokenizer.json`, `model.safetensors`, `1_Pooling/config.json`) to
//! a GGUF file llama.cpp runs as an embedding model (arch `bert`, WordPiece vocabulary, the
//! pooling the model was trained with). llama.cpp's own converter imports torch; this one
//! needs nothing but the files, so a model can be converted where it is fetched.
//!
//! The layout follows llama.cpp's `convert_hf_to_gguf.py` for `BertModel`: tensor names, the
//! "phantom space" vocabulary (a word-initial piece is `▁piece`, a continuation `##piece`
//! loses its `##`), and matrices in F16 with vectors in F32. The output is deterministic, so a
//! catalogue can pin its sha256.

pub mod safetensors;

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use crate::llm::embed::prompts::{DOCUMENT_PROMPT_KEY, QUERY_PROMPT_KEY};
use crate::llm::gguf::{GgufWriter, MetaValue, ValueType};
use crate::safe_open::{read_regular, Links};
use safetensors::{f32_to_f16, SafeTensors};

#[derive(Debug, thiserror::Error)]
pub enum ConvertError {
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
    #[error("{} has no {file}: is it a sentence-transformers model folder?", dir.display())]
    Missing { dir: PathBuf, file: String },
    #[error("{}: {message}", path.display())]
    Json { path: PathBuf, message: String },
    #[error("{}: {message}", path.display())]
    Safetensors { path: PathBuf, message: String },
    #[error("tensor {name}: {message}")]
    Tensor { name: String, message: String },
    #[error("cannot convert this model: {0}")]
    Unsupported(String),
    #[error("writing the GGUF file: {0}")]
    Write(io::Error),
}

/// How the weight matrices are stored (vectors are always F32).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precision {
    F32,
    /// Half the size, and what llama.cpp's converter writes by default; within 1e-3 in
    /// cosine of the F32 model on the reference sentences (see the embedding tests).
    F16,
    /// llama.cpp's 8-bit blocks (32 weights and one F16 scale): about half of F16's size,
    /// within 0.998 in cosine of the reference, but measured no faster than F16 on a 2-core
    /// x86-64-v3 CPU (docs/measurements/embedding.md), so the catalogue keeps F16.
    Q8_0,
}

impl Precision {
    /// The precision a catalogue's `quantization` names.
    pub fn from_label(label: &str) -> Option<Self> {
        match label.to_ascii_uppercase().as_str() {
            "F32" => Some(Precision::F32),
            "F16" => Some(Precision::F16),
            "Q8_0" => Some(Precision::Q8_0),
            _ => None,
        }
    }

    /// GGUF's `general.file_type` (llama.cpp's `llama_ftype`).
    fn file_type(self) -> u32 {
        match self {
            Precision::F32 => 0,
            Precision::F16 => 1,
            Precision::Q8_0 => 7,
        }
    }
}

const GGML_F32: u32 = 0;
const GGML_F16: u32 = 1;
const GGML_Q8_0: u32 = 8;
/// Weights per Q8_0 block.
const Q8_0_BLOCK: u64 = 32;

/// The parts of `config.json` a BERT conversion reads.
#[derive(Debug, Deserialize)]
struct BertConfig {
    model_type: Option<String>,
    hidden_size: u64,
    num_hidden_layers: u64,
    num_attention_heads: u64,
    intermediate_size: u64,
    max_position_embeddings: u64,
    #[serde(default = "one")]
    type_vocab_size: u64,
    #[serde(default = "default_eps")]
    layer_norm_eps: f64,
    hidden_act: Option<String>,
    position_embedding_type: Option<String>,
}

fn one() -> u64 {
    1
}

fn default_eps() -> f64 {
    1e-12
}

/// Converts the sentence-transformers BERT model in `dir` to GGUF, written to `out`. `name`
/// becomes the model's `general.name`.
pub fn convert_bert(
    dir: &Path,
    name: &str,
    precision: Precision,
    out: &mut dyn Write,
) -> Result<(), ConvertError> {
    let config: BertConfig = read_json(dir, "config.json")?;
    check_config(&config)?;
    let tokenizer: Value = read_json(dir, "tokenizer.json")?;
    let vocab = Vocab::from_tokenizer(&tokenizer, &dir.join("tokenizer.json"))?;
    let pooling = pooling_type(dir)?;
    let window = max_seq_length(dir)?;
    let prompts = retrieval_prompts(dir)?;
    let weights_path = dir.join("model.safetensors");
    if !weights_path.is_file() {
        return Err(ConvertError::Missing {
            dir: dir.to_path_buf(),
            file: "model.safetensors".into(),
        });
    }
    let mut weights = SafeTensors::open(&weights_path)?;
    let prefix = if weights
        .tensors
        .contains_key("bert.embeddings.word_embeddings.weight")
    {
        "bert."
    } else {
        ""
    };
    let plan = tensor_plan(&config, vocab.tokens.len() as u64, precision);
    // Shapes are checked before anything is written: a wrong one is the source's fault, and
    // must not leave a file llama.cpp would misread.
    for t in &plan {
        let source = format!("{prefix}{}", t.source);
        let entry = weights
            .tensors
            .get(&source)
            .ok_or_else(|| ConvertError::Tensor {
                name: source.clone(),
                message: "missing from model.safetensors".into(),
            })?;
        if entry.shape != t.shape {
            return Err(ConvertError::Tensor {
                name: source,
                message: format!(
                    "shape {:?}, where the config says {:?}",
                    entry.shape, t.shape
                ),
            });
        }
    }
    let mut writer = GgufWriter::new()
        .meta_str("general.architecture", "bert")
        .meta_str("general.name", name)
        .meta_u32("general.file_type", precision.file_type())
        .meta_u32(
            "bert.context_length",
            as_u32(config.max_position_embeddings)?,
        )
        .meta_u32("bert.embedding_length", as_u32(config.hidden_size)?)
        .meta_u32(
            "bert.feed_forward_length",
            as_u32(config.intermediate_size)?,
        )
        .meta_u32("bert.block_count", as_u32(config.num_hidden_layers)?)
        .meta_u32(
            "bert.attention.head_count",
            as_u32(config.num_attention_heads)?,
        )
        .meta(
            "bert.attention.layer_norm_epsilon",
            MetaValue::F32(config.layer_norm_eps as f32),
        )
        .meta("bert.attention.causal", MetaValue::Bool(false))
        .meta_u32("bert.pooling_type", pooling)
        .meta_str("tokenizer.ggml.model", "bert")
        .meta_u32(
            "tokenizer.ggml.token_type_count",
            as_u32(config.type_vocab_size)?,
        )
        .meta_array(
            "tokenizer.ggml.tokens",
            ValueType::String,
            vocab
                .tokens
                .iter()
                .cloned()
                .map(MetaValue::String)
                .collect(),
        )
        .meta_array(
            "tokenizer.ggml.token_type",
            ValueType::I32,
            vocab.types.iter().map(|&t| MetaValue::I32(t)).collect(),
        )
        .meta_u32("tokenizer.ggml.bos_token_id", vocab.cls)
        .meta_u32("tokenizer.ggml.cls_token_id", vocab.cls)
        .meta_u32("tokenizer.ggml.seperator_token_id", vocab.sep)
        .meta("tokenizer.ggml.add_bos_token", MetaValue::Bool(true))
        .meta("tokenizer.ggml.add_sep_token", MetaValue::Bool(true))
        .meta("tokenizer.ggml.add_eos_token", MetaValue::Bool(false))
        .meta(
            "tokenizer.ggml.normalizer.lowercase",
            MetaValue::Bool(vocab.lowercase),
        )
        .meta(
            "tokenizer.ggml.normalizer.strip_accents",
            MetaValue::Bool(vocab.strip_accents),
        );
    if let Some(n) = window {
        writer = writer.meta_u32(crate::llm::embed::WINDOW_KEY, as_u32(n)?);
    }
    // Only where the model has them, so a model without (all-MiniLM-L6-v2) converts to the
    // same bytes as before, the sha256 its catalogue entry pins.
    if let Some((query, document)) = &prompts {
        writer = writer
            .meta_str(QUERY_PROMPT_KEY, query)
            .meta_str(DOCUMENT_PROMPT_KEY, document);
    }
    for (key, id) in [
        ("tokenizer.ggml.unknown_token_id", vocab.unk),
        ("tokenizer.ggml.padding_token_id", vocab.pad),
        ("tokenizer.ggml.mask_token_id", vocab.mask),
    ] {
        if let Some(id) = id {
            writer = writer.meta_u32(key, id);
        }
    }
    for t in &plan {
        let dims: Vec<u64> = t.shape.iter().rev().copied().collect();
        writer = writer.tensor(&t.name, &dims, t.ggml_type);
    }
    let mut failed: Option<ConvertError> = None;
    let written = writer.write_with_data(out, &mut |i, w| {
        let t = &plan[i];
        let values = match weights.read_f32(&format!("{prefix}{}", t.source)) {
            Ok((_, values)) => values,
            Err(e) => {
                let message = e.to_string();
                failed = Some(e);
                return Err(io::Error::other(message));
            }
        };
        let mut bytes = Vec::with_capacity(values.len() * 4);
        match t.ggml_type {
            GGML_F16 => {
                for v in values {
                    bytes.extend_from_slice(&f32_to_f16(v).to_le_bytes());
                }
            }
            GGML_Q8_0 => quantize_q8_0(&values, &mut bytes),
            _ => {
                for v in values {
                    bytes.extend_from_slice(&v.to_le_bytes());
                }
            }
        }
        w.write_all(&bytes)
    });
    match (written, failed) {
        (_, Some(e)) => Err(e),
        (Err(e), None) => Err(ConvertError::Write(e)),
        (Ok(()), None) => Ok(()),
    }
}

/// ggml's reference Q8_0 quantization (`quantize_row_q8_0_ref`): per block of 32, the scale
/// is the largest magnitude over 127, stored as F16, and each weight its rounded quotient.
/// `values` is a whole number of blocks (the plan keeps other matrices in F16).
fn quantize_q8_0(values: &[f32], out: &mut Vec<u8>) {
    for block in values.chunks(Q8_0_BLOCK as usize) {
        let amax = block.iter().fold(0f32, |m, v| m.max(v.abs()));
        let d = amax / 127.0;
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        out.extend_from_slice(&f32_to_f16(d).to_le_bytes());
        for v in block {
            out.push((v * id).round() as i8 as u8);
        }
    }
}

fn as_u32(n: u64) -> Result<u32, ConvertError> {
    u32::try_from(n).map_err(|_| ConvertError::Unsupported(format!("{n} does not fit in 32 bits")))
}

fn check_config(c: &BertConfig) -> Result<(), ConvertError> {
    if let Some(t) = c.model_type.as_deref().filter(|t| *t != "bert") {
        return Err(ConvertError::Unsupported(format!(
            "model_type {t:?} (only BERT models are converted)"
        )));
    }
    if let Some(act) = c.hidden_act.as_deref().filter(|a| *a != "gelu") {
        return Err(ConvertError::Unsupported(format!(
            "hidden_act {act:?} (llama.cpp's BERT uses GELU)"
        )));
    }
    if let Some(p) = c
        .position_embedding_type
        .as_deref()
        .filter(|p| *p != "absolute")
    {
        return Err(ConvertError::Unsupported(format!(
            "position_embedding_type {p:?}"
        )));
    }
    if c.num_attention_heads == 0 || !c.hidden_size.is_multiple_of(c.num_attention_heads) {
        return Err(ConvertError::Unsupported(format!(
            "{} attention heads over a hidden size of {}",
            c.num_attention_heads, c.hidden_size
        )));
    }
    if c.num_hidden_layers == 0 || c.num_hidden_layers > 256 {
        return Err(ConvertError::Unsupported(format!(
            "{} layers",
            c.num_hidden_layers
        )));
    }
    Ok(())
}

fn read_json<T: serde::de::DeserializeOwned>(dir: &Path, file: &str) -> Result<T, ConvertError> {
    let path = dir.join(file);
    if !path.is_file() {
        return Err(ConvertError::Missing {
            dir: dir.to_path_buf(),
            file: file.to_string(),
        });
    }
    let bytes =
        read_regular(&path, Links::Follow, JSON_LIMIT).map_err(|source| ConvertError::Io {
            path: path.clone(),
            source,
        })?;
    serde_json::from_slice(&bytes).map_err(|e| ConvertError::Json {
        path,
        message: e.to_string(),
    })
}

/// A tokenizer.json of a large vocabulary is a few MiB; more is not a model folder.
const JSON_LIMIT: u64 = 64 << 20;

/// llama.cpp's pooling type from `1_Pooling/config.json` (mean when there is none: what
/// sentence-transformers does without one).
fn pooling_type(dir: &Path) -> Result<u32, ConvertError> {
    let path = dir.join("1_Pooling").join("config.json");
    if !path.is_file() {
        return Ok(1);
    }
    let modes: BTreeMap<String, Value> = read_json(dir, "1_Pooling/config.json")?;
    let on = |key: &str| modes.get(key).and_then(Value::as_bool).unwrap_or(false);
    match (
        on("pooling_mode_mean_tokens"),
        on("pooling_mode_cls_token"),
        on("pooling_mode_lasttoken"),
    ) {
        (true, false, false) => Ok(1),
        (false, true, false) => Ok(2),
        (false, false, true) => Ok(3),
        _ => Err(ConvertError::Unsupported(format!(
            "{}: pooling other than exactly one of mean, CLS or last token",
            path.display()
        ))),
    }
}

/// The window sentence-transformers reads the model in (`sentence_bert_config.json`), when
/// it says: MiniLM reads 256 tokens though its position table has 512.
fn max_seq_length(dir: &Path) -> Result<Option<u64>, ConvertError> {
    if !dir.join("sentence_bert_config.json").is_file() {
        return Ok(None);
    }
    let config: Value = read_json(dir, "sentence_bert_config.json")?;
    match &config["max_seq_length"] {
        Value::Null => Ok(None),
        // A window too short to hold a word between the model's own tokens made a file every
        // use of which failed.
        v => match v.as_u64().filter(|&n| n >= 4) {
            Some(n) => Ok(Some(n)),
            None => Err(ConvertError::Json {
                path: dir.join("sentence_bert_config.json"),
                message: format!("max_seq_length is {v}, not a window of 4 tokens or more"),
            }),
        },
    }
}

/// The prompts sentence-transformers puts before a query and before a document
/// (`config_sentence_transformers.json`'s `prompts`: "query", and "document", "passage" or
/// "corpus"), when the model names either.
fn retrieval_prompts(dir: &Path) -> Result<Option<(String, String)>, ConvertError> {
    const FILE: &str = "config_sentence_transformers.json";
    if !dir.join(FILE).is_file() {
        return Ok(None);
    }
    let config: Value = read_json(dir, FILE)?;
    let prompts = &config["prompts"];
    let wrong = |message: String| ConvertError::Json {
        path: dir.join(FILE),
        message,
    };
    if !(prompts.is_null() || prompts.is_object()) {
        return Err(wrong(format!(
            "\"prompts\" is {prompts}, not an object of texts"
        )));
    }
    // A prompt that is not text is a broken file, not a model without prompts.
    let text = |keys: &[&str]| -> Result<Option<String>, ConvertError> {
        for k in keys {
            match &prompts[*k] {
                Value::Null => continue,
                Value::String(s) => return Ok(Some(s.clone())),
                other => {
                    return Err(wrong(format!("prompts.{k} is {other}, not a text")));
                }
            }
        }
        Ok(None)
    };
    let query = text(&["query"])?;
    let document = text(&["document", "passage", "corpus"])?;
    if query.as_deref().unwrap_or("").is_empty() && document.as_deref().unwrap_or("").is_empty() {
        return Ok(None);
    }
    Ok(Some((
        query.unwrap_or_default(),
        document.unwrap_or_default(),
    )))
}

/// A WordPiece vocabulary as llama.cpp's BERT tokenizer reads it.
struct Vocab {
    tokens: Vec<String>,
    types: Vec<i32>,
    cls: u32,
    sep: u32,
    unk: Option<u32>,
    pad: Option<u32>,
    mask: Option<u32>,
    lowercase: bool,
    strip_accents: bool,
}

/// llama.cpp's token types.
const NORMAL: i32 = 1;
const CONTROL: i32 = 3;
const USER_DEFINED: i32 = 4;

impl Vocab {
    fn from_tokenizer(t: &Value, path: &Path) -> Result<Self, ConvertError> {
        let bad = |message: String| ConvertError::Json {
            path: path.to_path_buf(),
            message,
        };
        let model = &t["model"];
        if model["type"].as_str() != Some("WordPiece") {
            return Err(ConvertError::Unsupported(format!(
                "tokenizer model {} (a BERT model has WordPiece)",
                model["type"]
            )));
        }
        let prefix = model["continuing_subword_prefix"].as_str().unwrap_or("##");
        let vocab = model["vocab"]
            .as_object()
            .ok_or_else(|| bad("model.vocab is not an object".into()))?;
        let mut by_id: Vec<Option<&str>> = vec![None; vocab.len()];
        for (piece, id) in vocab {
            let id = id
                .as_u64()
                .and_then(|i| usize::try_from(i).ok())
                .filter(|&i| i < by_id.len())
                .ok_or_else(|| {
                    bad(format!(
                        "token {piece:?} has id {id}, outside the vocabulary"
                    ))
                })?;
            if by_id[id].replace(piece).is_some() {
                return Err(bad(format!("two tokens have id {id}")));
            }
        }
        let mut special = BTreeMap::new();
        let mut added = BTreeMap::new();
        for a in t["added_tokens"].as_array().into_iter().flatten() {
            if let (Some(id), Some(content)) = (a["id"].as_u64(), a["content"].as_str()) {
                added.insert(id, content);
                if a["special"].as_bool().unwrap_or(false) {
                    special.insert(id, content);
                }
            }
        }
        let mut tokens = Vec::with_capacity(by_id.len());
        let mut types = Vec::with_capacity(by_id.len());
        for (id, piece) in by_id.iter().enumerate() {
            let piece = piece.ok_or_else(|| bad(format!("no token has id {id}")))?;
            tokens.push(phantom(piece, prefix));
            types.push(if special.contains_key(&(id as u64)) {
                CONTROL
            } else if added.contains_key(&(id as u64)) {
                USER_DEFINED
            } else {
                NORMAL
            });
        }
        let find = |piece: &str| vocab.get(piece).and_then(Value::as_u64).map(|i| i as u32);
        let cls = find("[CLS]").ok_or_else(|| bad("no [CLS] token".into()))?;
        let sep = find("[SEP]").ok_or_else(|| bad("no [SEP] token".into()))?;
        let unk = model["unk_token"].as_str().and_then(find);
        let normalizer = &t["normalizer"];
        let lowercase = normalizer["lowercase"].as_bool().unwrap_or(true);
        // BertNormalizer: strip_accents null follows lowercase.
        let strip_accents = normalizer["strip_accents"].as_bool().unwrap_or(lowercase);
        Ok(Vocab {
            tokens,
            types,
            cls,
            sep,
            unk,
            pad: find("[PAD]"),
            mask: find("[MASK]"),
            lowercase,
            strip_accents,
        })
    }
}

/// A WordPiece piece in llama.cpp's "phantom space" form.
fn phantom(piece: &str, prefix: &str) -> String {
    if piece.starts_with('[') && piece.ends_with(']') {
        piece.to_string()
    } else if let Some(rest) = piece.strip_prefix(prefix) {
        rest.to_string()
    } else {
        format!("\u{2581}{piece}")
    }
}

/// One tensor of the output: its GGUF name, the source tensor and its (PyTorch-order) shape.
struct Planned {
    name: String,
    source: String,
    shape: Vec<u64>,
    ggml_type: u32,
}

fn tensor_plan(c: &BertConfig, n_vocab: u64, precision: Precision) -> Vec<Planned> {
    // A matrix whose rows are not whole Q8_0 blocks stays F16, as llama.cpp's converter
    // falls back.
    let matrix_of = |row: u64| match precision {
        Precision::Q8_0 if row.is_multiple_of(Q8_0_BLOCK) => GGML_Q8_0,
        Precision::Q8_0 | Precision::F16 => GGML_F16,
        Precision::F32 => GGML_F32,
    };
    let (h, ff) = (c.hidden_size, c.intermediate_size);
    let t = |name: &str, source: &str, shape: &[u64], ty: u32| Planned {
        name: name.to_string(),
        source: source.to_string(),
        shape: shape.to_vec(),
        ggml_type: ty,
    };
    let mut plan = vec![
        t(
            "token_embd.weight",
            "embeddings.word_embeddings.weight",
            &[n_vocab, h],
            matrix_of(h),
        ),
        // Added to every position as a row view: kept F32, as llama.cpp's converter does.
        t(
            "token_types.weight",
            "embeddings.token_type_embeddings.weight",
            &[c.type_vocab_size, h],
            GGML_F32,
        ),
        t(
            "position_embd.weight",
            "embeddings.position_embeddings.weight",
            &[c.max_position_embeddings, h],
            GGML_F32,
        ),
        t(
            "token_embd_norm.weight",
            "embeddings.LayerNorm.weight",
            &[h],
            GGML_F32,
        ),
        t(
            "token_embd_norm.bias",
            "embeddings.LayerNorm.bias",
            &[h],
            GGML_F32,
        ),
    ];
    for i in 0..c.num_hidden_layers {
        let layer = format!("encoder.layer.{i}");
        for (gguf, hf, shape) in [
            ("attn_q", "attention.self.query", [h, h]),
            ("attn_k", "attention.self.key", [h, h]),
            ("attn_v", "attention.self.value", [h, h]),
            ("attn_output", "attention.output.dense", [h, h]),
            ("ffn_up", "intermediate.dense", [ff, h]),
            ("ffn_down", "output.dense", [h, ff]),
        ] {
            plan.push(t(
                &format!("blk.{i}.{gguf}.weight"),
                &format!("{layer}.{hf}.weight"),
                &shape,
                matrix_of(shape[1]),
            ));
            plan.push(t(
                &format!("blk.{i}.{gguf}.bias"),
                &format!("{layer}.{hf}.bias"),
                &[shape[0]],
                GGML_F32,
            ));
        }
        for (gguf, hf) in [
            ("attn_output_norm", "attention.output.LayerNorm"),
            ("layer_output_norm", "output.LayerNorm"),
        ] {
            for part in ["weight", "bias"] {
                plan.push(t(
                    &format!("blk.{i}.{gguf}.{part}"),
                    &format!("{layer}.{hf}.{part}"),
                    &[h],
                    GGML_F32,
                ));
            }
        }
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wordpiece_pieces_take_llamas_phantom_space_form() {
        assert_eq!(phantom("[CLS]", "##"), "[CLS]");
        assert_eq!(phantom("##ing", "##"), "ing");
        assert_eq!(phantom("walk", "##"), "\u{2581}walk");
        assert_eq!(phantom("#", "##"), "\u{2581}#");
    }

    #[test]
    fn q8_0_blocks_are_a_scale_and_32_rounded_quotients() {
        let mut values: Vec<f32> = (0..32).map(|i| i as f32 - 16.0).collect();
        values.extend([0f32; 32]);
        let mut out = Vec::new();
        quantize_q8_0(&values, &mut out);
        assert_eq!(out.len(), 2 * 34);
        let d = safetensors::f16_to_f32(u16::from_le_bytes([out[0], out[1]]));
        assert!((d - 16.0 / 127.0).abs() < 1e-4, "{d}");
        // -16 is the largest magnitude: -127; 4 is 31.75, rounded to 32.
        assert_eq!(out[2] as i8, -127);
        assert_eq!(out[2 + 20] as i8, 32);
        assert_eq!(out[2 + 16] as i8, 0);
        // An all-zero block has a zero scale and zero weights, not NaN.
        assert!(out[34..].iter().all(|&b| b == 0));
    }

    #[test]
    fn sentence_transformers_prompts_are_read_where_the_model_has_them() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(retrieval_prompts(dir.path()).unwrap(), None, "no file");
        let file = dir.path().join("config_sentence_transformers.json");
        for (config, want) in [
            // all-MiniLM-L6-v2's: none, so it converts as before.
            (
                r#"{"__version__": {"sentence_transformers": "2.0.0"}}"#,
                None,
            ),
            (r#"{"prompts": {}, "default_prompt_name": null}"#, None),
            (r#"{"prompts": {"query": "", "passage": ""}}"#, None),
            (
                r#"{"prompts": {"query": "search_query: ", "document": "search_document: ",
                    "clustering": "clustering: "}}"#,
                Some(("search_query: ", "search_document: ")),
            ),
            (
                r#"{"prompts": {"query": "query: ", "passage": "passage: "}}"#,
                Some(("query: ", "passage: ")),
            ),
            (
                r#"{"prompts": {"query": "Represent this sentence for searching relevant passages: "}}"#,
                Some((
                    "Represent this sentence for searching relevant passages: ",
                    "",
                )),
            ),
        ] {
            std::fs::write(&file, config).unwrap();
            let got = retrieval_prompts(dir.path()).unwrap();
            let want = want.map(|(q, d): (&str, &str)| (q.to_string(), d.to_string()));
            assert_eq!(got, want, "{config}");
        }
        for broken in [
            "{",
            r#"{"prompts": {"query": 5}}"#,
            r#"{"prompts": ["query: "]}"#,
        ] {
            std::fs::write(&file, broken).unwrap();
            let e = retrieval_prompts(dir.path()).unwrap_err();
            assert!(matches!(e, ConvertError::Json { .. }), "{broken}: {e}");
        }
        let e = retrieval_prompts(dir.path()).unwrap_err().to_string();
        assert!(e.contains("config_sentence_transformers.json"), "{e}");
        let window = dir.path().join("sentence_bert_config.json");
        for (config, want) in [
            (r#"{"max_seq_length": 256}"#, Some(Some(256))),
            (r#"{"do_lower_case": false}"#, Some(None)),
            (r#"{"max_seq_length": 0}"#, None),
            (r#"{"max_seq_length": "long"}"#, None),
        ] {
            std::fs::write(&window, config).unwrap();
            assert_eq!(max_seq_length(dir.path()).ok(), want, "{config}");
        }
    }
}
