//! The workspace benchmark behind `scripts/bench-workspace.sh`: search latency over an indexed
//! workspace, exact-string code search against `rg` on the same tree (side by side, alternating),
//! and an import of generated issues at scale.
//!
//!   workspace_bench search HOME REPO_NAME REPO_PATH
//!   workspace_bench scale HOME N BACKUP_DIR corpus|flat
//!   workspace_bench vectors N
//!
//! Prints one JSON object.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use burrow::workspace::grep::GrepQuery;
use burrow::workspace::{Embedder, SearchMode, SearchQuery, Workspace};

const QUERIES: &[&str] = &[
    // Code, identifiers in several spellings.
    "parse_args",
    "ParseArgs",
    "SearcherBuilder",
    "line_number",
    "binary detection",
    "mmap",
    "memory map threshold",
    "regex matcher",
    "case insensitive smart case",
    "ignore gitignore rules",
    "walk directory parallel",
    "color output json",
    "encoding utf16 bom",
    "context lines before after",
    "multiline search",
    "replace captures",
    "glob override",
    "hidden files",
    "follow symlinks",
    "max count matches",
    "sort by path",
    "pcre2 jit",
    "compressed files decompress",
    "preprocessor",
    "exit status code",
    "stdin detection",
    "column numbers",
    "heading grouping",
    "vimgrep",
    "null data",
    // Issues and pull requests (bitcoin-core/gui).
    "wallet encryption passphrase",
    "dark mode icons",
    "peer table sorting",
    "transaction list crash",
    "qr code uri",
    "fee bump replace by fee",
    "coin control dialog",
    "splash screen shutdown",
    "translation strings",
    "network traffic graph",
    "debug console commands",
    "psbt signing",
    "macOS dock menu",
    "high dpi scaling",
    "settings migration",
    "receive address label",
];

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx]
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1000.0
}

fn search_bench(home: &Path, repo: &str, tree: &Path) -> anyhow::Result<serde_json::Value> {
    let ws = Workspace::open_at(&home.join("workspace.db"))?;
    // Warm the page cache and prepared statements once.
    for q in QUERIES {
        let _ = ws.search(&SearchQuery {
            text: q.to_string(),
            limit: 10,
            ..Default::default()
        });
    }
    let mut times = Vec::new();
    for _ in 0..5 {
        for q in QUERIES {
            let t = Instant::now();
            let page = ws.search(&SearchQuery {
                text: q.to_string(),
                limit: 10,
                ..Default::default()
            })?;
            times.push(ms(t));
            std::hint::black_box(page);
        }
    }
    times.sort_by(|a, b| a.total_cmp(b));

    // Exact strings, each searched by burrow and by rg alternately.
    let patterns = [
        "fn search",
        "impl Sink",
        "PCRE2",
        "--max-count",
        "unwrap()",
        "TODO",
    ];
    let mut ratios = Vec::new();
    let mut rows = Vec::new();
    for pat in patterns {
        let mut ours = Vec::new();
        let mut theirs = Vec::new();
        let mut counts = (0, 0);
        for _ in 0..7 {
            let t = Instant::now();
            let r = ws.grep(&GrepQuery {
                pattern: pat.into(),
                regex: false,
                case_sensitive: true,
                repo: Some(repo.into()),
                path: None,
                limit: 1000,
            })?;
            ours.push(ms(t));
            counts.0 = r.hits.len();
            let t = Instant::now();
            let out = Command::new("rg")
                .args(["-F", "-n", "--no-heading", "--color", "never", "-e", pat])
                .current_dir(tree)
                .output()?;
            theirs.push(ms(t));
            counts.1 = out.stdout.iter().filter(|&&b| b == b'\n').count();
        }
        ours.sort_by(|a, b| a.total_cmp(b));
        theirs.sort_by(|a, b| a.total_cmp(b));
        let (o, t) = (ours[ours.len() / 2], theirs[theirs.len() / 2]);
        ratios.push(o / t);
        rows.push(serde_json::json!({
            "pattern": pat, "burrow_ms": o, "rg_ms": t, "ratio": o / t,
            "burrow_matches": counts.0, "rg_matches": counts.1,
        }));
    }
    ratios.sort_by(|a, b| a.total_cmp(b));
    // rg's figures include starting a process, which burrow's in-process search does not pay:
    // the cost of rg searching nothing, for reading the ratios.
    let mut spawn = Vec::new();
    for _ in 0..15 {
        let t = Instant::now();
        Command::new("rg")
            .args(["-F", "-e", "x", "/dev/null"])
            .output()?;
        spawn.push(ms(t));
    }
    spawn.sort_by(|a, b| a.total_cmp(b));
    Ok(serde_json::json!({
        "rg_empty_run_ms": spawn[spawn.len() / 2],
        "queries": times.len(),
        "search_p50_ms": percentile(&times, 0.5),
        "search_p95_ms": percentile(&times, 0.95),
        "search_max_ms": times.last(),
        "grep": rows,
        "grep_median_ratio_vs_rg": ratios[ratios.len() / 2],
    }))
}

fn peak_rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// Words with their frequencies in real issue text: every title and body of the
/// bitcoin-core/gui backup, so that generated issues and queries have a real tracker's
/// distribution (a few words in most issues, a long tail of rare ones).
fn corpus_words(dir: &Path) -> anyhow::Result<Vec<(String, u64)>> {
    fn strings(v: &serde_json::Value, out: &mut Vec<String>) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, v) in m {
                    match (k.as_str(), v) {
                        ("title" | "body", serde_json::Value::String(s)) => out.push(s.clone()),
                        _ => strings(v, out),
                    }
                }
            }
            serde_json::Value::Array(a) => a.iter().for_each(|v| strings(v, out)),
            _ => {}
        }
    }
    const STOP: &[&str] = &[
        "the", "and", "for", "that", "this", "with", "are", "was", "not", "but", "you", "can",
        "from", "have", "has", "when", "what", "which", "there", "any", "our", "would", "will",
    ];
    let mut counts = std::collections::HashMap::<String, u64>::new();
    for sub in ["issues", "pulls"] {
        for entry in std::fs::read_dir(dir.join(sub))? {
            let text = std::fs::read_to_string(entry?.path())?;
            let mut texts = Vec::new();
            strings(&serde_json::from_str(&text)?, &mut texts);
            for t in texts {
                for w in t.split(|c: char| !c.is_ascii_alphabetic()) {
                    let w = w.to_ascii_lowercase();
                    if (3..=15).contains(&w.len()) && !STOP.contains(&w.as_str()) {
                        *counts.entry(w).or_default() += 1;
                    }
                }
            }
        }
    }
    let mut words: Vec<(String, u64)> = counts.into_iter().collect();
    words.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    Ok(words)
}

/// A deterministic sampler over weighted words (xorshift; no dependency for a benchmark).
struct Sampler {
    words: Vec<String>,
    cumulative: Vec<u64>,
    seed: u64,
}

impl Sampler {
    fn new(weighted: &[(String, u64)]) -> Self {
        let mut total = 0;
        let cumulative = weighted
            .iter()
            .map(|(_, n)| {
                total += n;
                total
            })
            .collect();
        Sampler {
            words: weighted.iter().map(|(w, _)| w.clone()).collect(),
            cumulative,
            seed: 0x9E37_79B9_7F4A_7C15,
        }
    }

    fn next(&mut self) -> u64 {
        self.seed ^= self.seed << 13;
        self.seed ^= self.seed >> 7;
        self.seed ^= self.seed << 17;
        self.seed
    }

    fn word(&mut self) -> &str {
        let total = self.cumulative.last().copied().unwrap_or(1);
        let r = self.next() % total;
        let i = self.cumulative.partition_point(|&c| c <= r);
        &self.words[i.min(self.words.len() - 1)]
    }

    fn words(&mut self, n: usize) -> String {
        (0..n)
            .map(|_| self.word().to_string())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// The adversarial vocabulary: 40 words, each in most issues, so that every query matches
/// nearly everything.
const FLAT: &[&str] = &[
    "wallet",
    "crash",
    "startup",
    "network",
    "peer",
    "sync",
    "fee",
    "transaction",
    "dialog",
    "window",
    "font",
    "theme",
    "dark",
    "icon",
    "label",
    "address",
    "balance",
    "send",
    "receive",
    "settings",
    "proxy",
    "tor",
    "translation",
    "shortcut",
    "menu",
    "console",
    "debug",
    "graph",
    "table",
    "sort",
    "column",
    "button",
    "slow",
    "freeze",
    "memory",
    "leak",
    "disk",
    "prune",
    "backup",
    "restore",
];

const LABELS: &[&str] = &[
    "Bug", "Feature", "UX", "Wallet", "Windows", "macOS", "Linux",
];

fn scale_bench(
    home: &Path,
    n: usize,
    corpus: &Path,
    flat: bool,
) -> anyhow::Result<serde_json::Value> {
    let weighted: Vec<(String, u64)> = if flat {
        FLAT.iter().map(|w| (w.to_string(), 1)).collect()
    } else {
        corpus_words(corpus)?
    };
    let mut sample = Sampler::new(&weighted);
    std::fs::create_dir_all(home)?;
    let file = home.join("issues.json");
    // Pages of 100, back to back, as `gh api --paginate` writes them.
    {
        use std::io::Write;
        let mut f = std::io::BufWriter::new(std::fs::File::create(&file)?);
        for page in 0..n.div_ceil(100) {
            let mut items = Vec::with_capacity(100);
            for num in (page * 100 + 1..=page * 100 + 100).filter(|&num| num <= n) {
                let body_words = 20 + (sample.next() % 180) as usize;
                items.push(serde_json::json!({
                    "number": num, "title": sample.words(6), "body": sample.words(body_words),
                    "state": if num % 3 == 0 { "closed" } else { "open" },
                    "user": {"login": format!("user{}", num % 500)},
                    "labels": [{"name": LABELS[num % LABELS.len()]}],
                    "created_at": "2024-01-01T00:00:00Z", "updated_at": "2024-01-01T00:00:00Z",
                }));
            }
            serde_json::to_writer(&mut f, &items)?;
            f.write_all(b"\n")?;
        }
    }
    let file_mb = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0) as f64 / 1e6;
    // BURROW_BENCH_REUSE=1 keeps an earlier run's database and measures the searches only (the
    // same queries: the sampler has drawn the same text).
    let reuse = std::env::var_os("BURROW_BENCH_REUSE").is_some() && home.join("scale.db").exists();
    let ws = Workspace::open_at(&home.join("scale.db"))?;
    let rss_before = peak_rss_kb();
    let t = Instant::now();
    let report = if reuse {
        Default::default()
    } else {
        ws.import(&file, "scale/test", &mut |_| {})?
    };
    let import_ms = ms(t);
    let rss_peak = peak_rss_kb();

    // Queries of two to four words drawn from the same distribution as the text, a third of
    // them unfiltered, a third by state, a third by label.
    let mut times = [Vec::new(), Vec::new(), Vec::new()];
    let mut notes = 0;
    for i in 0..300 {
        let words = 2 + (sample.next() % 3) as usize;
        let mut q = SearchQuery {
            text: sample.words(words),
            limit: 10,
            ..Default::default()
        };
        match i % 3 {
            1 => q.state = Some("closed".into()),
            2 => q.label = Some(LABELS[i % LABELS.len()].into()),
            _ => {}
        }
        let t = Instant::now();
        let page = ws.search(&q)?;
        times[i % 3].push(ms(t));
        notes += usize::from(page.note.is_some());
        std::hint::black_box(page);
    }
    let mut all: Vec<f64> = times.iter().flatten().copied().collect();
    all.sort_by(|a, b| a.total_cmp(b));
    for t in &mut times {
        t.sort_by(|a, b| a.total_cmp(b));
    }

    // Search by meaning at this size: every unit given a vector of MiniLM's dimension by a
    // hashing stand-in (embedding 100,000 issues with the real model takes hours here; the
    // storage, the scan and the fusion cost the same whatever the vectors hold), then the same
    // kind of queries in hybrid mode, query vectors included.
    let mut hashing = Hashing;
    let t = Instant::now();
    let embedded = ws.embed_pending(&mut hashing, &mut |_| {})?;
    let fill_ms = ms(t);
    let mut hybrid = Vec::new();
    for i in 0..300 {
        let words = 2 + (sample.next() % 3) as usize;
        let text = sample.words(words);
        let t = Instant::now();
        let mut q = SearchQuery {
            vector: Some(hashing.vector(&text)),
            text,
            limit: 10,
            mode: SearchMode::Hybrid,
            ..Default::default()
        };
        if i % 3 == 1 {
            q.state = Some("closed".into());
        }
        let page = ws.search(&q)?;
        hybrid.push(ms(t));
        std::hint::black_box(page);
    }
    hybrid.sort_by(|a, b| a.total_cmp(b));
    let db_mb = ["scale.db", "scale.db-wal"]
        .iter()
        .filter_map(|f| std::fs::metadata(home.join(f)).ok())
        .map(|m| m.len())
        .sum::<u64>() as f64
        / 1e6;
    Ok(serde_json::json!({
        "vocabulary": if flat { "flat" } else { "corpus" }, "distinct_words": weighted.len(),
        "issues": report.issues, "import_file_mb": file_mb, "import_ms": import_ms,
        "issues_per_s": report.issues as f64 / (import_ms / 1000.0),
        "peak_rss_before_mb": rss_before as f64 / 1024.0, "peak_rss_mb": rss_peak as f64 / 1024.0,
        "queries": all.len(), "pages_with_a_note": notes,
        "search_p50_ms": percentile(&all, 0.5), "search_p95_ms": percentile(&all, 0.95),
        "search_max_ms": all.last(),
        "p95_unfiltered_ms": percentile(&times[0], 0.95),
        "p95_by_state_ms": percentile(&times[1], 0.95),
        "p95_by_label_ms": percentile(&times[2], 0.95),
        "db_mb": db_mb, "reused_database": reuse,
        "vectors": embedded.total, "vector_fill_ms": fill_ms,
        "hybrid_p50_ms": percentile(&hybrid, 0.5), "hybrid_p95_ms": percentile(&hybrid, 0.95),
    }))
}

/// Vectors of MiniLM's dimension from word hashes: a stand-in for the model at scale.
struct Hashing;

impl Hashing {
    fn vector(&self, text: &str) -> Vec<f32> {
        let mut v = vec![0f32; 384];
        for w in text.split_whitespace() {
            let h = w.bytes().fold(1469598103934665603u64, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(1099511628211)
            });
            v[(h % 384) as usize] += 1.0;
            v[((h >> 20) % 384) as usize] -= 0.5;
        }
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
        v.iter().map(|x| x / n).collect()
    }
}

impl Embedder for Hashing {
    fn name(&self) -> String {
        "hashing stand-in".into()
    }

    fn dimension(&self) -> usize {
        384
    }

    fn embed(&mut self, texts: &[&str]) -> Result<Vec<Vec<f32>>, String> {
        Ok(texts.iter().map(|t| self.vector(t)).collect())
    }
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let out = match args.get(1).map(String::as_str) {
        Some("search") if args.len() == 5 => {
            search_bench(Path::new(&args[2]), &args[3], Path::new(&args[4]))?
        }
        Some("scale") if args.len() == 6 => scale_bench(
            Path::new(&args[2]),
            args[3].parse()?,
            Path::new(&args[4]),
            args[5] == "flat",
        )?,
        Some("vectors") if args.len() == 3 => vectors_bench(args[2].parse()?)?,
        Some("latency") if args.len() == 4 || (args.len() == 5 && args[4] == "recording") => {
            latency_bench(Path::new(&args[2]), Path::new(&args[3]), args.len() == 5)?
        }
        _ => anyhow::bail!(
            "usage: workspace_bench search HOME REPO_NAME REPO_PATH | scale HOME N BACKUP_DIR corpus|flat | vectors N | latency HOME EMBEDDING_MODEL [recording]"
        ),
    };
    println!("{}", serde_json::to_string_pretty(&out)?);
    Ok(())
}

/// Search as a user types it, over an embedded workspace (`burrow workspace embed`): the short
/// queries of `QUERIES`, each by words then in hybrid mode with the query embedded by the real
/// model on one thread (as `burrow eval --search --threads 1` does for whole-sentence
/// questions), five rounds after one to warm up; p50 and p95 of each. `recording`: a run is
/// recorded before each search, as an agent records its steps between its searches (the time
/// of the recording is not counted).
fn latency_bench(home: &Path, model: &Path, recording: bool) -> anyhow::Result<serde_json::Value> {
    use burrow::agent::{record::RunStatus, RunStore};
    let ws = Workspace::open_at(&home.join("workspace.db"))?;
    let embedder = burrow::app::meaning::ModelEmbedder::load_path(model, 1, None)?;
    ws.set_query_embedder(Some(std::sync::Arc::new(embedder)));
    let modes = [SearchMode::Words, SearchMode::Hybrid];
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); modes.len()];
    for round in 0..6 {
        for q in QUERIES {
            for (i, mode) in modes.iter().enumerate() {
                if recording {
                    let run = ws.start_run("bench", None, "text")?;
                    ws.finish_run(&run, RunStatus::Succeeded, Some("done"), None)?;
                }
                let t = Instant::now();
                let page = ws.search(&SearchQuery {
                    text: q.to_string(),
                    limit: 10,
                    mode: *mode,
                    ..Default::default()
                })?;
                if round > 0 {
                    times[i].push(ms(t));
                }
                std::hint::black_box(page);
            }
        }
    }
    for t in &mut times {
        t.sort_by(|a, b| a.total_cmp(b));
    }
    Ok(serde_json::json!({
        "queries": QUERIES.len(), "rounds": 5, "recording": recording,
        "words_p50_ms": percentile(&times[0], 0.5), "words_p95_ms": percentile(&times[0], 0.95),
        "hybrid_p50_ms": percentile(&times[1], 0.5), "hybrid_p95_ms": percentile(&times[1], 0.95),
    }))
}

/// Where the vectors live, measured (issue 18 asks for sqlite-vec or BLOBs with an exact scan,
/// whichever is faster at this size): N unit vectors of MiniLM's dimension, clustered as real
/// embeddings are, and the same queries answered (top 50) by
/// - Burrow's choice: BLOBs in a table, read once into memory and scanned exactly;
/// - sqlite-vec's `vec0` virtual table (its KNN: also an exact scan, inside SQLite);
/// - sqlite-vec's `vec_distance_l2` over the same BLOB table (`ORDER BY ... LIMIT`).
///
/// Each query is run by the three in turn (A B C A B C), and the answers are compared.
fn vectors_bench(n: usize) -> anyhow::Result<serde_json::Value> {
    use rusqlite::Connection;
    const DIM: usize = 384;
    const K: usize = 50;
    const QUERIES_N: usize = 100;
    // SAFETY: sqlite3_vec_init is SQLite's extension entry point (the crate declares it
    // without arguments); registered once, before any connection is opened.
    unsafe {
        type Init = unsafe extern "C" fn(
            *mut rusqlite::ffi::sqlite3,
            *mut *mut std::os::raw::c_char,
            *const rusqlite::ffi::sqlite3_api_routines,
        ) -> std::os::raw::c_int;
        let init: Init =
            std::mem::transmute::<*const (), Init>(sqlite_vec::sqlite3_vec_init as *const ());
        rusqlite::ffi::sqlite3_auto_extension(Some(init));
    }
    let mut rng = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        (rng >> 11) as f32 / (1u64 << 53) as f32 - 0.5
    };
    let unit = |v: &mut Vec<f32>| {
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-9);
        v.iter_mut().for_each(|x| *x /= norm);
    };
    let centres: Vec<Vec<f32>> = (0..64)
        .map(|_| {
            let mut c: Vec<f32> = (0..DIM).map(|_| next()).collect();
            unit(&mut c);
            c
        })
        .collect();
    let mut around = |c: &[f32], spread: f32| {
        let mut v: Vec<f32> = c.iter().map(|x| x + spread * next()).collect();
        unit(&mut v);
        v
    };
    let vectors: Vec<Vec<f32>> = (0..n).map(|i| around(&centres[i % 64], 0.15)).collect();
    let queries: Vec<Vec<f32>> = (0..QUERIES_N)
        .map(|i| around(&centres[(i * 7) % 64], 0.2))
        .collect();
    let blob = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();

    let dir = tempfile::tempdir()?;
    let conn = Connection::open(dir.path().join("vectors.db"))?;
    conn.execute_batch(&format!(
        "PRAGMA journal_mode = WAL;
         CREATE TABLE vectors (id INTEGER PRIMARY KEY, vec BLOB NOT NULL);
         CREATE VIRTUAL TABLE vec_items USING vec0(embedding float[{DIM}]);"
    ))?;
    // Every vector into one table, in one transaction; the milliseconds it took.
    let fill = |sql: &str| -> anyhow::Result<f64> {
        let t = Instant::now();
        let tx = conn.unchecked_transaction()?;
        {
            let mut st = tx.prepare(sql)?;
            for (i, v) in vectors.iter().enumerate() {
                st.execute(rusqlite::params![i as i64, blob(v)])?;
            }
        }
        tx.commit()?;
        Ok(ms(t))
    };
    let insert_blob_ms = fill("INSERT INTO vectors (id, vec) VALUES (?1, ?2)")?;
    let insert_vec0_ms = fill("INSERT INTO vec_items (rowid, embedding) VALUES (?1, ?2)")?;

    // Burrow's load: every BLOB into one row-major array (once per change of the vectors).
    let t = Instant::now();
    let mut data: Vec<f32> = Vec::with_capacity(n * DIM);
    {
        let mut st = conn.prepare("SELECT vec FROM vectors ORDER BY id")?;
        let mut rows = st.query([])?;
        while let Some(r) = rows.next()? {
            let bytes: Vec<u8> = r.get(0)?;
            data.extend(
                bytes
                    .chunks_exact(4)
                    .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
            );
        }
    }
    let load_ms = ms(t);

    let mut knn = conn.prepare(&format!(
        "SELECT rowid FROM vec_items WHERE embedding MATCH ?1 AND k = {K} ORDER BY distance"
    ))?;
    let mut brute = conn.prepare(&format!(
        "SELECT id FROM vectors ORDER BY vec_distance_l2(vec, ?1) LIMIT {K}"
    ))?;
    let (mut scan, mut vec0, mut l2) = (Vec::new(), Vec::new(), Vec::new());
    let mut plain = Vec::new();
    let mut agree = 0;
    for q in &queries {
        let t = Instant::now();
        let ours: Vec<i64> = burrow::workspace::vectors::nearest_in(&data, DIM, q, K, |_| true)
            .into_iter()
            .map(|(i, _)| i as i64)
            .collect();
        scan.push(ms(t));
        // The scan as it was first written: one chain of additions per vector, not SIMD.
        let t = Instant::now();
        let mut scored: Vec<(f32, usize)> = data
            .chunks_exact(DIM)
            .map(|v| v.iter().zip(q).map(|(a, b)| a * b).sum::<f32>())
            .zip(0..)
            .collect();
        scored.select_nth_unstable_by(K - 1, |a, b| b.0.total_cmp(&a.0));
        std::hint::black_box(&scored);
        plain.push(ms(t));
        let t = Instant::now();
        let theirs: Vec<i64> = knn
            .query_map([blob(q)], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        vec0.push(ms(t));
        let t = Instant::now();
        let brute_ids: Vec<i64> = brute
            .query_map([blob(q)], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        l2.push(ms(t));
        // Unit vectors: the largest dot products are the smallest L2 distances.
        agree += usize::from(ours.first() == theirs.first() && ours.first() == brute_ids.first());
    }
    for v in [&mut scan, &mut plain, &mut vec0, &mut l2] {
        v.sort_by(|a, b| a.total_cmp(b));
    }
    Ok(serde_json::json!({
        "vectors": n, "dimension": DIM, "k": K, "queries": QUERIES_N,
        "same_first_hit": agree,
        "insert_blob_ms": insert_blob_ms, "insert_vec0_ms": insert_vec0_ms,
        "burrow_load_ms": load_ms,
        "burrow_scan_p50_ms": percentile(&scan, 0.5), "burrow_scan_p95_ms": percentile(&scan, 0.95),
        "plain_scan_p50_ms": percentile(&plain, 0.5), "plain_scan_p95_ms": percentile(&plain, 0.95),
        "vec0_knn_p50_ms": percentile(&vec0, 0.5), "vec0_knn_p95_ms": percentile(&vec0, 0.95),
        "vec_distance_l2_p50_ms": percentile(&l2, 0.5), "vec_distance_l2_p95_ms": percentile(&l2, 0.95),
    }))
}
