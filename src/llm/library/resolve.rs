//! What the user typed (`--model`), matched to a discovered model or taken as a path.

use std::path::{Path, PathBuf};

use super::discovery::file_label;
use super::ModelInfo;
use crate::llm::engine::LlmError;

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
        // Two copies of one model (listed with their files' names beside theirs) are not
        // "no model": say which, so the user can pick one.
        [_, _, ..] => Err(LlmError::AmbiguousModel {
            query: query.to_string(),
            paths: partial.iter().map(|m| m.path.clone()).collect(),
        }),
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
    use crate::llm::library::{tiny, ModelSource};

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
        // Two copies listed under their files' names: "no model matches" named both as
        // available; now the name is said to be ambiguous, with the paths to choose from.
        let copy = dir.path().join("Tiny-Q4-copy.gguf");
        std::fs::copy(&p, &copy).unwrap();
        let both = vec![
            ModelInfo {
                name: "Tiny Model (Tiny-Q4.gguf)".into(),
                ..found[0].clone()
            },
            ModelInfo {
                name: "Tiny Model (Tiny-Q4-copy.gguf)".into(),
                path: copy.clone(),
                ..found[0].clone()
            },
        ];
        let e = resolve("Tiny Model", &both).unwrap_err();
        assert!(matches!(e, LlmError::AmbiguousModel { .. }), "{e}");
        let e = e.to_string();
        assert!(
            e.contains("matches 2 models") && e.contains("Tiny-Q4-copy.gguf"),
            "{e}"
        );
    }
}
