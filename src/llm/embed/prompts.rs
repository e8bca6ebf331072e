//! What an embedding model is given before a query and before a document. Retrieval models
//! such as nomic-embed-text, bge and e5 were trained with a task prompt in front of each text
//! ("search_query: ", "query: ", …) and rank worse without it; sentence-transformers adds them
//! from the model's `config_sentence_transformers.json`, and a GGUF file carries none of that.
//! So the prompts come from the file when Burrow's converter wrote them there, else from the
//! model's family as its name says it (the table below, from the models' cards and MTEB's
//! model registry), else there are none (all-MiniLM-L6-v2, gte, granite, jina v2). jina v3
//! is left out: it switches LoRA adapters by task, which a prompt alone does not do.

use serde::Serialize;

use crate::llm::gguf::GgufHeader;

/// Where Burrow's converter keeps sentence-transformers' `prompts` ("query", and "document"
/// or "passage"), beside `sentence_transformers.max_seq_length`.
pub const QUERY_PROMPT_KEY: &str = "sentence_transformers.prompts.query";
pub const DOCUMENT_PROMPT_KEY: &str = "sentence_transformers.prompts.document";

/// The texts put before a query and before a document.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Prompts {
    pub query: String,
    pub document: String,
    /// Where they come from, for the user: "the model file", "the nomic-embed-text family",
    /// "settings", or "none".
    pub source: String,
}

impl Prompts {
    pub fn is_empty(&self) -> bool {
        self.query.is_empty() && self.document.is_empty()
    }

    /// The query as the model is given it.
    pub fn query(&self, text: &str) -> String {
        format!("{}{text}", self.query)
    }

    /// The document as the model is given it.
    pub fn document(&self, text: &str) -> String {
        format!("{}{text}", self.document)
    }
}

/// A family of models that share their prompts, recognized by its name.
struct Family {
    /// What the family is called, for the user.
    name: &'static str,
    /// Whether a lowercase model name (hyphens for underscores and spaces) is one of it.
    matches: fn(&str) -> bool,
    query: &'static str,
    document: &'static str,
}

/// bge's English instruction, which mxbai-embed-large and arctic-embed v1 took over.
const REPRESENT: &str = "Represent this sentence for searching relevant passages: ";

/// First match wins, so the exceptions of a family come before it ("bge-m3" is neither of the
/// bge rules, which need "-en" or "-zh").
const FAMILIES: &[Family] = &[
    // bge's models trained without the instruction, and bge-en-icl, whose prompt is a
    // template of examples rather than a prefix: given texts bare.
    Family {
        name: "bge (no instruction)",
        matches: |n| n.contains("bge-") && (n.contains("noinstruct") || n.contains("-icl")),
        query: "",
        document: "",
    },
    Family {
        name: "nomic-embed-code",
        matches: |n| n.contains("nomic-embed-code"),
        query: "Represent this query for searching relevant code: ",
        document: "",
    },
    Family {
        name: "nomic-embed-text",
        matches: |n| n.contains("nomic-embed-text"),
        query: "search_query: ",
        document: "search_document: ",
    },
    Family {
        name: "bge (Chinese)",
        matches: |n| n.contains("bge-") && n.contains("-zh"),
        query: "为这个句子生成表示以用于检索相关文章：",
        document: "",
    },
    Family {
        name: "bge (English)",
        matches: |n| n.contains("bge-") && n.contains("-en"),
        query: REPRESENT,
        document: "",
    },
    Family {
        name: "mxbai-embed-large",
        matches: |n| n.contains("mxbai-embed-large"),
        query: REPRESENT,
        document: "",
    },
    Family {
        name: "snowflake-arctic-embed 2.0",
        matches: |n| n.contains("arctic-embed") && n.contains("v2"),
        query: "query: ",
        document: "",
    },
    Family {
        name: "snowflake-arctic-embed",
        matches: |n| n.contains("arctic-embed"),
        query: REPRESENT,
        document: "",
    },
    Family {
        name: "multilingual-e5 (instruct)",
        matches: |n| is_e5(n) && n.contains("instruct"),
        query: "Instruct: Given a web search query, retrieve relevant passages that answer the query\nQuery: ",
        document: "",
    },
    Family {
        name: "e5",
        matches: is_e5,
        query: "query: ",
        document: "passage: ",
    },
    Family {
        name: "EmbeddingGemma",
        matches: |n| n.contains("embeddinggemma") || n.contains("embedding-gemma"),
        query: "task: search result | query: ",
        document: "title: none | text: ",
    },
    Family {
        name: "gte-Qwen (instruct)",
        matches: |n| n.contains("gte-qwen") && n.contains("instruct"),
        query: "Instruct: Given a web search query, retrieve relevant passages that answer the query\nQuery: ",
        document: "",
    },
    Family {
        name: "Qwen3-Embedding",
        matches: |n| n.contains("qwen3-embedding"),
        query: "Instruct: Given a web search query, retrieve relevant passages that answer the query\nQuery:",
        document: "",
    },
    // Known to take texts bare: named here so that a file whose own name says so is not
    // taken for another family by a renamed file's name.
    Family {
        name: "bge-m3",
        matches: |n| n.contains("bge-m3"),
        query: "",
        document: "",
    },
    Family {
        name: "sentence-transformers (MiniLM, mpnet)",
        matches: |n| n.contains("minilm") || n.contains("mpnet"),
        query: "",
        document: "",
    },
    Family {
        name: "gte",
        matches: |n| n.starts_with("gte-") || n.contains("-gte-") || n.contains("/gte-"),
        query: "",
        document: "",
    },
    Family {
        name: "granite-embedding",
        matches: |n| n.contains("granite-embedding"),
        query: "",
        document: "",
    },
    Family {
        name: "jina-embeddings v2",
        matches: |n| n.contains("jina-embeddings-v2"),
        query: "",
        document: "",
    },
];

/// intfloat's e5 models: "e5-small-v2", "multilingual-e5-large", "intfloat/e5-base", and not
/// every name that holds "e5" ("gte5", "bge5").
fn is_e5(n: &str) -> bool {
    n.split(|c: char| !c.is_ascii_alphanumeric())
        .any(|word| word == "e5")
}

/// The name as the table matches it.
fn normalized(name: &str) -> String {
    name.trim()
        .to_lowercase()
        .chars()
        .map(|c| if c == '_' || c == ' ' { '-' } else { c })
        .collect()
}

/// The prompts of the model whose file's header is `header`.
pub fn detect(header: &GgufHeader) -> Prompts {
    let file_name = header
        .path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    let query = header.get_str(QUERY_PROMPT_KEY);
    let document = header.get_str(DOCUMENT_PROMPT_KEY);
    if query.is_some() || document.is_some() {
        return Prompts {
            query: query.unwrap_or_default().to_string(),
            document: document.unwrap_or_default().to_string(),
            source: "the model file".into(),
        };
    }
    // The file's own names first: a file renamed by hand ("model.gguf", an Ollama blob) still
    // says what it is inside. `general.name` before `general.basename`: llama.cpp's converter
    // leaves the variant out of the basename ("snowflake-arctic-embed-l" for v2.0,
    // "multilingual-e5" for its instruct model), and the variant decides. The first name of a
    // known family decides, prompts or none.
    let names = [
        header.get_str("general.name"),
        header.get_str("general.basename"),
        Some(&*file_name),
    ];
    for name in names.into_iter().flatten() {
        let n = normalized(name);
        if let Some(f) = FAMILIES.iter().find(|f| (f.matches)(&n)) {
            return Prompts {
                query: f.query.to_string(),
                document: f.document.to_string(),
                source: format!("the {} family", f.name),
            };
        }
    }
    Prompts {
        source: "none".into(),
        ..Prompts::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::gguf::GgufWriter;

    /// The header of a file called `file` holding `meta`.
    fn header(file: &str, meta: &[(&str, &str)]) -> GgufHeader {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(file);
        let mut w = GgufWriter::new().meta_str("general.architecture", "bert");
        for (k, v) in meta {
            w = w.meta_str(k, v);
        }
        w.write_to(&path, false).unwrap();
        GgufHeader::read(&path).unwrap()
    }

    #[test]
    fn the_files_own_prompts_come_first_then_its_names_then_none() {
        let keys = header(
            "nomic-embed-text-v1.5.gguf",
            &[
                ("general.name", "nomic-embed-text-v1.5"),
                (QUERY_PROMPT_KEY, "query: "),
            ],
        );
        let p = detect(&keys);
        assert_eq!((p.query.as_str(), p.document.as_str()), ("query: ", ""));
        assert_eq!(p.source, "the model file");
        // The names inside the file before the file's own name, and the full name before the
        // basename, which llama.cpp's converter writes without the variant.
        for (name, basename, want) in [
            (
                "Snowflake Arctic Embed L v2.0",
                "snowflake-arctic-embed-l",
                "query: ",
            ),
            (
                "Multilingual E5 Large Instruct",
                "multilingual-e5",
                "Instruct: Given a web search query, retrieve relevant passages that answer the query\nQuery: ",
            ),
            (
                "Gte Qwen2 1.5B Instruct",
                "gte-Qwen2",
                "Instruct: Given a web search query, retrieve relevant passages that answer the query\nQuery: ",
            ),
        ] {
            let h = header(
                "model.gguf",
                &[("general.name", name), ("general.basename", basename)],
            );
            assert_eq!(detect(&h).query, want, "{name}");
        }
        let named = header(
            "nomic-embed-text.gguf",
            &[("general.basename", "bge-small-en-v1.5")],
        );
        let p = detect(&named);
        assert_eq!(p.source, "the bge (English) family");
        assert_eq!(p.query, REPRESENT);
        let p = detect(&header(
            "e5-base-v2.Q8_0.gguf",
            &[("general.name", "Model")],
        ));
        assert_eq!(
            (p.query.as_str(), p.document.as_str()),
            ("query: ", "passage: ")
        );
        let p = detect(&header("model.gguf", &[]));
        assert!(p.is_empty());
        assert_eq!(p.source, "none");
        assert_eq!(p.query("a b"), "a b");
        // A name inside the file that says "no prompts" is not overruled by the file's name.
        let minilm = header(
            "nomic-embed-text-v1.5.f16.gguf",
            &[("general.name", "all-MiniLM-L6-v2")],
        );
        let p = detect(&minilm);
        assert!(p.is_empty());
        assert_eq!(p.source, "the sentence-transformers (MiniLM, mpnet) family");
    }

    fn family(name: &str) -> Option<&'static str> {
        let n = normalized(name);
        FAMILIES.iter().find(|f| (f.matches)(&n)).map(|f| f.name)
    }

    #[test]
    fn a_model_is_known_by_the_names_its_files_go_by() {
        for (name, want) in [
            ("nomic-embed-text-v1.5", Some("nomic-embed-text")),
            ("nomic-embed-text-v1.5.Q8_0.gguf", Some("nomic-embed-text")),
            ("Nomic Embed Text V2 MoE", Some("nomic-embed-text")),
            ("nomic-embed-code.Q4_K_M.gguf", Some("nomic-embed-code")),
            ("bge-small-en-v1.5-q8_0.gguf", Some("bge (English)")),
            ("BGE Base En v1.5", Some("bge (English)")),
            ("bge-large-zh-v1.5", Some("bge (Chinese)")),
            ("bge-m3-Q4_K_M.gguf", Some("bge-m3")),
            ("mxbai-embed-large-v1-f16.gguf", Some("mxbai-embed-large")),
            (
                "snowflake-arctic-embed-m-v1.5",
                Some("snowflake-arctic-embed"),
            ),
            (
                "snowflake-arctic-embed-l-v2.0",
                Some("snowflake-arctic-embed 2.0"),
            ),
            ("e5-small-v2.Q8_0.gguf", Some("e5")),
            ("multilingual-e5-base", Some("e5")),
            (
                "multilingual-e5-large-instruct-q8_0.gguf",
                Some("multilingual-e5 (instruct)"),
            ),
            ("embeddinggemma-300m-qat-Q8_0.gguf", Some("EmbeddingGemma")),
            ("Qwen3-Embedding-0.6B-Q8_0.gguf", Some("Qwen3-Embedding")),
            ("Qwen3 Embedding 0.6b", Some("Qwen3-Embedding")),
            (
                "gte-Qwen2-1.5B-instruct-Q4_K_M.gguf",
                Some("gte-Qwen (instruct)"),
            ),
            (
                "Multilingual E5 Large Instruct",
                Some("multilingual-e5 (instruct)"),
            ),
            ("Bge Small En v1.5", Some("bge (English)")),
            (
                "Snowflake Arctic Embed L v2.0",
                Some("snowflake-arctic-embed 2.0"),
            ),
            ("Embeddinggemma 300m", Some("EmbeddingGemma")),
            (
                "all-MiniLM-L6-v2.F16.gguf",
                Some("sentence-transformers (MiniLM, mpnet)"),
            ),
            ("gte-small.gguf", Some("gte")),
            ("gte-base-en-v1.5", Some("gte")),
            ("thenlper/gte-large", Some("gte")),
            ("granite-embedding-30m-english", Some("granite-embedding")),
            ("jina-embeddings-v2-base-code", Some("jina-embeddings v2")),
            ("bge5-like.gguf", None),
            ("bge-large-zh-noinstruct", Some("bge (no instruction)")),
            ("bge-en-icl-Q4_K_M.gguf", Some("bge (no instruction)")),
            ("e5like.gguf", None),
            ("model.gguf", None),
        ] {
            assert_eq!(family(name), want, "{name}");
        }
    }
}
