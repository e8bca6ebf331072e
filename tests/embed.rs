//! The embedding model of search by meaning. Burrow converts all-MiniLM-L6-v2 from
//! its PyPI wheel (a sentence-transformers folder) to GGUF itself, and llama.cpp running the
//! result gives the vectors of a reference implementation (`scripts/embed/reference.py`: a
//! float64 numpy BERT checked against sentence-transformers' published similarities), for
//! the same token ids. Bad inputs are typed errors, never an abort.

mod common;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use burrow::app::meaning::ModelEmbedder;
use burrow::app::App;
use burrow::config::BurrowHome;
use burrow::llm::convert::{convert_bert, ConvertError, Precision};
use burrow::llm::embed::{check_embedding_model, EmbedError, EmbeddingModel, WINDOW_KEY};
use burrow::llm::library::fetch::{fetch, WheelDir};
use burrow::llm::library::{Catalogue, Purpose};
use burrow::workspace::{Embedder, MAX_EMBED_TOKENS};
use serde_json::Value;

use common::wheels;

/// The catalogue's embedding model, fetched and converted once for all the tests here.
fn minilm() -> &'static Path {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| common::convert_minilm("embed-minilm"))
}

fn model() -> &'static EmbeddingModel {
    static MODEL: OnceLock<EmbeddingModel> = OnceLock::new();
    MODEL.get_or_init(|| EmbeddingModel::load(minilm(), 2).unwrap())
}

struct Reference {
    text: String,
    token_ids: Vec<i32>,
    embedding: Vec<f32>,
}

fn reference() -> Vec<Reference> {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/embed/minilm-reference.json");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    v["sentences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| Reference {
            text: s["text"].as_str().unwrap().to_string(),
            token_ids: s["token_ids"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t.as_i64().unwrap() as i32)
                .collect(),
            embedding: s["embedding"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap() as f32)
                .collect(),
        })
        .collect()
}

/// An issue export of three issues in `dir`, for `import`.
fn three_issues(dir: &Path) -> PathBuf {
    let issues: Vec<Value> = [
        (
            1,
            "Wallet window segfault on close",
            "Closing the wallet window aborts the app.",
        ),
        (
            2,
            "Settings dialog typo",
            "The word 'recieve' is misspelled in the settings.",
        ),
        (
            3,
            "Peers table sorting",
            "Sorting the peers table by address is wrong.",
        ),
    ]
    .iter()
    .map(|(n, title, body)| {
        serde_json::json!({
            "number": n, "title": title, "body": body, "state": "open",
            "user": {"login": "ann"}, "created_at": "2024-01-01T00:00:00Z",
            "updated_at": "2024-01-01T00:00:00Z"
        })
    })
    .collect();
    let export = dir.join("issues.json");
    std::fs::write(&export, serde_json::to_string(&issues).unwrap()).unwrap();
    export
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb: f32 = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (na * nb)
}

#[test]
fn the_catalogues_embedding_model_is_converted_from_its_wheel_to_the_pinned_file() {
    // `fetch` checks the catalogue's size and sha256: the conversion is deterministic.
    let header = check_embedding_model(minilm()).unwrap();
    assert_eq!(header.architecture(), Some("bert"));
    assert_eq!(header.arch_u64("pooling_type"), Some(1), "mean pooling");
    assert_eq!(header.get_u64(WINDOW_KEY), Some(256));
    assert_eq!(header.get_str("tokenizer.ggml.model"), Some("bert"));
    let m = model();
    assert_eq!(m.dimension(), 384);
    assert_eq!(m.max_tokens(), 256);
}

#[test]
fn minilm_embeds_what_the_reference_implementation_does() {
    let _guard = common::exclusive();
    let m = model();
    let sentences = reference();
    let (long, short): (Vec<&Reference>, Vec<&Reference>) = sentences
        .iter()
        .partition(|s| s.token_ids.len() >= m.max_tokens());
    assert_eq!(
        long.len(),
        1,
        "the fixture has one sentence past the window"
    );
    let texts: Vec<&str> = short.iter().map(|s| s.text.as_str()).collect();
    let vectors = m.embed(&texts).unwrap();
    for (s, v) in short.iter().zip(&vectors) {
        assert_eq!(m.tokens(&s.text), s.token_ids, "tokens of {:?}", s.text);
        let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "{:?}: norm {norm}", s.text);
        // F16 weights: 0.999999 measured; a wrong norm epsilon, pooling or vocabulary form
        // falls far below.
        let c = cosine(v, &s.embedding);
        assert!(c > 0.9999, "{:?}: cosine {c} with the reference", s.text);
    }
    // Paraphrases are close, unrelated texts are not, as with the reference.
    let (fox, fast_fox, ripgrep) = (&vectors[0], &vectors[1], &vectors[2]);
    assert!(cosine(fox, fast_fox) > 0.6 && cosine(fox, ripgrep) < 0.1);

    // Past the window: read in windows (the reference cuts at 256 tokens; the text repeats
    // one sentence, so the two agree), the first window's tokens as the reference's.
    let long = long[0];
    let tokens = m.tokens(&long.text);
    assert!(tokens.len() > m.max_tokens());
    assert_eq!(tokens[..255], long.token_ids[..255]);
    let v = m.embed(&[&long.text]).unwrap().remove(0);
    let c = cosine(&v, &long.embedding);
    assert!(c > 0.98, "cosine {c} with the reference's first window");
}

/// `models convert --outtype q8_0` and a catalogue entry of quantization Q8_0: llama.cpp's
/// 8-bit blocks, written by Burrow's own quantizer. The file is deterministic (its sha256 is
/// checked by the fetch) and llama.cpp reads it to within 0.998 in cosine of the reference:
/// 0.9982 at worst, measured; a wrong block layout or scale gives noise. Not the catalogue's
/// default: on this machine it embedded no faster than F16 (llama.cpp's F16 matrix products
/// are as fast here), so it buys only size (24 MiB against 44).
#[test]
fn a_q8_0_conversion_embeds_what_the_reference_does_at_half_the_size() {
    let _guard = common::exclusive();
    let mut entry = Catalogue::builtin()
        .models
        .iter()
        .find(|m| m.purpose == Purpose::Embedding)
        .unwrap()
        .clone();
    entry.quantization = "Q8_0".into();
    entry.file = "all-MiniLM-L6-v2.Q8_0.gguf".into();
    entry.sha256 = "63272c1e928149fa7e2882259e56a6db97eebeb49e64a978aff4fb23ef975fc9".into();
    entry.size = 25_279_328;
    let dir = tempfile::tempdir().unwrap();
    let fetched = fetch(&entry, dir.path(), &WheelDir::new(wheels()), &mut |_| {}).unwrap();
    let header = check_embedding_model(&fetched.path).unwrap();
    assert_eq!(header.get_u64("general.file_type"), Some(7));
    let m = EmbeddingModel::load(&fetched.path, 2).unwrap();
    let sentences: Vec<Reference> = reference()
        .into_iter()
        .filter(|s| s.token_ids.len() < m.max_tokens())
        .collect();
    let texts: Vec<&str> = sentences.iter().map(|s| s.text.as_str()).collect();
    for (s, v) in sentences.iter().zip(m.embed(&texts).unwrap()) {
        let c = cosine(&v, &s.embedding);
        assert!(c > 0.998, "{:?}: cosine {c} with the reference", s.text);
    }
}

#[test]
fn a_text_is_embedded_the_same_alone_or_in_a_batch() {
    // Sequences packed into one batch must not attend to each other.
    let _guard = common::exclusive();
    let m = model();
    let alone = m.embed(&["ripgrep respects .gitignore"]).unwrap().remove(0);
    let batch = m
        .embed(&[
            "a wallet closed during a rescan crashed the GUI",
            "ripgrep respects .gitignore",
            "",
        ])
        .unwrap();
    let c = cosine(&alone, &batch[1]);
    assert!(
        c > 0.9999,
        "cosine {c} between the text alone and in a batch"
    );
    assert!(cosine(&batch[0], &batch[1]) < 0.5);
}

/// The query embedder keeps one context from query to query (making one took 3-10 ms of a
/// long question's 40): each query must still come out as it does from a fresh context, with
/// nothing of the query before it, one after another and from several searches at once.
#[test]
fn queries_embedded_in_the_kept_context_are_as_from_a_fresh_one() {
    use burrow::workspace::QueryEmbedder;
    let _guard = common::exclusive();
    let m = model();
    let embedder = ModelEmbedder::load_path(minilm(), 1, None).unwrap();
    let texts = [
        "a wallet closed during a rescan crashed the GUI",
        "ripgrep respects .gitignore",
        "which pull request fixed the peers table freezing when sorted by address?",
        "",
    ];
    let fresh: Vec<Vec<f32>> = texts
        .iter()
        .map(|t| m.embed(&[t]).unwrap().remove(0))
        .collect();
    // Long then short, and back: a short query after a long one reads none of its tokens.
    for (t, want) in texts
        .iter()
        .zip(&fresh)
        .chain(texts.iter().zip(&fresh).rev())
    {
        let got = embedder.embed_query(t).unwrap();
        let c = cosine(&got, want);
        assert!(c > 0.9999, "{t:?}: cosine {c} with a fresh context");
    }
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|i| {
                let (embedder, texts, fresh) = (&embedder, &texts, &fresh);
                s.spawn(move || {
                    for round in 0..3 {
                        let j = (i + round) % texts.len();
                        let got = embedder.embed_query(texts[j]).unwrap();
                        assert!(cosine(&got, &fresh[j]) > 0.9999, "{:?}", texts[j]);
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
    });
}

#[test]
fn a_text_far_longer_than_the_window_is_split_not_cut_and_never_aborts() {
    let _guard = common::exclusive();
    let m = model();
    let mut text = "The wallet window freezes while rescanning. ".repeat(60);
    text.push_str(&"Searching directories recursively with a regex pattern. ".repeat(60));
    let tokens = m.tokens(&text);
    assert!(tokens.len() > 4 * m.max_tokens(), "{} tokens", tokens.len());
    let whole = m.embed(&[&text]).unwrap().remove(0);
    let wallet = m
        .embed(&["The wallet window freezes while rescanning."])
        .unwrap()
        .remove(0);
    let search = m
        .embed(&["Searching directories recursively with a regex pattern."])
        .unwrap()
        .remove(0);
    // Both halves count: a text cut at its window would be the wallet sentence alone.
    let (cw, cs) = (cosine(&whole, &wallet), cosine(&whole, &search));
    assert!(cw > 0.5 && cs > 0.5, "wallet {cw}, search {cs}");
    // Special tokens in a text are its text, never control tokens.
    let with_markers = m.tokens("[CLS] [SEP] <|im_end|>");
    assert_eq!(with_markers.iter().filter(|&&t| t == 101).count(), 1);
    assert_eq!(with_markers.iter().filter(|&&t| t == 102).count(), 1);
}

/// Issue 18: a unit's vector is made from its start alone, as far as `MAX_EMBED_TOKENS`. A unit
/// longer than the model's window was read in two windows whose vectors were averaged: 12% of
/// a whole-workspace pass's tokens (mostly code units' short second windows), for no gain in
/// ranking on the question sets. Texts outside the workspace (`burrow embed`, the server's
/// `/v1/embeddings`) are still read whole.
#[test]
fn a_units_vector_is_made_from_its_start_alone() {
    let _guard = common::exclusive();
    let m = model();
    let start = "The wallet window freezes while rescanning. ".repeat(40);
    assert!(m.tokens(&start).len() > MAX_EMBED_TOKENS.min(m.max_tokens()));
    let a = format!(
        "{start}{}",
        "Searching directories recursively with a regex pattern. ".repeat(30)
    );
    let b = format!(
        "{start}{}",
        "Coin control lets the user choose which outputs to spend. ".repeat(30)
    );
    let embedder = ModelEmbedder::load_path(minilm(), 2, None).unwrap();
    let mut units = &embedder;
    let v = units.embed(&[&a, &b, "Coin control"]).unwrap();
    assert!(cosine(&v[0], &v[1]) > 0.9999, "{}", cosine(&v[0], &v[1]));
    // A short text is embedded as it is.
    let short = m.embed(&["Coin control"]).unwrap().remove(0);
    assert!(cosine(&v[2], &short) > 0.9999);
    // Read whole, the two differ by their tails.
    let whole = m.embed(&[&a, &b]).unwrap();
    assert!(
        cosine(&whole[0], &whole[1]) < 0.9,
        "{}",
        cosine(&whole[0], &whole[1])
    );
}

/// Issue 18 (memory bounded while embedding, with any embedding model): a session's context
/// was sized by the model's trained window, whatever it embedded. A model trained on 8,192
/// tokens (all-MiniLM-L6-v2's weights with its position table repeated to 8,192, converted
/// by `burrow models convert`) took 1.3 GB and 11.4 s to embed 277 units read from their first
/// 256 tokens, against 177 MB and 5.2 s now (MiniLM itself: 166 MB, 5.2 s). Now a context
/// holds the windows it reads, and never a window longer than it holds.
#[test]
fn an_embedding_session_is_sized_by_the_windows_it_reads() {
    use burrow::llm::embed::DEFAULT_BATCH_TOKENS;
    use burrow::llm::gguf::{rewrite_metadata, MetaEdit};
    let _guard = common::exclusive();
    // MiniLM without the 256-token window sentence-transformers reads it in: its 512 trained
    // positions are its window.
    let dir = tempfile::tempdir().unwrap();
    let wide = dir.path().join("wide.gguf");
    rewrite_metadata(minilm(), &wide, &[MetaEdit::Remove(WINDOW_KEY.into())]).unwrap();
    let m = EmbeddingModel::load(&wide, 2).unwrap();
    assert_eq!(m.max_tokens(), 512);
    let context = |window, batch| m.session(window, batch).unwrap().context_tokens();
    assert_eq!(context(MAX_EMBED_TOKENS, 0), MAX_EMBED_TOKENS, "a query's");
    assert_eq!(
        context(MAX_EMBED_TOKENS, DEFAULT_BATCH_TOKENS),
        DEFAULT_BATCH_TOKENS
    );
    assert_eq!(context(usize::MAX, 0), 512, "never past the model's window");
    // llama.cpp aborted making a one-token context for up to 64 sequences.
    assert_eq!(context(0, 0), 64);
    // A text of the special tokens alone, in windows shorter than they are, is read whole.
    let tiny = m
        .session(1, 1)
        .unwrap()
        .embed(&["Coin control", ""])
        .unwrap();
    let empty = m.embed(&[""]).unwrap();
    assert!(cosine(&tiny[1], &empty[0]) > 0.9999);
    // A session of short windows reads a long text in them, never passing llama.cpp one
    // longer than its context (a non-causal model aborts the process on it).
    let text = "The wallet window freezes while rescanning. ".repeat(80);
    assert!(m.tokens(&text).len() > 512);
    let mut small = m.session(64, 0).unwrap();
    assert_eq!(small.context_tokens(), 64);
    let starts = small.embed_starts(&[&text], MAX_EMBED_TOKENS).unwrap();
    let mut full = m.session(usize::MAX, DEFAULT_BATCH_TOKENS).unwrap();
    let first_64 = full.embed_starts(&[&text], 64).unwrap();
    assert!(cosine(&starts[0], &first_64[0]) > 0.9999);
    small.embed(&[&text, "Coin control"]).unwrap();
    // `embed` reads a text in the model's windows, sized for the longest text given.
    let whole = m.embed(&[&text]).unwrap();
    let in_windows = full.embed(&[&text]).unwrap();
    assert!(cosine(&whole[0], &in_windows[0]) > 0.9999);
}

/// Another file under the embedding model's name (llama.cpp's default `ggml-model-f16.gguf`
/// in two folders, a file replaced in place) passed for the model the vectors came from:
/// "0 units embedded", and its queries were compared with the other's vectors.
#[test]
fn another_file_of_the_same_name_embeds_the_workspace_again() {
    use burrow::llm::gguf::{rewrite_metadata, MetaEdit, MetaValue};
    use burrow::workspace::QueryEmbedder;
    let _guard = common::exclusive();
    let dir = tempfile::tempdir().unwrap();
    let (one, two) = (dir.path().join("one"), dir.path().join("two"));
    std::fs::create_dir_all(&one).unwrap();
    std::fs::create_dir_all(&two).unwrap();
    let first = one.join("ggml-model-f16.gguf");
    std::fs::copy(minilm(), &first).unwrap();
    let second = two.join("ggml-model-f16.gguf");
    let edit = MetaEdit::Set("general.name".into(), MetaValue::String("other".into()));
    rewrite_metadata(minilm(), &second, &[edit]).unwrap();
    let home = BurrowHome::new(dir.path().join("home"));
    let export = three_issues(dir.path());
    let app = App::open(home).unwrap();
    let ws = app.workspace();
    ws.import(&export, "o/r", &mut |_| {}).unwrap();
    let a = ModelEmbedder::load_path(&first, 1, None).unwrap();
    let b = ModelEmbedder::load_path(&second, 1, None).unwrap();
    assert_eq!(QueryEmbedder::name(&a), QueryEmbedder::name(&b));
    assert_ne!(
        QueryEmbedder::fingerprint(&a),
        QueryEmbedder::fingerprint(&b)
    );
    let made = ws.embed_pending(&mut &a, &mut |_| {}).unwrap();
    assert_eq!(made.embedded, made.total);
    assert_eq!(ws.embed_pending(&mut &a, &mut |_| {}).unwrap().embedded, 0);
    let again = ws.embed_pending(&mut &b, &mut |_| {}).unwrap();
    assert_eq!(again.embedded, again.total, "{again:?}");
    assert!(
        again
            .replaced_model
            .as_deref()
            .is_some_and(|m| m.contains("another file")),
        "{again:?}"
    );
    // A file that differs only in its weights, half way through them, is another file too.
    let third = dir.path().join("ggml-model-f16.gguf");
    std::fs::copy(minilm(), &third).unwrap();
    let header = check_embedding_model(&third).unwrap();
    let middle = header.data_offset + (header.file_size - header.data_offset) / 2 + 16;
    let mut bytes = std::fs::read(&third).unwrap();
    bytes[middle as usize] ^= 0x01;
    std::fs::write(&third, &bytes).unwrap();
    let c = ModelEmbedder::load_path(&third, 1, None).unwrap();
    assert_ne!(
        QueryEmbedder::fingerprint(&a),
        QueryEmbedder::fingerprint(&c)
    );
    // A file replaced in place is no longer the one loaded (the app loads it again).
    assert!(a.is_current());
    std::fs::copy(&second, &first).unwrap();
    assert!(!a.is_current());
    ws.set_query_embedder(Some(std::sync::Arc::new(a)));
    let why = ws.meaning_unavailable().unwrap().unwrap_or_default();
    assert!(why.contains("another file"), "{why}");
}

/// A damaged model (its token embeddings NaN) gave vectors of NaN, and a workspace pass stored
/// them over the good ones: searches by meaning then ranked at random. Now no such vector
/// leaves the model.
#[test]
fn a_model_whose_weights_are_not_numbers_gives_no_vectors() {
    use burrow::workspace::QueryEmbedder;
    use std::io::{Seek, SeekFrom, Write};
    let _guard = common::exclusive();
    let dir = tempfile::tempdir().unwrap();
    let nan = dir.path().join("nan.gguf");
    std::fs::copy(minilm(), &nan).unwrap();
    let header = check_embedding_model(&nan).unwrap();
    let t = header
        .tensors
        .iter()
        .find(|t| t.name == "token_embd.weight")
        .unwrap();
    assert_eq!(t.type_name(), "F16");
    let mut f = std::fs::OpenOptions::new().write(true).open(&nan).unwrap();
    f.seek(SeekFrom::Start(header.data_offset + t.offset))
        .unwrap();
    // F16 NaN, little-endian.
    f.write_all(&[0x00, 0x7e].repeat(t.size_bytes as usize / 2))
        .unwrap();
    drop(f);
    let m = EmbeddingModel::load(&nan, 1).unwrap();
    let e = m.embed(&["Coin control"]).unwrap_err().to_string();
    assert!(e.contains("nan.gguf") && e.contains("not a number"), "{e}");
    let embedder = ModelEmbedder::load_path(&nan, 1, None).unwrap();
    let e = embedder.embed_query("Coin control").unwrap_err();
    assert!(e.contains("not a number"), "{e}");
    // A workspace pass stops at once, storing nothing.
    let home = BurrowHome::new(dir.path().join("home"));
    let app = App::open(home).unwrap();
    let ws = app.workspace();
    ws.import(&three_issues(dir.path()), "o/r", &mut |_| {})
        .unwrap();
    let e = ws
        .embed_pending(&mut &embedder, &mut |_| {})
        .unwrap_err()
        .to_string();
    assert!(e.contains("not a number") && e.contains("damaged"), "{e}");
    assert_eq!(ws.vectors_status().unwrap().map_or(0, |(_, _, n)| n), 0);
}

/// A query's vector is made from its start, as a unit's: a 120 KB log pasted into the search
/// box was read whole, in hundreds of windows (12.6 s a search, at every typing pause), for a
/// vector compared with vectors of units' starts.
#[test]
fn a_querys_vector_is_made_from_its_start_alone() {
    use burrow::workspace::QueryEmbedder;
    let _guard = common::exclusive();
    let m = model();
    let start = "The wallet window freezes while rescanning. ".repeat(40);
    assert!(m.tokens(&start).len() > MAX_EMBED_TOKENS.min(m.max_tokens()));
    let embedder = ModelEmbedder::load_path(minilm(), 1, None).unwrap();
    let a = embedder
        .embed_query(&format!(
            "{start}{}",
            "Searching with a regex. ".repeat(5_000)
        ))
        .unwrap();
    let b = embedder.embed_query(&start).unwrap();
    assert!(cosine(&a, &b) > 0.9999, "{}", cosine(&a, &b));
    // A short query is embedded as it is.
    let q = "Coin control";
    let short = m.embed(&[q]).unwrap().remove(0);
    assert!(cosine(&embedder.embed_query(q).unwrap(), &short) > 0.9999);
}

/// Issue 18 ("any GGUF embedding model the user has (nomic-embed, bge, …) can replace it"):
/// such a model was given bare texts, where it was trained with a task prompt before each
/// query and each document (nomic-embed-text: "search_query: " and "search_document: "), as
/// sentence-transformers gives them; its vectors were not the ones it ranks well with. Now
/// the settings' prompts, else the file's (Burrow's converter keeps them), else those of the
/// model's family as its name says, and vectors made with another document prompt are another
/// model's.
#[test]
fn a_model_trained_with_prompts_is_given_them_before_each_query_and_unit() {
    use burrow::app::settings::EmbeddingPrompts;
    use burrow::llm::embed::prompts::{DOCUMENT_PROMPT_KEY, QUERY_PROMPT_KEY};
    use burrow::llm::gguf::{rewrite_metadata, MetaEdit, MetaValue};
    use burrow::workspace::QueryEmbedder;
    let _guard = common::exclusive();
    let m = model();
    let vector = |text: &str| m.embed(&[text]).unwrap().remove(0);
    let (q, doc) = (
        "which pull request fixed the peers table freezing?",
        "Fix the peers table freezing when it is sorted by address",
    );
    // MiniLM's weights under other names: what is tested is what the model is given.
    let dir = tempfile::tempdir().unwrap();
    let renamed = |file: &str, edits: Vec<MetaEdit>| {
        let path = dir.path().join(file);
        rewrite_metadata(minilm(), &path, &edits).unwrap();
        path
    };
    let set = |k: &str, v: &str| MetaEdit::Set(k.into(), MetaValue::String(v.into()));
    // Named inside the file (a downloaded file renamed by hand, or an Ollama blob).
    let nomic = renamed(
        "model.gguf",
        vec![set("general.name", "nomic-embed-text-v1.5")],
    );
    let e = ModelEmbedder::load_path(&nomic, 1, None).unwrap();
    assert_eq!(
        (e.prompts().query.as_str(), e.prompts().document.as_str()),
        ("search_query: ", "search_document: ")
    );
    let got = e.embed_query(q).unwrap();
    assert!(cosine(&got, &vector(&format!("search_query: {q}"))) > 0.9999);
    assert!(cosine(&got, &vector(q)) < 0.99, "the bare query's vector");
    let unit = (&e).embed(&[doc]).unwrap().remove(0);
    assert!(cosine(&unit, &vector(&format!("search_document: {doc}"))) > 0.9999);
    let plain = ModelEmbedder::load_path(minilm(), 1, None).unwrap();
    assert!(plain.prompts().is_empty());
    let name = Embedder::name(&&e);
    assert!(name.starts_with("model.gguf, document prompt "), "{name}");

    // By the file's name alone (its own names say nothing). With MiniLM's own name inside,
    // the file's name is not taken over it.
    let bge = renamed(
        "bge-small-en-v1.5-q8_0.gguf",
        vec![MetaEdit::Remove("general.name".into())],
    );
    let e = ModelEmbedder::load_path(&bge, 1, None).unwrap();
    let want = "Represent this sentence for searching relevant passages: ";
    assert_eq!(e.prompts().query, want);
    let minilm_inside = renamed("bge-small-en-v1.5.f16.gguf", vec![]);
    let e2 = ModelEmbedder::load_path(&minilm_inside, 1, None).unwrap();
    assert!(e2.prompts().is_empty(), "{:?}", e2.prompts());
    assert!(cosine(&e.embed_query(q).unwrap(), &vector(&format!("{want}{q}"))) > 0.9999);
    assert!(cosine(&(&e).embed(&[doc]).unwrap()[0], &vector(doc)) > 0.9999);

    // The file's own prompts (as the converter writes them) win over its name, even none.
    let own = renamed(
        "nomic-embed-text-v1.5.f16.gguf",
        vec![
            set(QUERY_PROMPT_KEY, "query: "),
            set(DOCUMENT_PROMPT_KEY, ""),
        ],
    );
    let e = ModelEmbedder::load_path(&own, 1, None).unwrap();
    assert_eq!(e.prompts().source, "the model file");
    assert!(cosine(&e.embed_query(q).unwrap(), &vector(&format!("query: {q}"))) > 0.9999);
    assert!(cosine(&(&e).embed(&[doc]).unwrap()[0], &vector(doc)) > 0.9999);

    // The settings' prompts replace the model's own; empty ones give the texts bare.
    let none = EmbeddingPrompts::default();
    let e = ModelEmbedder::load_path(&nomic, 1, Some(&none)).unwrap();
    assert!(cosine(&e.embed_query(q).unwrap(), &vector(q)) > 0.9999);
    assert_eq!(Embedder::name(&&e), "model.gguf");
    assert!(e.uses(Some(&none)) && !e.uses(None));
    // A prompt that would leave no room for the text (one token per Chinese character) is
    // refused, saying which.
    let long = EmbeddingPrompts {
        document: "为这个句子生成表示以用于检索相关文章".repeat(10),
        ..EmbeddingPrompts::default()
    };
    let e = ModelEmbedder::load_path(&nomic, 1, Some(&long)).unwrap_err();
    assert!(
        e.to_string().contains("document prompt (settings) takes"),
        "{e}"
    );
}

/// The app's embedding pass follows the settings' prompts: other prompts are another
/// model's vectors, so the workspace is embedded again (said in the report), and queries are
/// embedded with the prompts its units were.
#[test]
fn prompts_changed_in_settings_embed_the_workspace_again() {
    use burrow::app::settings::{EmbeddingPrompts, Settings};
    use burrow::workspace::QueryEmbedder;
    let _guard = common::exclusive();
    let dir = tempfile::tempdir().unwrap();
    let home = BurrowHome::new(dir.path().join("home"));
    let export = three_issues(dir.path());
    let model = minilm().to_str().unwrap().to_string();
    let app = App::open(home.clone()).unwrap();
    app.workspace().import(&export, "o/r", &mut |_| {}).unwrap();
    let mut settings = Settings {
        embedding_model: model.clone(),
        ..Settings::default()
    };
    app.set_settings(settings.clone()).unwrap();
    let first = app.embed_workspace(&mut |_| {}).unwrap().unwrap();
    assert!(first.replaced_model.is_none() && first.embedded == first.total);
    let again = app.embed_workspace(&mut |_| {}).unwrap().unwrap();
    assert_eq!(again.embedded, 0, "nothing changed, nothing to embed");

    // Prompts written for another model are not this one's.
    settings.embedding_prompts = Some(EmbeddingPrompts {
        model: "/elsewhere/nomic-embed-text-v1.5.gguf".into(),
        query: "search_query: ".into(),
        document: "search_document: ".into(),
    });
    app.set_settings(settings.clone()).unwrap();
    let other = app.embed_workspace(&mut |_| {}).unwrap().unwrap();
    assert_eq!(other.embedded, 0, "{other:?}");

    settings.embedding_prompts = Some(EmbeddingPrompts {
        model: model.clone(),
        query: "query: ".into(),
        document: "passage: ".into(),
    });
    app.set_settings(settings.clone()).unwrap();
    let prompted = app.embed_workspace(&mut |_| {}).unwrap().unwrap();
    assert!(
        prompted
            .replaced_model
            .as_deref()
            .is_some_and(|m| m.contains("all-MiniLM")),
        "{prompted:?}"
    );
    assert_eq!(prompted.embedded, prompted.total);
    let (name, _, n) = app.workspace().vectors_status().unwrap().unwrap();
    assert!(name.contains(", document prompt "), "{name}");
    assert_eq!(n, prompted.total);
    // Searches rank by meaning with the model the units were embedded with, and so does a
    // command's model loaded from the same settings.
    assert_eq!(app.workspace().meaning_unavailable().unwrap(), None);
    let loaded = ModelEmbedder::load(&home, None, 1).unwrap();
    assert_eq!(loaded.prompts().query, "query: ");
    // However the same file is written.
    let folder = minilm().parent().unwrap();
    let respelled = folder
        .join("..")
        .join(folder.file_name().unwrap())
        .join(minilm().file_name().unwrap());
    let loaded_again = ModelEmbedder::load(&home, respelled.to_str(), 1).unwrap();
    assert_eq!(loaded_again.prompts().query, "query: ");
    assert!(name.starts_with(&QueryEmbedder::name(&loaded)), "{name}");

    // Another query prompt makes no stored vector: nothing is embedded again.
    settings.embedding_prompts = Some(EmbeddingPrompts {
        model: model.clone(),
        query: "a question: ".into(),
        document: "passage: ".into(),
    });
    app.set_settings(settings.clone()).unwrap();
    let requery = app.embed_workspace(&mut |_| {}).unwrap().unwrap();
    assert!(
        requery.replaced_model.is_none() && requery.embedded == 0,
        "{requery:?}"
    );
    assert_eq!(app.workspace().meaning_unavailable().unwrap(), None);

    // A prompt refused for its length fails the pass; mended in Settings, the next pass
    // goes (the failure was remembered until the model's file changed).
    settings.embedding_prompts = Some(EmbeddingPrompts {
        model: model.clone(),
        query: "query: ".into(),
        document: "为这个句子生成表示以用于检索相关文章".repeat(10),
    });
    app.set_settings(settings.clone()).unwrap();
    let e = app.embed_workspace(&mut |_| {}).unwrap_err();
    assert!(e.to_string().contains("document prompt"), "{e}");
    settings.embedding_prompts = Some(EmbeddingPrompts {
        model: model.clone(),
        query: "query: ".into(),
        document: "passage: ".into(),
    });
    app.set_settings(settings.clone()).unwrap();
    let mended = app.embed_workspace(&mut |_| {}).unwrap().unwrap();
    assert_eq!(mended.embedded, 0, "{mended:?}");

    // Back to the model's own (none): embedded again, as first.
    settings.embedding_prompts = None;
    app.set_settings(settings).unwrap();
    let back = app.embed_workspace(&mut |_| {}).unwrap().unwrap();
    assert!(back.replaced_model.is_some() && back.embedded == back.total);
}

#[test]
fn a_language_model_or_a_broken_file_is_not_taken_for_an_embedding_model() {
    let e = check_embedding_model(&common::smollm2()).unwrap_err();
    assert!(matches!(e, EmbedError::NotEmbedding { .. }), "{e}");
    assert!(e.to_string().contains("SmolLM2"), "{e}");
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("broken.gguf");
    std::fs::write(&broken, b"GGUF\x03\x00\x00\x00garbage").unwrap();
    let e = EmbeddingModel::load(&broken, 1).unwrap_err();
    assert!(matches!(e, EmbedError::Gguf(_)), "{e}");
    assert!(e.to_string().contains("broken.gguf"), "{e}");
    // And the other way round: chat refuses the embedding model by name, before llama.cpp.
    let engine = burrow::llm::LlamaEngine::new().unwrap();
    let e = engine
        .load(minilm(), &burrow::llm::LoadOptions::default())
        .unwrap_err();
    assert!(matches!(e, burrow::llm::LlmError::NotAModel { .. }), "{e}");
    assert!(e.to_string().contains("embedding model"), "{e}");

    // A language model's architecture tuned to embed (Qwen3-Embedding: a `qwen3` whose file
    // names last-token pooling) was listed and loaded as a chat model; a reranker (pooling
    // rank) was taken for an embedding model and gave one number per text.
    use burrow::llm::gguf::{rewrite_metadata, MetaEdit, MetaValue};
    let pooled = |file: &str, pooling: u32| {
        let path = dir.path().join(file);
        let edit = MetaEdit::Set("llama.pooling_type".into(), MetaValue::U32(pooling));
        rewrite_metadata(&common::smollm2(), &path, &[edit]).unwrap();
        path
    };
    let last = pooled("embedder.gguf", 3);
    let info =
        burrow::llm::library::ModelInfo::from_path(&last, burrow::llm::library::ModelSource::Path)
            .unwrap();
    assert!(info.embedding);
    let e = engine
        .load(&last, &burrow::llm::LoadOptions::default())
        .unwrap_err();
    assert!(e.to_string().contains("embedding model"), "{e}");
    check_embedding_model(&last).unwrap();
    let reranker = pooled("reranker.gguf", 4);
    let e = check_embedding_model(&reranker).unwrap_err();
    assert!(e.to_string().contains("reranker"), "{e}");
    // Nor is a reranker a chat model, or offered as an embedding model.
    let info = burrow::llm::library::ModelInfo::from_path(
        &reranker,
        burrow::llm::library::ModelSource::Path,
    )
    .unwrap();
    assert!(!info.embedding && info.not_for_chat);
    let e = engine
        .load(&reranker, &burrow::llm::LoadOptions::default())
        .unwrap_err();
    assert!(e.to_string().contains("cannot chat"), "{e}");

    // Pooled from its last token, a text ends with the end-of-text token, as Qwen3-Embedding
    // was trained (files converted before llama.cpp wrote `add_eos_token` for it left it out,
    // and each vector was of the text's last word); pooled by mean, it is read as written.
    let by_last = EmbeddingModel::load(&last, 1).unwrap();
    let by_mean = EmbeddingModel::load(&pooled("mean.gguf", 1), 1).unwrap();
    let (a, b) = (
        by_last.tokens("Coin control"),
        by_mean.tokens("Coin control"),
    );
    assert_eq!(a.len(), b.len() + 1);
    assert_eq!(a[..b.len()], b[..]);
    // A text past 256 tokens: a decoder's KV cache split over 64 sequences held no more
    // ("find_slot: n_tokens = 358 > size = 256").
    let long = "The wallet window freezes while rescanning. ".repeat(40);
    assert!(by_last.tokens(&long).len() > 256);
    let v = by_last.embed(&["Coin control", &long]).unwrap();
    assert!(v
        .iter()
        .all(|v| v.len() == 576 && v.iter().all(|x| x.is_finite())));
    // Sharing the cache, each sequence still sees only its own tokens: the same vector beside
    // a short text, and beside a long one within what a larger batch's kernels change
    // (quantized weights take another path for it: 0.9991 here).
    let alone = by_last.embed(&["Coin control"]).unwrap().remove(0);
    let beside = by_last
        .embed(&["Coin control", "The wallet window freezes."])
        .unwrap();
    assert!(cosine(&alone, &beside[0]) > 0.9999);
    assert!(cosine(&alone, &v[0]) > 0.998, "{}", cosine(&alone, &v[0]));
}

#[test]
fn the_converter_names_what_is_missing_or_unsupported() {
    let dir = tempfile::tempdir().unwrap();
    let mut out = Vec::new();
    let e = convert_bert(dir.path(), "x", Precision::F16, &mut out).unwrap_err();
    assert!(
        matches!(&e, ConvertError::Missing { file, .. } if file == "config.json"),
        "{e}"
    );
    let config = r#"{"model_type": "llama", "hidden_size": 8, "num_hidden_layers": 1,
        "num_attention_heads": 2, "intermediate_size": 16, "max_position_embeddings": 8}"#;
    std::fs::write(dir.path().join("config.json"), config).unwrap();
    let e = convert_bert(dir.path(), "x", Precision::F16, &mut out).unwrap_err();
    assert!(matches!(e, ConvertError::Unsupported(_)), "{e}");
    assert!(e.to_string().contains("llama"), "{e}");
    std::fs::write(
        dir.path().join("config.json"),
        config.replace("llama", "bert"),
    )
    .unwrap();
    let e = convert_bert(dir.path(), "x", Precision::F16, &mut out).unwrap_err();
    assert!(
        matches!(&e, ConvertError::Missing { file, .. } if file == "tokenizer.json"),
        "{e}"
    );
    assert!(
        out.is_empty(),
        "nothing is written before the inputs are checked"
    );
}

/// Issue 18: `burrow ask` and `burrow eval` ran the agent with searches by words only: only
/// the desktop app's embedding pass installed the embedding model for queries. A run with no
/// pass now installs it where the workspace has vectors (`App::search_by_meaning`), so the
/// agent's search tool finds by meaning too, and says why not where it cannot, searching by
/// words meanwhile.
#[test]
fn a_run_without_an_embedding_pass_searches_by_meaning_where_the_workspace_has_vectors() {
    let _guard = common::exclusive();
    let dir = tempfile::tempdir().unwrap();
    let home = BurrowHome::new(dir.path().join("home"));
    let export = three_issues(dir.path());
    let model = minilm().to_str().unwrap();

    let app = App::open(home.clone()).unwrap();
    app.workspace().import(&export, "o/r", &mut |_| {}).unwrap();
    let why = app.search_by_meaning(Some(model)).unwrap();
    assert!(
        why.as_deref()
            .is_some_and(|w| w.contains("burrow workspace embed")),
        "{why:?}"
    );
    let embedder = ModelEmbedder::load_path(minilm(), 2, None).unwrap();
    app.workspace()
        .embed_pending(&mut &embedder, &mut |_| {})
        .unwrap();
    drop(app);

    // A new process's app, as `burrow ask` opens one: no word of the task is in the issue.
    let task = "program crashes upon shutdown";
    let app = App::open(home.clone()).unwrap();
    let tools = burrow::tools::all_tools(app.workspace().clone()).unwrap();
    let search = |tools: &burrow::tools::ToolRegistry| {
        tools
            .call("search", serde_json::json!({"query": task}))
            .unwrap()
            .text
    };
    assert!(!search(&tools).contains("segfault"), "{}", search(&tools));
    assert_eq!(app.search_by_meaning(Some(model)).unwrap(), None);
    let found = search(&tools);
    let first = found.find("#1").unwrap_or(usize::MAX);
    assert!(
        found.contains("segfault") && first < found.find("#2").unwrap_or(usize::MAX),
        "{found}"
    );

    // A model that cannot be loaded: said, and searches go on by words.
    let app = App::open(home).unwrap();
    let missing = dir.path().join("missing.gguf");
    let why = app
        .search_by_meaning(Some(missing.to_str().unwrap()))
        .unwrap()
        .unwrap_or_default();
    assert!(why.contains("missing.gguf"), "{why}");
    let tools = burrow::tools::all_tools(app.workspace().clone()).unwrap();
    assert!(tools
        .call("search", serde_json::json!({"query": "segfault"}))
        .unwrap()
        .text
        .contains("#1"));
    drop(app);

    // `burrow search` takes the embedding model as the app and `ask` do: the settings' where
    // none is named (it loaded the catalogue's, and failed where that was not downloaded),
    // and one that cannot be loaded leaves the search to words, saying why (it failed).
    let search_cli = |settings: Value, json: bool| {
        std::fs::write(dir.path().join("home/settings.json"), settings.to_string()).unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_burrow"))
            .args(["--home", dir.path().join("home").to_str().unwrap()])
            .args(["search", task])
            .args(json.then_some("--json"))
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stdout}{stderr}");
        format!("{stdout}{stderr}")
    };
    let by_meaning = search_cli(serde_json::json!({"embedding_model": model}), false);
    assert!(by_meaning.contains("segfault"), "{by_meaning}");
    assert!(!by_meaning.contains("ranked by words only"), "{by_meaning}");
    let missing = missing.to_str().unwrap();
    let by_words = search_cli(serde_json::json!({"embedding_model": missing}), false);
    assert!(
        by_words.contains("ranked by words only: the embedding model is not loaded")
            && by_words.contains("missing.gguf"),
        "{by_words}"
    );
    // A model named on the command line must load: the search fails, saying why.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_burrow"))
        .args(["--home", dir.path().join("home").to_str().unwrap()])
        .args(["search", task, "--embedding-model", missing])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success()
            && stderr.contains("cannot rank by meaning with")
            && stderr.contains("missing.gguf"),
        "{stderr}"
    );
    // With --json the hits are the output, and the note is said beside them.
    let json = search_cli(serde_json::json!({"embedding_model": missing}), true);
    assert!(
        json.starts_with('[') && json.contains("note: ranked by words only"),
        "{json}"
    );
}

/// `models list` says which models are for embedding, not chat: the embedding model was listed
/// among the chat models, with "chatml" as its template.
#[test]
fn models_list_marks_the_embedding_model() {
    let home = tempfile::tempdir().unwrap();
    let models = home.path().join("models");
    std::fs::create_dir_all(&models).unwrap();
    std::fs::copy(minilm(), models.join("all-MiniLM-L6-v2.F16.gguf")).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_burrow"))
        .args(["models", "list"])
        .env("BURROW_HOME", home.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let row = text
        .lines()
        .find(|l| l.contains("all-MiniLM-L6-v2.F16.gguf"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(row.contains("embedding"), "{row}");
    assert!(!row.contains("chatml"), "{row}");

    // `models info` says what search by meaning gives it, not that ChatML is its template.
    let nomic = models.join("nomic-embed-text-v1.5.f16.gguf");
    burrow::llm::gguf::rewrite_metadata(
        minilm(),
        &nomic,
        &[burrow::llm::gguf::MetaEdit::Remove("general.name".into())],
    )
    .unwrap();
    let info = |path: &Path| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_burrow"))
            .args(["models", "info"])
            .arg(path)
            .env("BURROW_HOME", home.path())
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let text = info(&models.join("all-MiniLM-L6-v2.F16.gguf"));
    assert!(text.contains("texts embedded as they are"), "{text}");
    assert!(text.contains("window:            256 tokens"), "{text}");
    assert!(!text.contains("ChatML"), "{text}");
    let text = info(&nomic);
    assert!(
        text.contains(
            r#""search_query: " before each query, "search_document: " before each unit"#
        ),
        "{text}"
    );

    // A mistyped path is said to be one, with the reason: it was "the catalogue has no model".
    let missing = home.path().join("nomic-embed-text.gguf");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_burrow"))
        .args(["embed", "-m"])
        .arg(&missing)
        .arg("hi")
        .env("BURROW_HOME", home.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("nomic-embed-text.gguf") && err.contains("No such file"),
        "{err}"
    );
    // So are threads no machine has (100,000 crashed OpenMP), before the model is read.
    let e = EmbeddingModel::load(minilm(), 100_000).unwrap_err();
    assert!(e.to_string().contains("100000 threads"), "{e}");
}

/// Issue 18: an embedding pass asked for while one runs (the desktop app asks after every
/// import and index) is not a second pass beside it: the running one goes round again, and
/// what was imported meanwhile gets its vectors. Nothing is left without one.
#[test]
fn a_pass_asked_for_while_one_runs_goes_round_again_and_misses_nothing() {
    use burrow::app::AppEvent;

    let _guard = common::exclusive();
    let dir = tempfile::tempdir().unwrap();
    let home_dir = dir.path().join("home");
    std::fs::create_dir_all(&home_dir).unwrap();
    std::fs::write(
        home_dir.join("settings.json"),
        serde_json::json!({"embedding_model": minilm()}).to_string(),
    )
    .unwrap();
    let export = |name: &str, issues: &[(i64, &str)]| {
        let issues: Vec<Value> = issues
            .iter()
            .map(|(n, title)| {
                serde_json::json!({
                    "number": n, "title": title, "body": format!("{title}, in detail."),
                    "state": "open", "user": {"login": "ann"},
                    "created_at": "2024-01-01T00:00:00Z", "updated_at": "2024-01-01T00:00:00Z"
                })
            })
            .collect();
        let path = dir.path().join(name);
        std::fs::write(&path, serde_json::to_string(&issues).unwrap()).unwrap();
        path
    };
    let first = export(
        "first.json",
        &[
            (1, "Wallet window segfault on close"),
            (2, "Settings dialog typo"),
        ],
    );
    let later = export("later.json", &[(3, "Tooltip flickers on hover")]);

    let app = App::open(BurrowHome::new(&home_dir)).unwrap();
    app.workspace().import(&first, "o/r", &mut |_| {}).unwrap();
    let (mut passes, mut asked) = (0, false);
    let report = app
        .embed_workspace(&mut |e| match e {
            AppEvent::EmbedProgress { .. } if !asked => {
                asked = true;
                // What the app does after an import: ask for a pass, one is running.
                app.workspace().import(&later, "o/r", &mut |_| {}).unwrap();
                assert!(app.embed_workspace(&mut |_| {}).unwrap().is_none());
            }
            AppEvent::Embedded { .. } => passes += 1,
            AppEvent::EmbedFailed { message, .. } => panic!("{message}"),
            _ => {}
        })
        .unwrap()
        .unwrap();
    assert!(asked);
    assert_eq!(passes, 2, "the running pass went round once more");
    let (_, _, vectors) = app.workspace().vectors_status().unwrap().unwrap();
    assert_eq!(vectors, report.total, "{report:?}");
    // Nothing left for another pass.
    let again = app.embed_workspace(&mut |_| {}).unwrap().unwrap();
    assert_eq!(again.embedded, 0, "{again:?}");
    assert_eq!(again.total, report.total);
}
