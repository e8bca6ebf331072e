//! The workspace benchmark behind `scripts/bench-workspace.sh`: search latency over an indexed
//! workspace, exact-string code search against `rg` on the same tree (side by side, alternating),
//! and an import of generated issues at scale.
//!
//!   workspace_bench search HOME REPO_NAME REPO_PATH
//!   workspace_bench scale HOME N
//!
//! Prints one JSON object.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use burrow::workspace::grep::GrepQuery;
use burrow::workspace::{SearchQuery, Workspace};

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

fn search_bench(home: &Path, repo: &str, tree: &Path) -> serde_json::Value {
    let ws = Workspace::open_at(&home.join("workspace.db")).expect("workspace");
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
            let page = ws
                .search(&SearchQuery {
                    text: q.to_string(),
                    limit: 10,
                    ..Default::default()
                })
                .expect("search");
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
            let r = ws
                .grep(&GrepQuery {
                    pattern: pat.into(),
                    regex: false,
                    case_sensitive: true,
                    repo: Some(repo.into()),
                    path: None,
                    limit: 1000,
                })
                .expect("grep");
            ours.push(ms(t));
            counts.0 = r.hits.len();
            let t = Instant::now();
            let out = Command::new("rg")
                .args(["-F", "-n", "--no-heading", "--color", "never", "-e", pat])
                .current_dir(tree)
                .output()
                .expect("rg runs");
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
    serde_json::json!({
        "queries": times.len(),
        "search_p50_ms": percentile(&times, 0.5),
        "search_p95_ms": percentile(&times, 0.95),
        "search_max_ms": times.last(),
        "grep": rows,
        "grep_median_ratio_vs_rg": ratios[ratios.len() / 2],
    })
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

const WORDS: &[&str] = &[
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

fn scale_bench(home: &Path, n: usize) -> serde_json::Value {
    let dir = home.join("scale");
    std::fs::create_dir_all(&dir).expect("dir");
    let file = dir.join("issues.json");
    // Pages of 100, back to back, as `gh api --paginate` writes them.
    {
        use std::io::Write;
        let mut f = std::io::BufWriter::new(std::fs::File::create(&file).expect("file"));
        let mut seed: u64 = 42;
        let mut rnd = |m: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % m as u64) as usize
        };
        for page in 0..n.div_ceil(100) {
            let items: Vec<serde_json::Value> = (0..100)
                .map(|i| page * 100 + i + 1)
                .filter(|&num| num <= n)
                .map(|num| {
                    let title: Vec<&str> = (0..6).map(|_| WORDS[rnd(WORDS.len())]).collect();
                    let body: Vec<&str> = (0..60).map(|_| WORDS[rnd(WORDS.len())]).collect();
                    serde_json::json!({
                        "number": num, "title": title.join(" "), "body": body.join(" "),
                        "state": if num % 3 == 0 { "closed" } else { "open" },
                        "user": {"login": format!("user{}", num % 500)},
                        "labels": [{"name": WORDS[num % 7]}],
                        "created_at": "2024-01-01T00:00:00Z"
                    })
                })
                .collect();
            serde_json::to_writer(&mut f, &items).expect("write");
            f.write_all(b"\n").expect("write");
        }
    }
    let file_mb = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0) as f64 / 1e6;
    let ws = Workspace::open_at(&home.join("scale.db")).expect("workspace");
    let rss_before = peak_rss_kb();
    let t = Instant::now();
    let report = ws.import(&file, "scale/test", &mut |_| {}).expect("import");
    let import_ms = ms(t);
    let rss_peak = peak_rss_kb();
    let mut times = Vec::new();
    for _ in 0..3 {
        for i in 0..40 {
            let q = format!(
                "{} {}",
                WORDS[i % WORDS.len()],
                WORDS[(i * 7 + 3) % WORDS.len()]
            );
            let t = Instant::now();
            let page = ws
                .search(&SearchQuery {
                    text: q,
                    limit: 10,
                    ..Default::default()
                })
                .expect("search");
            times.push(ms(t));
            std::hint::black_box(page);
        }
    }
    times.sort_by(|a, b| a.total_cmp(b));
    let db_mb = ["scale.db", "scale.db-wal"]
        .iter()
        .filter_map(|f| std::fs::metadata(home.join(f)).ok())
        .map(|m| m.len())
        .sum::<u64>() as f64
        / 1e6;
    serde_json::json!({
        "issues": report.issues, "import_file_mb": file_mb, "import_ms": import_ms,
        "issues_per_s": report.issues as f64 / (import_ms / 1000.0),
        "peak_rss_before_mb": rss_before as f64 / 1024.0, "peak_rss_mb": rss_peak as f64 / 1024.0,
        "search_p50_ms": percentile(&times, 0.5), "search_p95_ms": percentile(&times, 0.95),
        "db_mb": db_mb,
    })
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let out = match args.get(1).map(String::as_str) {
        Some("search") if args.len() == 5 => {
            search_bench(Path::new(&args[2]), &args[3], Path::new(&args[4]))
        }
        Some("scale") if args.len() == 4 => {
            scale_bench(Path::new(&args[2]), args[3].parse().expect("N"))
        }
        _ => {
            eprintln!("usage: workspace_bench search HOME REPO_NAME REPO_PATH | scale HOME N");
            std::process::exit(2);
        }
    };
    println!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
}
