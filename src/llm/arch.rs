//! Model architectures the pinned llama.cpp can load (from `LLM_ARCH_NAMES` in its
//! `src/llama-arch.cpp`). Checked before loading, so an unknown architecture is a clear error
//! naming the file instead of a line in llama.cpp's log.

pub const SUPPORTED_ARCHITECTURES: &[&str] = &[
    "clip",
    "llama",
    "llama4",
    "deci",
    "falcon",
    "grok",
    "gpt2",
    "gptj",
    "gptneox",
    "mpt",
    "baichuan",
    "starcoder",
    "refact",
    // The BERT family: EMBEDDING_ARCHITECTURES.
    "bloom",
    "stablelm",
    "qwen",
    "qwen2",
    "qwen2moe",
    "qwen2vl",
    "qwen3",
    "qwen3moe",
    "qwen3next",
    "qwen3vl",
    "qwen3vlmoe",
    "qwen35",
    "qwen35moe",
    "clef",
    "qwen4exp",
    "phi2",
    "phi3",
    "phimoe",
    "plamo",
    "plamo2",
    "plamo3",
    "codeshell",
    "orion",
    "internlm2",
    "minicpm",
    "minicpm3",
    "gemma",
    "gemma2",
    "gemma3",
    "gemma3n",
    "gemma4",
    "gemma4-assistant",
    // "gemma-embedding": EMBEDDING_ARCHITECTURES.
    "starcoder2",
    "mamba",
    "mamba2",
    "maple",
    "jamba",
    "falcon-h1",
    "xverse",
    "command-r",
    "cohere2",
    "cohere2moe",
    "dbrx",
    "olmo",
    "olmo2",
    "olmoe",
    "muse-glimmer",
    "openelm",
    "arctic",
    "deepseek",
    "deepseek2",
    "deepseek2-ocr",
    "deepseek32",
    "deepseek4",
    "chatglm",
    "glm4",
    "glm4moe",
    "glm-dsa",
    "bitnet",
    "t5",
    "t5encoder",
    "jais",
    "jais2",
    "nemotron",
    "nemotron_h",
    "nemotron_h_moe",
    "exaone",
    "exaone4",
    "exaone-moe",
    "rwkv6",
    "rwkv6qwen2",
    "rwkv7",
    "arwkv7",
    "granite",
    "granitemoe",
    "granitehybrid",
    "graniteswitch",
    "granite_swa",
    "chameleon",
    "wavtokenizer-dec",
    "plm",
    "bailingmoe",
    "bailingmoe2",
    "bailingmoe3",
    "dots1",
    "dots3note",
    "arcee",
    "afmoe",
    "laguna",
    "ernie4_5",
    "ernie4_5-moe",
    "hunyuan-moe",
    "hunyuan-dense",
    "hunyuan_vl",
    "hy_v3",
    "hy_v4",
    "smollm3",
    "gpt-oss",
    "lfm2",
    "lfm2moe",
    "dream",
    "smallthinker",
    "llada",
    "llada-moe",
    "seed_oss",
    "grovemoe",
    "apertus",
    "minimax-01",
    "hrm_text",
    "minimax-m2",
    "minimax-m3",
    "cogvlm",
    "rnd1",
    "pangu-embedded",
    "mistral3",
    "eagle3",
    "dflash",
    "mistral4",
    "paddleocr",
    "mimo2",
    "step35",
    "spark2_5",
    "llama-embed",
    "maincoder",
    "kimi-linear",
    "kimi-k3",
    "glm5-next",
    "talkie",
    "mellum",
    "nanbeige",
    "qwen3tts",
    "pockettts",
];

/// Architectures in the list that are not language models on their own (vision projectors,
/// audio codecs): loading one as a chat model fails in llama.cpp, so it is refused up front.
pub const NON_CHAT_ARCHITECTURES: &[&str] = &["clip", "wavtokenizer-dec"];

/// Encoder architectures llama.cpp pools into one vector per text: embedding models, which
/// search by meaning reads with and which cannot chat.
pub const EMBEDDING_ARCHITECTURES: &[&str] = &[
    "bert",
    "modern-bert",
    "nomic-bert",
    "nomic-bert-moe",
    "neo-bert",
    "jina-bert-v2",
    "jina-bert-v3",
    "eurobert",
    // EmbeddingGemma: Gemma 3 with bidirectional attention, which llama.cpp cannot decode
    // with for chat.
    "gemma-embedding",
];

pub fn is_embedding(arch: &str) -> bool {
    EMBEDDING_ARCHITECTURES.contains(&arch)
}

/// llama.cpp's pooling types a file may name (`{arch}.pooling_type`).
const POOLING_NONE: u64 = 0;
const POOLING_RANK: u64 = 4;

/// Whether a model of `arch` whose file gives `pooling` turns a text into one vector: an
/// encoder architecture that pools, or any architecture whose file names a pooling into a
/// vector (Qwen3-Embedding is a `qwen3` with last-token pooling). Not a reranker (pooled to
/// one score for a query and a text together), nor an encoder giving a vector per token.
pub fn is_embedding_model(arch: &str, pooling: Option<u64>) -> bool {
    match pooling {
        Some(POOLING_NONE | POOLING_RANK) => false,
        Some(_) => true,
        None => is_embedding(arch),
    }
}

/// Whether a model of `arch` whose file gives `pooling` cannot chat: an encoder, or a model
/// tuned to pool (an embedding model or a reranker).
pub fn is_not_for_chat(arch: &str, pooling: Option<u64>) -> bool {
    is_embedding(arch) || pooling.is_some_and(|p| p != POOLING_NONE)
}

/// Whether the pinned llama.cpp loads the architecture (as a chat model or, for the BERT
/// family, an embedding model).
pub fn is_supported(arch: &str) -> bool {
    (SUPPORTED_ARCHITECTURES.contains(&arch) || is_embedding(arch))
        && !NON_CHAT_ARCHITECTURES.contains(&arch)
}
