//! Reading a git repository with gix (no `git` process): commits with their changed files and
//! line counts, branches and tags.

use std::collections::HashSet;
use std::path::Path;

use gix::bstr::ByteSlice;
use gix::diff::blob::{diff_with_slider_heuristics, Diff, InternedInput};

use super::WorkspaceError;

/// A commit as the index stores it.
#[derive(Debug, Clone, PartialEq)]
pub struct CommitRecord {
    pub hash: String,
    pub author_name: String,
    pub author_email: String,
    /// Seconds since the Unix epoch.
    pub time: i64,
    pub summary: String,
    pub message: String,
    pub parents: Vec<String>,
    pub files: Vec<FileChange>,
    /// The lines the commit adds, then those it removes, over its text files, as search reads
    /// them (`ChangedLines`).
    pub changes: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct FileChange {
    pub path: String,
    /// added, deleted or modified
    pub change: &'static str,
    pub additions: u32,
    pub deletions: u32,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RefRecord {
    pub name: String,
    /// branch or tag
    pub kind: &'static str,
    pub target: String,
}

fn git_err(root: &Path, what: &str, e: impl std::fmt::Display) -> WorkspaceError {
    WorkspaceError::Git {
        path: root.to_path_buf(),
        reason: format!("{what}: {e}"),
    }
}

/// An opened repository.
pub struct GitRepo {
    repo: gix::Repository,
    root: std::path::PathBuf,
    /// Diff buffers, reused from commit to commit: one for the tree walk, one for line counts
    /// (the walk holds its cache while each change is counted).
    cache: std::cell::RefCell<Option<(gix::diff::blob::Platform, gix::diff::blob::Platform)>>,
}

impl GitRepo {
    /// Opens the repository whose work tree is `root` (not a parent of it: a plain folder inside
    /// some other repository is not that repository).
    pub fn open(root: &Path) -> Result<Option<Self>, WorkspaceError> {
        let dot_git = root.join(".git");
        if !dot_git.exists() {
            return Ok(None);
        }
        let repo = match gix::open(root) {
            Ok(r) => r,
            // A `.git` file whose gitdir is gone (a worktree whose repository moved, a
            // submodule's folder copied elsewhere): the folder's files are still there to
            // index, which the error refused altogether.
            Err(_) if dot_git.is_file() => return Ok(None),
            Err(e) => return Err(git_err(root, "cannot open the repository", e)),
        };
        Ok(Some(GitRepo {
            repo,
            root: root.to_path_buf(),
            cache: std::cell::RefCell::new(None),
        }))
    }

    /// The commit HEAD points at, if any (a new repository has none).
    pub fn head(&self) -> Option<String> {
        self.repo.head_id().ok().map(|id| id.to_string())
    }

    /// The `origin` remote as `owner/name`, when it is a GitHub-style URL.
    pub fn origin_slug(&self) -> Option<String> {
        let remote = self.repo.find_remote("origin").ok()?;
        let url = remote.url(gix::remote::Direction::Fetch)?;
        let path = url
            .path
            .to_str()
            .ok()?
            .trim_matches('/')
            .trim_end_matches(".git");
        let mut parts = path.rsplit('/');
        let name = parts.next()?;
        let owner = parts.next()?;
        (!owner.is_empty() && !name.is_empty()).then(|| format!("{owner}/{name}"))
    }

    pub fn refs(&self) -> Result<Vec<RefRecord>, WorkspaceError> {
        let platform = self
            .repo
            .references()
            .map_err(|e| git_err(&self.root, "cannot list references", e))?;
        let mut out = Vec::new();
        for (kind, iter) in [
            ("branch", platform.local_branches()),
            ("tag", platform.tags()),
        ] {
            let iter = iter.map_err(|e| git_err(&self.root, "cannot list references", e))?;
            for r in iter.flatten() {
                let mut r = r;
                let name = r.name().shorten().to_str_lossy().into_owned();
                if let Ok(id) = r.peel_to_id() {
                    out.push(RefRecord {
                        name,
                        kind,
                        target: id.to_string(),
                    });
                }
            }
        }
        Ok(out)
    }

    /// Commits reachable from HEAD, the local branches and the tags but not from `complete`
    /// (commits indexed with their whole history), parents before children. Saved in this
    /// order, a run killed at any point leaves every saved commit's history saved, so the next
    /// run can take what it finds as complete (saved newest first, a killed run left the older
    /// history out for good: issue 17).
    pub fn new_commit_ids(
        &self,
        tips: &[gix::ObjectId],
        complete: &HashSet<String>,
    ) -> Result<Vec<gix::ObjectId>, WorkspaceError> {
        let mut tips = tips.to_vec();
        tips.retain(|id| !complete.contains(&id.to_string()));
        tips.sort();
        tips.dedup();
        if tips.is_empty() {
            return Ok(Vec::new());
        }
        let hidden: Vec<gix::ObjectId> = complete
            .iter()
            .filter_map(|h| gix::ObjectId::from_hex(h.as_bytes()).ok())
            .collect();
        let walk = |sorting| -> Result<Vec<(gix::ObjectId, Vec<gix::ObjectId>)>, WorkspaceError> {
            let infos = self
                .repo
                .rev_walk(tips.clone())
                .with_hidden(hidden.clone())
                .sorting(sorting)
                .all()
                .map_err(|e| git_err(&self.root, "cannot walk the history", e))?;
            let mut walked = Vec::new();
            for info in infos {
                let info = info.map_err(|e| git_err(&self.root, "cannot walk the history", e))?;
                walked.push((info.id, info.parent_ids.to_vec()));
            }
            Ok(walked)
        };
        // By time where every commit's dates can be read; else by its parents alone: one
        // commit whose author or committer line git's decoder refuses (a CVS or SVN import
        // with no email, which `git log` shows) failed every index of the repository.
        let walked = match walk(gix::revision::walk::Sorting::ByCommitTime(
            Default::default(),
        )) {
            Ok(w) => w,
            Err(_) => self.walk_raw(&tips, complete)?,
        };
        Ok(parents_first(walked))
    }

    /// The commits reachable from `tips`, stopping at those in `complete`, each with its
    /// parents, read from the commits' own header lines: for a history git's decoder refuses
    /// part of, which it cannot walk.
    fn walk_raw(
        &self,
        tips: &[gix::ObjectId],
        complete: &HashSet<String>,
    ) -> Result<Vec<(gix::ObjectId, Vec<gix::ObjectId>)>, WorkspaceError> {
        let mut seen: HashSet<gix::ObjectId> = HashSet::new();
        let mut todo: std::collections::VecDeque<gix::ObjectId> = tips.iter().copied().collect();
        let mut walked = Vec::new();
        while let Some(id) = todo.pop_front() {
            if !seen.insert(id) || complete.contains(&id.to_string()) {
                continue;
            }
            let object = match self.repo.find_object(id) {
                Ok(o) => o,
                // A shallow clone's boundary: its parents are not there.
                Err(_) => continue,
            };
            let parents: Vec<gix::ObjectId> = header_values(&object.data, b"parent ")
                .filter_map(|hex| gix::ObjectId::from_hex(hex).ok())
                .collect();
            todo.extend(parents.iter().copied());
            walked.push((id, parents));
        }
        Ok(walked)
    }

    /// The commits the history is read from: HEAD and every branch and tag that names one.
    pub fn tips(&self) -> Result<Vec<gix::ObjectId>, WorkspaceError> {
        let mut tips: Vec<gix::ObjectId> = Vec::new();
        if let Ok(id) = self.repo.head_id() {
            tips.push(id.detach());
        }
        for r in self.refs()? {
            if let Ok(id) = gix::ObjectId::from_hex(r.target.as_bytes()) {
                // Tags can point at trees or blobs; only commits start a walk.
                if self.repo.find_commit(id).is_ok() {
                    tips.push(id);
                }
            }
        }
        Ok(tips)
    }

    /// Whether the repository holds commit `id`.
    pub fn has_commit(&self, id: gix::ObjectId) -> bool {
        self.repo.find_commit(id).is_ok()
    }

    /// The bytes of the file at `path` in commit `hash`'s tree: None when that tree has no file
    /// there. A file over `max_bytes` is refused, as the index skips one.
    pub fn file_at(
        &self,
        hash: &str,
        path: &str,
        max_bytes: u64,
    ) -> Result<Option<Vec<u8>>, WorkspaceError> {
        let err = |what: &str, e: &dyn std::fmt::Display| {
            git_err(&self.root, &format!("{what} {path} at {hash}"), e)
        };
        let id = gix::ObjectId::from_hex(hash.as_bytes()).map_err(|e| err("reading", &e))?;
        let commit = self
            .repo
            .find_commit(id)
            .map_err(|e| err("reading the commit of", &e))?;
        let tree = commit.tree().map_err(|e| err("reading the tree of", &e))?;
        let Some(entry) = tree
            .lookup_entry_by_path(path)
            .map_err(|e| err("looking up", &e))?
        else {
            return Ok(None);
        };
        if !entry.mode().is_blob() {
            return Ok(None);
        }
        let header = self
            .repo
            .find_header(entry.object_id())
            .map_err(|e| err("reading", &e))?;
        if header.size() > max_bytes {
            return Err(WorkspaceError::Refused(format!(
                "{path} at {hash} is {} bytes, over the {max_bytes}-byte limit",
                header.size()
            )));
        }
        let object = entry.object().map_err(|e| err("reading", &e))?;
        Ok(Some(object.detach().data))
    }

    /// One commit, with its changed files and line counts (against its first parent).
    pub fn commit_record(&self, id: gix::ObjectId) -> Result<CommitRecord, WorkspaceError> {
        let mut slot = self.cache.borrow_mut();
        if slot.is_none() {
            *slot = Some((self.diff_cache()?, self.diff_cache()?));
        }
        match slot.as_mut() {
            Some((walk, lines)) => self.read_commit(id, walk, lines),
            None => Err(git_err(&self.root, "cannot prepare diffs", "no cache")),
        }
    }

    fn diff_cache(&self) -> Result<gix::diff::blob::Platform, WorkspaceError> {
        self.repo
            .diff_resource_cache_for_tree_diff()
            .map_err(|e| git_err(&self.root, "cannot prepare diffs", e))
    }

    fn read_commit(
        &self,
        id: gix::ObjectId,
        walk_cache: &mut gix::diff::blob::Platform,
        cache: &mut gix::diff::blob::Platform,
    ) -> Result<CommitRecord, WorkspaceError> {
        let hash = id.to_string();
        let err = |what: &str, e: &dyn std::fmt::Display| {
            git_err(&self.root, &format!("{what} {hash}"), e)
        };
        let commit = self
            .repo
            .find_commit(id)
            .map_err(|e| err("cannot read commit", &e))?;
        let encoding = header_encoding(&commit.data);
        // An author line git's decoder refuses (no `<email>`, as CVS and SVN imports wrote
        // some) is read as it stands: the error failed every index of the repository.
        let (author_name, author_email, time) = match commit.author() {
            Ok(a) => (
                decoded(a.name, encoding),
                decoded(a.email, encoding),
                a.time().map(|t| t.seconds).unwrap_or(0),
            ),
            Err(_) => loose_author(&commit.data, encoding),
        };
        let message = decoded(commit.message_raw_sloppy(), encoding);
        let summary = message.lines().next().unwrap_or("").trim().to_string();
        let parents: Vec<String> = commit.parent_ids().map(|p| p.to_string()).collect();
        // A merge changed nothing of its own (as `git log -- PATH` and `git show` have it):
        // diffed against its first parent, whoever merged was credited with every file the
        // merged branch changed, in who_changed too.
        let merge = parents.len() > 1;
        let tree = commit
            .tree()
            .map_err(|e| err("cannot read the tree of", &e))?;
        let mut files = Vec::new();
        let mut changed = ChangedLines::default();
        let record = |files, changed: ChangedLines| CommitRecord {
            hash: hash.clone(),
            author_name: author_name.clone(),
            author_email: author_email.clone(),
            time,
            summary: summary.clone(),
            message: message.clone(),
            parents: parents.clone(),
            files,
            changes: changed.text(),
        };
        // Changes against the first parent (for a merge, what the merge brought in); against the
        // empty tree for a root commit.
        let parent_tree = match commit.parent_ids().next() {
            Some(p) => match self.repo.find_commit(p) {
                Ok(c) => Some(c.tree().map_err(|e| err("cannot read the parent of", &e))?),
                // A shallow clone's oldest commits name parents it does not hold: what they
                // changed is unknown, so they are kept with no files (not as adding the whole
                // tree). Taken as an error, it failed every index of a `--depth` clone.
                Err(_) if self.is_shallow_boundary(id) => return Ok(record(files, changed)),
                Err(e) => return Err(err("cannot read the parent of", &e)),
            },
            None => None,
        };
        if merge {
            return Ok(record(files, changed));
        }
        let base = parent_tree.unwrap_or_else(|| self.repo.empty_tree());
        let mut changes = base.changes().map_err(|e| err("cannot diff", &e))?;
        changes.options(|o| {
            o.track_path();
            o.track_rewrites(None);
        });
        changes
            .for_each_to_obtain_tree_with_cache(&tree, walk_cache, |change| {
                use gix::object::tree::diff::Change;
                let (path, kind, mode) = match &change {
                    Change::Addition {
                        location,
                        entry_mode,
                        ..
                    } => (location.to_string(), "added", *entry_mode),
                    Change::Deletion {
                        location,
                        entry_mode,
                        ..
                    } => (location.to_string(), "deleted", *entry_mode),
                    Change::Modification {
                        location,
                        entry_mode,
                        ..
                    } => (location.to_string(), "modified", *entry_mode),
                    Change::Rewrite {
                        location,
                        entry_mode,
                        ..
                    } => (location.to_string(), "renamed", *entry_mode),
                };
                // A submodule moved to another commit: its path changed, with no lines to
                // count (it had none, and "which commit bumped vendor/lib" found nothing).
                if mode.is_commit() {
                    files.push(FileChange {
                        path,
                        change: kind,
                        additions: 0,
                        deletions: 0,
                    });
                } else if mode.is_blob_or_symlink() {
                    // One diff gives the counts and, while the budget lasts, the lines.
                    let wanted = changed.wanted(&path);
                    let counts = change
                        .diff(cache)
                        .ok()
                        .and_then(|p| line_stats(p, wanted.then_some(&mut changed)));
                    files.push(FileChange {
                        path,
                        change: kind,
                        additions: counts.map_or(0, |c| c.0),
                        deletions: counts.map_or(0, |c| c.1),
                    });
                }
                cache.clear_resource_cache_keep_allocation();
                Ok(std::ops::ControlFlow::Continue(()))
            })
            .map_err(|e| err("cannot diff", &e))?;
        Ok(record(files, changed))
    }

    /// Whether `id` is at the boundary of a shallow clone: its parents are not in it.
    fn is_shallow_boundary(&self, id: gix::ObjectId) -> bool {
        matches!(self.repo.shallow_commits(), Ok(Some(b)) if b.iter().any(|c| *c == id))
    }

    /// The patch of one commit against its first parent, as unified-diff text, at most
    /// `max_bytes` (the rest is cut, and the cut reported).
    pub fn commit_patch(
        &self,
        hash: &str,
        max_bytes: usize,
    ) -> Result<(String, bool), WorkspaceError> {
        let err = |what: &str, e: &dyn std::fmt::Display| {
            git_err(&self.root, &format!("{what} {hash}"), e)
        };
        let id =
            gix::ObjectId::from_hex(hash.as_bytes()).map_err(|e| err("bad commit hash", &e))?;
        let commit = self
            .repo
            .find_commit(id)
            .map_err(|e| err("cannot read commit", &e))?;
        let tree = commit
            .tree()
            .map_err(|e| err("cannot read the tree of", &e))?;
        let base = match commit.parent_ids().next() {
            // Said in place of the patch, so the commit's message and details still show.
            Some(_) if self.is_shallow_boundary(id) => {
                return Ok((
                    "(This is where the shallow clone's history stops: the commit's parent is \
                     not in the clone, so what it changed cannot be shown.)\n"
                        .to_string(),
                    false,
                ))
            }
            Some(p) => self
                .repo
                .find_commit(p)
                .and_then(|c| c.tree())
                .map_err(|e| err("cannot read the parent of", &e))?,
            None => self.repo.empty_tree(),
        };
        let mut out = String::new();
        let mut truncated = false;
        let mut walk_cache = self.diff_cache()?;
        let mut changes = base.changes().map_err(|e| err("cannot diff", &e))?;
        changes.options(|o| {
            o.track_path();
            o.track_rewrites(None);
        });
        let walked = changes.for_each_to_obtain_tree_with_cache(&tree, &mut walk_cache, |change| {
            if truncated {
                return Ok(std::ops::ControlFlow::Break(()));
            }
            use gix::object::tree::diff::Change;
            let (path, old, new) = match &change {
                Change::Addition { location, id, .. } => (location.to_string(), None, Some(*id)),
                Change::Deletion { location, id, .. } => (location.to_string(), Some(*id), None),
                Change::Modification {
                    location,
                    previous_id,
                    id,
                    ..
                } => (location.to_string(), Some(*previous_id), Some(*id)),
                Change::Rewrite {
                    location,
                    source_id,
                    id,
                    ..
                } => (location.to_string(), Some(*source_id), Some(*id)),
            };
            if !change.entry_mode().is_blob_or_symlink() {
                return Ok(std::ops::ControlFlow::Continue(()));
            }
            let read = |id: Option<gix::Id<'_>>| -> Option<String> {
                let blob = id?.object().ok()?;
                if super::text::looks_binary(&blob.data) {
                    return None;
                }
                Some(String::from_utf8_lossy(&blob.data).into_owned())
            };
            let (a, b) = (read(old), read(new));
            let header = format!(
                "diff --git a/{path} b/{path}\n--- {}\n+++ {}\n",
                if old.is_some() {
                    format!("a/{path}")
                } else {
                    "/dev/null".into()
                },
                if new.is_some() {
                    format!("b/{path}")
                } else {
                    "/dev/null".into()
                },
            );
            out.push_str(&header);
            match (a, b) {
                (None, None) if old.is_some() || new.is_some() => out.push_str("Binary file\n"),
                (a, b) => out.push_str(&unified_diff(
                    a.as_deref().unwrap_or(""),
                    b.as_deref().unwrap_or(""),
                )),
            }
            if out.len() > max_bytes {
                let mut cut = max_bytes;
                while !out.is_char_boundary(cut) {
                    cut -= 1;
                }
                out.truncate(cut);
                truncated = true;
            }
            Ok(std::ops::ControlFlow::Continue(()))
        });
        match walked {
            Ok(_) => {}
            // The walk stopped because the diff was long enough: gix reports a walk its
            // delegate broke off as cancelled, but what was asked for is here.
            Err(_) if truncated => {}
            Err(e) => return Err(err("cannot diff", &e)),
        }
        Ok((out, truncated))
    }
}

/// The bytes of changed lines kept for one commit's search entry. A commit is asked about by
/// what it did ("the commit that made --no-ignore imply --no-ignore-parent"), which its
/// subject often leaves out and its lines say. Chosen on the dev questions (docs/measurements/search.md): 1,000,
/// 2,000, 4,000 and 8,000 gave hybrid MRR@10 0.833, 0.840, 0.813 and 0.810 there; past
/// 2,000 a large commit's lines match more of every question than they answer.
pub const CHANGED_LINES_BYTES: usize = 2000;

/// The lines a commit adds and removes, as search reads them: the added lines first (what a
/// commit "added" is asked about most), then the removed ones; each line once, trimmed, blank
/// ones left out, until `CHANGED_LINES_BYTES`.
#[derive(Default)]
struct ChangedLines {
    added: Vec<String>,
    removed: Vec<String>,
    bytes: usize,
    seen: std::collections::HashSet<String>,
}

impl ChangedLines {
    /// Whether the file's lines are still read: lockfiles would fill the budget with names and
    /// hashes nobody asks about.
    fn wanted(&self, path: &str) -> bool {
        let name = path.rsplit('/').next().unwrap_or(path);
        self.bytes < CHANGED_LINES_BYTES
            && !name.ends_with(".lock")
            && !matches!(name, "package-lock.json" | "go.sum" | "pnpm-lock.yaml")
    }

    /// The lines `diff` finds changed in `input`, one file's two sides.
    fn add_diff<T: AsRef<[u8]>>(&mut self, input: &InternedInput<T>, diff: &Diff) {
        for h in diff.hunks() {
            for (range, side, removed) in [
                (h.after, &input.after, false),
                (h.before, &input.before, true),
            ] {
                for t in range {
                    if self.bytes >= CHANGED_LINES_BYTES {
                        return;
                    }
                    let line = String::from_utf8_lossy(input.interner[side[t as usize]].as_ref());
                    let line = line.trim();
                    if line.is_empty() || !self.seen.insert(line.to_string()) {
                        continue;
                    }
                    self.bytes += line.len() + 1;
                    let to = if removed {
                        &mut self.removed
                    } else {
                        &mut self.added
                    };
                    to.push(line.to_string());
                }
            }
        }
    }

    fn text(self) -> String {
        let mut lines = self.added;
        lines.extend(self.removed);
        lines.join("\n")
    }
}

/// The lines a file's change inserts and removes (None for a binary file, as gix's
/// `line_counts`), and, given `lines`, its changed lines added to them: both sides text, of at
/// most `MAX_FILE_BYTES` (what the indexer reads of a file).
fn line_stats(
    p: gix::object::blob::diff::Platform<'_>,
    lines: Option<&mut ChangedLines>,
) -> Option<(u32, u32)> {
    use gix::diff::blob::platform::{prepare_diff::Operation, resource::Data};
    let cache = p.resource_cache;
    cache.options.skip_internal_diff_if_external_is_configured = false;
    let prep = cache.prepare_diff().ok()?;
    let Operation::InternalDiff { algorithm } = prep.operation else {
        return None;
    };
    let input = prep.interned_input();
    let diff = diff_with_slider_heuristics(algorithm, &input);
    if let Some(lines) = lines {
        let text = |d: &Data<'_>| match d {
            Data::Missing => true,
            Data::Buffer { buf, .. } => {
                buf.len() as u64 <= super::index::MAX_FILE_BYTES && !super::text::looks_binary(buf)
            }
            Data::Binary { .. } => false,
        };
        if text(&prep.old.data) && text(&prep.new.data) {
            lines.add_diff(&input, &diff);
        }
    }
    Some((diff.count_additions(), diff.count_removals()))
}

/// A unified diff with 3 lines of context, with git's algorithm and slider heuristics (gix's).
fn unified_diff(a: &str, b: &str) -> String {
    use gix::diff::blob::unified_diff::{ConsumeBinaryHunk, ContextSize};
    use gix::diff::blob::{Algorithm, UnifiedDiff};
    let input = InternedInput::new(a, b);
    let diff = diff_with_slider_heuristics(Algorithm::Histogram, &input);
    UnifiedDiff::new(
        &diff,
        &input,
        ConsumeBinaryHunk::new(String::new(), "\n"),
        ContextSize::symmetrical(3),
    )
    .consume()
    .unwrap_or_else(|e| format!("(cannot render the diff: {e})\n"))
}

/// The values of a raw commit's header lines named `key` (with its space), in order: the lines
/// before the blank one that starts the message.
fn header_values<'a>(data: &'a [u8], key: &'a [u8]) -> impl Iterator<Item = &'a [u8]> + 'a {
    data.split(|b| *b == b'\n')
        .take_while(|l| !l.is_empty())
        .filter_map(move |l| l.strip_prefix(key))
}

/// The encoding a commit's `encoding` header names (git writes it where the message is not
/// UTF-8: `i18n.commitEncoding`); none for UTF-8 or a name it does not know.
fn header_encoding(data: &[u8]) -> Option<&'static encoding_rs::Encoding> {
    header_values(data, b"encoding ")
        .next()
        .and_then(encoding_rs::Encoding::for_label)
        .filter(|e| *e != encoding_rs::UTF_8)
}

/// Text of a commit in its encoding: read as UTF-8, an ISO-8859-1 message showed replacement
/// characters where `git log` shows "Café".
fn decoded(bytes: &[u8], encoding: Option<&'static encoding_rs::Encoding>) -> String {
    match encoding {
        Some(e) => e.decode_without_bom_handling(bytes).0.into_owned(),
        None => String::from_utf8_lossy(bytes).into_owned(),
    }
}

/// A commit's author as its raw `author NAME <EMAIL> SECONDS ZONE` line has it, read without
/// insisting on the form: the name, the email when there is one, the time when it reads.
fn loose_author(
    data: &[u8],
    encoding: Option<&'static encoding_rs::Encoding>,
) -> (String, String, i64) {
    let line = header_values(data, b"author ")
        .next()
        .map(|l| decoded(l, encoding))
        .unwrap_or_default();
    let mut words: Vec<&str> = line.split_whitespace().collect();
    let zone = words.last().is_some_and(|w| w.starts_with(['+', '-']));
    if zone {
        words.pop();
    }
    let time = words.last().and_then(|w| w.parse::<i64>().ok());
    if time.is_some() {
        words.pop();
    }
    let rest = words.join(" ");
    let (name, email) = match (rest.find('<'), rest.rfind('>')) {
        (Some(a), Some(b)) if a < b => (rest[..a].trim().to_string(), rest[a + 1..b].to_string()),
        _ => (rest.trim().to_string(), String::new()),
    };
    (name, email, time.unwrap_or(0))
}

/// Orders commits (given newest first, with their parents) so that each comes after those of
/// its parents that are in the list, the oldest history first. Iterative: a long history is
/// a deep chain.
fn parents_first(walked: Vec<(gix::ObjectId, Vec<gix::ObjectId>)>) -> Vec<gix::ObjectId> {
    let index: std::collections::HashMap<gix::ObjectId, usize> = walked
        .iter()
        .enumerate()
        .map(|(i, (id, _))| (*id, i))
        .collect();
    // 0: not reached, 1: waiting for its parents, 2: placed.
    let mut state = vec![0u8; walked.len()];
    let mut out = Vec::with_capacity(walked.len());
    for start in (0..walked.len()).rev() {
        if state[start] != 0 {
            continue;
        }
        state[start] = 1;
        let mut stack = vec![(start, 0usize)];
        while let Some(&(node, next)) = stack.last() {
            match walked[node].1.get(next) {
                Some(parent) => {
                    if let Some(top) = stack.last_mut() {
                        top.1 += 1;
                    }
                    if let Some(&p) = index.get(parent) {
                        if state[p] == 0 {
                            state[p] = 1;
                            stack.push((p, 0));
                        }
                    }
                }
                None => {
                    state[node] = 2;
                    out.push(walked[node].0);
                    stack.pop();
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{
        diff_with_slider_heuristics, parents_first, ChangedLines, InternedInput,
        CHANGED_LINES_BYTES,
    };
    use gix::diff::blob::Algorithm;

    /// The lines that differ between two sides of a file, added to `c` as indexing adds them.
    fn add(c: &mut ChangedLines, before: &str, after: &str) {
        let input = InternedInput::new(before, after);
        c.add_diff(
            &input,
            &diff_with_slider_heuristics(Algorithm::Histogram, &input),
        );
    }

    /// What a commit's search entry holds of its lines (issue 18): the added lines before the
    /// removed ones, whatever the order of the hunks; each line once; no blank ones; and no
    /// more once `CHANGED_LINES_BYTES` is reached, though more files follow.
    #[test]
    fn changed_lines_hold_added_lines_first_each_once_within_the_budget() {
        let mut c = ChangedLines::default();
        add(
            &mut c,
            "keep\nold one\n\nkeep too\nold two\n",
            "keep\nnew one\n\n   \nkeep too\nnew two\nnew one\n",
        );
        assert_eq!(c.text(), "new one\nnew two\nold one\nold two");

        let mut c = ChangedLines::default();
        let long: String = (0..1000).map(|i| format!("line {i}\n")).collect();
        add(&mut c, "", &long);
        assert!(c.bytes >= CHANGED_LINES_BYTES);
        assert!(!c.wanted("src/next.rs"));
        let text = c.text();
        assert!(text.starts_with("line 0\nline 1\n"), "{text}");
        assert!(text.len() <= CHANGED_LINES_BYTES + 20, "{}", text.len());
        assert!(!text.contains("line 999"));

        let c = ChangedLines::default();
        assert!(c.wanted("src/lib.rs"));
        assert!(!c.wanted("Cargo.lock") && !c.wanted("web/package-lock.json"));
    }

    fn id(n: u8) -> gix::ObjectId {
        gix::ObjectId::Sha1([n; 20])
    }

    #[test]
    fn parents_come_before_children_whatever_the_commit_times() {
        // 1 <- 2 <- 4 (merge of 2 and 3), 1 <- 3 <- 4; 5 on top. Given in an order a walk by
        // commit time gives when clocks were skewed: 3 looks older than 1.
        let walked = vec![
            (id(5), vec![id(4)]),
            (id(4), vec![id(2), id(3)]),
            (id(2), vec![id(1)]),
            (id(1), vec![]),
            (id(3), vec![id(1)]),
        ];
        let order = parents_first(walked.clone());
        assert_eq!(order.len(), walked.len());
        let at = |n: u8| order.iter().position(|x| *x == id(n)).unwrap();
        for (child, parents) in &walked {
            let c = order.iter().position(|x| x == child).unwrap();
            for p in parents {
                assert!(order.iter().position(|x| x == p).unwrap() < c, "{order:?}");
            }
        }
        assert_eq!(at(1), 0);
        // A parent outside the list (already indexed) is no constraint.
        assert_eq!(parents_first(vec![(id(9), vec![id(8)])]), vec![id(9)]);
    }
}
