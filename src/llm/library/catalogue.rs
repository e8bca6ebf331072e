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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalogue_parses_and_has_the_default() {
        let c = Catalogue::builtin();
        let d = c.default_entry().unwrap();
        assert_eq!(d.file, "SmolLM2-135M-Instruct.Q4_1.gguf");
        assert_eq!(d.sha256.len(), 64);
    }
}
