//! Search by meaning, put together: the embedding model (llama.cpp) behind the workspace's
//! `Embedder`, the workspace embedded with it, and queries given their vector. Both shells use
//! this; the workspace itself knows nothing of models.

use std::path::Path;
use std::sync::{mpsc, Arc, Mutex};

use sha2::{Digest, Sha256};

use super::settings::{EmbeddingPrompts, Settings};
use super::AppError;
use crate::config::BurrowHome;
use crate::llm::embed::{EmbedError, EmbeddingModel, Prompts, DEFAULT_BATCH_TOKENS};
use crate::workspace::vectors::MAX_EMBED_CHARS;
use crate::workspace::{Embedder, QueryEmbedder, MAX_EMBED_TOKENS};

/// The embedding model as the workspace sees it.
pub struct ModelEmbedder {
    model: Arc<EmbeddingModel>,
    name: String,
    /// What the file holds (`file_fingerprint`).
    fingerprint: Option<String>,
    /// The file's size and time of change when it was loaded (`file_stamp`).
    stamp: Option<(u64, std::time::SystemTime)>,
    /// What each query and each unit is given before it: the settings', else the model's own.
    prompts: Prompts,
    /// The thread that embeds queries, in one context kept from query to query: making a
    /// context took 3-10 ms of a long question's 40 ms, on the path of every search by meaning.
    queries: QueryThread,
}

impl std::fmt::Debug for ModelEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelEmbedder")
            .field("name", &self.name)
            .field("prompts", &self.prompts)
            .finish()
    }
}

impl ModelEmbedder {
    /// Loads the embedding model `query` names (a path or a catalogue id), else the settings',
    /// else the catalogue's, with the settings' prompts where they are for that model: what
    /// the app loads, so the CLI's vectors are the app's.
    pub fn load(home: &BurrowHome, query: Option<&str>, threads: u32) -> Result<Self, AppError> {
        let settings = Settings::load(home)?;
        let path = super::models::embedding_model(home, query.or(settings.embedding_setting()))?;
        let prompts = settings_prompts(home, &settings, &path);
        Self::load_path(&path, threads, prompts)
    }

    pub fn path(&self) -> &Path {
        self.model.path()
    }

    /// What each query and each unit is given before it.
    pub fn prompts(&self) -> &Prompts {
        &self.prompts
    }

    /// Whether this is the model loaded with `prompts` (the settings'; None: its own).
    pub fn uses(&self, prompts: Option<&EmbeddingPrompts>) -> bool {
        chosen(&self.model, prompts) == self.prompts
    }

    /// Whether its file is as it was loaded (not replaced in place since).
    pub fn is_current(&self) -> bool {
        self.stamp.is_some() && file_stamp(self.model.path()) == self.stamp
    }

    /// Loads the model at `path`; `prompts` (the settings') replace the model's own.
    pub fn load_path(
        path: &Path,
        threads: u32,
        prompts: Option<&EmbeddingPrompts>,
    ) -> Result<Self, AppError> {
        // Known before it is loaded: a file replaced meanwhile is not labelled as the other.
        let stamp = file_stamp(path);
        let fingerprint = Some(file_fingerprint(path)?);
        let model = EmbeddingModel::load(path, threads).map_err(embed_err)?;
        let prompts = chosen(&model, prompts);
        // Each text is embedded from its first tokens: a prompt that takes most of them leaves
        // every unit the same vector (one token per character of a Chinese prompt).
        let room = MAX_EMBED_TOKENS.min(model.max_tokens());
        let bare = model.tokens("").len();
        for (which, prompt) in [("query", &prompts.query), ("document", &prompts.document)] {
            let n = model.tokens(prompt).len().saturating_sub(bare);
            if n > room / 2 {
                return Err(AppError::Embedding(format!(
                    "the {which} prompt ({}) takes {n} of the {room} tokens each text is \
                     embedded from; at most {} leave room for the text",
                    prompts.source,
                    room / 2
                )));
            }
        }
        // The file's name says which model made a vector: another file is another model, and
        // so is another document prompt (a vector of "search_document: " and the text is not
        // the text's). The query prompt makes no stored vector: changing it embeds nothing
        // again.
        let file = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| path.display().to_string());
        let name = if prompts.document.is_empty() {
            file
        } else {
            let digest = Sha256::digest(prompts.document.as_bytes());
            let short: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
            format!("{file}, document prompt {short}")
        };
        let model = Arc::new(model);
        let for_queries = Arc::clone(&model);
        Ok(ModelEmbedder {
            model,
            name,
            fingerprint,
            stamp,
            prompts: prompts.clone(),
            queries: QueryThread::new(move || {
                let model = Arc::clone(&for_queries);
                let prompts = prompts.clone();
                spawn_worker(move |queue| serve_queries(&model, &prompts, queue))
            }),
        })
    }
}

/// The settings' prompts where `path` is the model they were written for: another model,
/// chosen since in Settings or on the Models screen, or named for one command, has its own.
pub fn settings_prompts<'s>(
    home: &BurrowHome,
    settings: &'s Settings,
    path: &Path,
) -> Option<&'s EmbeddingPrompts> {
    let prompts = settings.embedding_prompts.as_ref()?;
    let model = Some(prompts.model.trim()).filter(|m| !m.is_empty());
    let theirs = super::models::embedding_model(home, model).ok()?;
    // One file however it is written ("./m.gguf", a link): the prompts were dropped, and the
    // workspace embedded again without them.
    let same = theirs == path
        || matches!((theirs.canonicalize(), path.canonicalize()), (Ok(a), Ok(b)) if a == b);
    same.then_some(prompts)
}

/// The prompts the settings give (`given`), else the model's own.
fn chosen(model: &EmbeddingModel, given: Option<&EmbeddingPrompts>) -> Prompts {
    match given {
        Some(p) => Prompts {
            query: p.query.clone(),
            document: p.document.clone(),
            source: "settings".into(),
        },
        None => model.prompts().clone(),
    }
}

/// What a model file holds, in short: its size, and the digest of its first MiB (the header)
/// and of a MiB at the start and at the middle of its weights (a large vocabulary fills the
/// first MiBs with the header alone), read in a few milliseconds where the whole file would
/// take seconds.
fn file_fingerprint(path: &Path) -> Result<String, AppError> {
    use std::io::{Read, Seek, SeekFrom};
    const WINDOW: u64 = 1 << 20;
    let unreadable = |e: &dyn std::fmt::Display| {
        AppError::Embedding(format!(
            "{}: cannot read the model file to know it by: {e}",
            path.display()
        ))
    };
    let data = crate::llm::gguf::GgufHeader::read(path)
        .map_err(|e| unreadable(&e))?
        .data_offset;
    let mut file = std::fs::File::open(path).map_err(|e| unreadable(&e))?;
    let size = file.metadata().map_err(|e| unreadable(&e))?.len();
    let mut hasher = Sha256::new();
    hasher.update(size.to_le_bytes());
    for at in [0, data, data + size.saturating_sub(data) / 2] {
        file.seek(SeekFrom::Start(at)).map_err(|e| unreadable(&e))?;
        std::io::copy(&mut (&mut file).take(WINDOW), &mut hasher).map_err(|e| unreadable(&e))?;
    }
    let digest = hasher.finalize();
    Ok(digest[..8].iter().map(|b| format!("{b:02x}")).collect())
}

/// The file's size and time of change: a file replaced in place is loaded again.
pub(crate) fn file_stamp(path: &Path) -> Option<(u64, std::time::SystemTime)> {
    let m = std::fs::metadata(path).ok()?;
    Some((m.len(), m.modified().ok()?))
}

fn embed_err(e: EmbedError) -> AppError {
    AppError::Embedding(e.to_string())
}

/// Embedding passes borrow the model, so the one loaded also serves queries meanwhile.
impl Embedder for &ModelEmbedder {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn fingerprint(&self) -> Option<String> {
        self.fingerprint.clone()
    }

    fn dimension(&self) -> usize {
        self.model.dimension()
    }

    fn embed(&mut self, texts: &[&str]) -> Result<Vec<Vec<f32>>, String> {
        let prompted: Vec<String>;
        let texts = if self.prompts.document.is_empty() {
            texts
        } else {
            prompted = texts.iter().map(|t| self.prompts.document(t)).collect();
            &prompted.iter().map(String::as_str).collect::<Vec<_>>()
        };
        self.model
            .session(MAX_EMBED_TOKENS, DEFAULT_BATCH_TOKENS)
            .and_then(|mut s| s.embed_starts_unchecked(texts, MAX_EMBED_TOKENS))
            .map_err(|e| e.to_string())
    }
}

impl QueryEmbedder for ModelEmbedder {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn fingerprint(&self) -> Option<String> {
        self.fingerprint.clone()
    }

    /// The query's start, as a unit's (its first `MAX_EMBED_CHARS` characters, then its first
    /// `MAX_EMBED_TOKENS` tokens): a log pasted into the search box (120 KB) was read whole,
    /// 12.6 s a search, and every typing pause asked again.
    fn embed_query(&self, text: &str) -> Result<Vec<f32>, String> {
        let start = match text.char_indices().nth(MAX_EMBED_CHARS) {
            Some((at, _)) => &text[..at],
            None => text,
        };
        self.queries.embed(start)
    }
}

/// A query to embed, and where its vector goes.
type QueryJob = (String, mpsc::SyncSender<Result<Vec<f32>, String>>);

/// A thread that embeds queries one at a time, and the way to send it one.
struct QueryWorker {
    jobs: mpsc::Sender<QueryJob>,
    thread: std::thread::JoinHandle<()>,
}

/// The query thread, started by the first query and again by the first after it is gone (it
/// panicked), and joined when this is dropped, so the model it holds is freed by then.
struct QueryThread {
    spawn: Box<dyn Fn() -> Result<QueryWorker, String> + Send + Sync>,
    current: Mutex<Option<QueryWorker>>,
}

const STOPPED: &str = "the query embedder stopped";

impl QueryThread {
    fn new(spawn: impl Fn() -> Result<QueryWorker, String> + Send + Sync + 'static) -> Self {
        QueryThread {
            spawn: Box::new(spawn),
            current: Mutex::new(None),
        }
    }

    /// The query's vector. A worker found gone is replaced and the query sent again, once: a
    /// panic costs the query it happened on, not the next one too.
    fn embed(&self, text: &str) -> Result<Vec<f32>, String> {
        for attempt in 0..2 {
            let (reply, vector) = mpsc::sync_channel(1);
            let sent = {
                let mut current = self.current.lock().unwrap_or_else(|e| e.into_inner());
                if attempt > 0 || current.is_none() {
                    *current = Some((self.spawn)()?);
                }
                current
                    .as_ref()
                    .is_some_and(|w| w.jobs.send((text.to_string(), reply)).is_ok())
            };
            if sent {
                if let Ok(result) = vector.recv() {
                    return result;
                }
            }
            // The worker was gone, or went while this query waited (it panicked on it).
        }
        Err(STOPPED.to_string())
    }
}

impl Drop for QueryThread {
    fn drop(&mut self) {
        let current = self.current.get_mut().unwrap_or_else(|e| e.into_inner());
        if let Some(w) = current.take() {
            // Ends the worker's loop once the query in hand (if any) is answered.
            drop(w.jobs);
            let _ = w.thread.join();
        }
    }
}

/// Starts a thread that answers queries with `serve` until the sender is dropped.
fn spawn_worker(
    serve: impl FnOnce(mpsc::Receiver<QueryJob>) + Send + 'static,
) -> Result<QueryWorker, String> {
    let (jobs, queue) = mpsc::channel::<QueryJob>();
    let thread = std::thread::Builder::new()
        .name("query-embedder".into())
        .spawn(move || serve(queue))
        .map_err(|e| format!("could not start the query embedder: {e}"))?;
    Ok(QueryWorker { jobs, thread })
}

/// Embeds queries one at a time (each after the query prompt), in a context it keeps. One thread: the query is embedded while
/// its words rank on the other core, and two threads fighting the ranking were slower (68
/// questions: p95 118 ms against 78 ms). A context that failed is made again for the next query.
fn serve_queries(model: &EmbeddingModel, prompts: &Prompts, queue: mpsc::Receiver<QueryJob>) {
    // Made on the first query, not before: a worker whose context failed makes another.
    let mut session = None;
    for (text, reply) in queue {
        if session.is_none() {
            // A query takes one window: a context that size is the cheapest to keep.
            match model.session_with_threads(MAX_EMBED_TOKENS, 0, 1) {
                Ok(s) => session = Some(s),
                Err(e) => {
                    let _ = reply.send(Err(e.to_string()));
                    continue;
                }
            }
        }
        let Some(s) = session.as_mut() else { continue };
        let result = s
            .embed_starts(&[prompts.query(&text).as_str()], MAX_EMBED_TOKENS)
            .map_err(|e| e.to_string())
            .and_then(|mut v| {
                v.pop()
                    .ok_or_else(|| "the model gave no vector".to_string())
            });
        if result.is_err() {
            session = None;
        }
        let _ = reply.send(result);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    /// Issue 18's leftover: the query thread, after it panicked, cost the next query too (that
    /// query found it gone, failed with "the query embedder stopped", and only then cleared it
    /// for the one after). Now a worker found gone is replaced and the query sent again.
    #[test]
    fn the_query_after_a_panic_is_answered_by_a_new_worker() {
        let started = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&started);
        let queries = QueryThread::new(move || {
            counter.fetch_add(1, Ordering::SeqCst);
            spawn_worker(|queue| {
                for (text, reply) in queue {
                    assert_ne!(text, "boom", "a worker that panics on this query");
                    let _ = reply.send(Ok(vec![text.len() as f32]));
                }
            })
        });
        assert_eq!(queries.embed("ab"), Ok(vec![2.0]));
        // The query a worker panics on fails (after one more worker tried it).
        assert_eq!(queries.embed("boom"), Err(STOPPED.to_string()));
        assert_eq!(queries.embed("abc"), Ok(vec![3.0]));
        assert_eq!(queries.embed("abcd"), Ok(vec![4.0]));
        assert_eq!(started.load(Ordering::SeqCst), 3);
    }

    /// The worker holds the model: dropping the embedder waits for it to end, so the model's
    /// memory is free when a new one is loaded (the thread was detached).
    #[test]
    fn dropping_the_query_thread_waits_for_its_worker() {
        let ended = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&ended);
        let queries = QueryThread::new(move || {
            let flag = Arc::clone(&flag);
            spawn_worker(move |queue| {
                for (text, reply) in queue {
                    let _ = reply.send(Ok(vec![text.len() as f32]));
                }
                std::thread::sleep(std::time::Duration::from_millis(100));
                flag.store(true, Ordering::SeqCst);
            })
        });
        assert_eq!(queries.embed("a"), Ok(vec![1.0]));
        drop(queries);
        assert!(ended.load(Ordering::SeqCst));
    }
}
