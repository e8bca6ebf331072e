//! Where runs are kept: the `RunStore` the agent writes to, and its implementation over the
//! workspace database. Each step is written when it completes, in its own statement (WAL), so
//! a killed process loses no completed step. A running run holds a lock file for as long as
//! its process lives; on the next start, a run still marked running whose lock is free
//! belonged to a process that died, and is marked interrupted.

use rusqlite::{params, OptionalExtension};

use super::record::{RunRecord, RunStatus, StepRecord};
use crate::workspace::index::FileLock;
use crate::workspace::{db_err, now, Workspace, WorkspaceError};

/// A run being written. Dropping it (the process ending included) releases what marks it as
/// alive, so another process can tell it was interrupted.
pub struct RunHandle {
    pub id: i64,
    _alive: Box<dyn Send + Sync>,
}

impl RunHandle {
    /// A handle for run `id`, alive while `alive` (a lock, say) is held.
    pub fn new(id: i64, alive: impl Send + Sync + 'static) -> Self {
        RunHandle {
            id,
            _alive: Box::new(alive),
        }
    }
}

/// What the agent needs of a place to keep its runs.
pub trait RunStore: Send + Sync {
    /// Records a new run as running, held by this process until the handle is dropped.
    fn start_run(
        &self,
        task: &str,
        model: Option<&str>,
        protocol: &str,
    ) -> Result<RunHandle, WorkspaceError>;

    /// Writes one completed step (again, if it was written before: the same index replaces).
    fn save_step(&self, run: &RunHandle, step: &StepRecord) -> Result<(), WorkspaceError>;

    /// Records how the run ended.
    fn finish_run(
        &self,
        run: &RunHandle,
        status: RunStatus,
        final_answer: Option<&str>,
        error: Option<&str>,
    ) -> Result<(), WorkspaceError>;

    /// Takes over an interrupted run to continue it: it is running again, under this process,
    /// and `model` (what writes the rest) is named in its record beside the one before.
    fn resume_run(
        &self,
        id: i64,
        model: Option<&str>,
    ) -> Result<(RunHandle, RunRecord), WorkspaceError>;

    /// Marks interrupted the runs still marked running whose process is gone. Returns their
    /// ids.
    fn interrupt_orphaned_runs(&self) -> Result<Vec<i64>, WorkspaceError>;

    /// The newest runs first, without their steps.
    fn runs(&self, limit: usize) -> Result<Vec<RunRecord>, WorkspaceError>;

    /// One run with its steps.
    fn run(&self, id: i64) -> Result<RunRecord, WorkspaceError>;
}

/// The lock held while a run is inserted and takes its own lock.
const STARTING: &str = "runs-starting";

fn lock_key(id: i64) -> String {
    format!("run-{id}")
}

impl RunStore for Workspace {
    /// Records a new run as running and takes its lock.
    fn start_run(
        &self,
        task: &str,
        model: Option<&str>,
        protocol: &str,
    ) -> Result<RunHandle, WorkspaceError> {
        // Another process could see the run between the insert and its lock, lock-free, and
        // take it for orphaned: both hold `runs-starting` meanwhile (a grace period of a few
        // seconds did this before, and a run killed in its first seconds read as running:
        // issue 17).
        let _starting = FileLock::acquire(self.db_path(), STARTING)?;
        let id = {
            let conn = self.conn();
            conn.execute(
                "INSERT INTO runs (task, model, protocol, status, started_at)
                 VALUES (?1, ?2, ?3, 'running', ?4)",
                params![task, model, protocol, now()],
            )
            .map_err(db_err("recording a run"))?;
            conn.last_insert_rowid()
        };
        let lock = FileLock::acquire(self.db_path(), &lock_key(id))?;
        Ok(RunHandle::new(id, lock))
    }

    fn save_step(&self, run: &RunHandle, step: &StepRecord) -> Result<(), WorkspaceError> {
        let json = serde_json::to_string(step)
            .map_err(|e| WorkspaceError::Refused(format!("a step could not be encoded: {e}")))?;
        self.conn()
            .execute(
                "INSERT OR REPLACE INTO steps (run_id, idx, record) VALUES (?1, ?2, ?3)",
                params![run.id, step.index as i64, json],
            )
            .map_err(db_err("saving a step"))?;
        Ok(())
    }

    fn finish_run(
        &self,
        run: &RunHandle,
        status: RunStatus,
        final_answer: Option<&str>,
        error: Option<&str>,
    ) -> Result<(), WorkspaceError> {
        self.conn()
            .execute(
                "UPDATE runs SET status = ?1, final_answer = ?2, error = ?3, ended_at = ?4
                 WHERE id = ?5",
                params![status.as_str(), final_answer, error, now(), run.id],
            )
            .map_err(db_err("finishing a run"))?;
        Ok(())
    }

    fn resume_run(
        &self,
        id: i64,
        model: Option<&str>,
    ) -> Result<(RunHandle, RunRecord), WorkspaceError> {
        let lock = FileLock::try_acquire(self.db_path(), &lock_key(id))?.ok_or_else(|| {
            WorkspaceError::Refused(format!("run {id} is still going in another process"))
        })?;
        let record = self.run(id)?;
        if !matches!(record.status, RunStatus::Interrupted | RunStatus::Running) {
            return Err(WorkspaceError::Refused(format!(
                "run {id} ended ({}); only an interrupted run can be continued",
                record.status.as_str()
            )));
        }
        // A run finished by another model said only the first one's name, in History and
        // `runs show` alike.
        let model = match (record.model.as_deref(), model) {
            (Some(before), Some(now))
                if before != now && !before.ends_with(&format!(", then {now}")) =>
            {
                Some(format!("{before}, then {now}"))
            }
            (before, now) => before.or(now).map(str::to_string),
        };
        self.conn()
            .execute(
                "UPDATE runs SET status = 'running', ended_at = NULL, model = ?2 WHERE id = ?1",
                params![id, model],
            )
            .map_err(db_err("resuming a run"))?;
        Ok((RunHandle::new(id, lock), RunRecord { model, ..record }))
    }

    /// Marks interrupted the runs still marked running whose process is gone (their lock is
    /// free). Returns their ids.
    fn interrupt_orphaned_runs(&self) -> Result<Vec<i64>, WorkspaceError> {
        // No run is between its insert and its lock while this is held (see `start_run`).
        let _starting = FileLock::acquire(self.db_path(), STARTING)?;
        let running: Vec<i64> = {
            let conn = self.conn();
            let mut st = conn
                .prepare("SELECT id FROM runs WHERE status = 'running'")
                .map_err(db_err("listing running runs"))?;
            let rows = st
                .query_map([], |r| r.get(0))
                .map_err(db_err("listing running runs"))?;
            rows.collect::<Result<_, _>>()
                .map_err(db_err("listing running runs"))?
        };
        let mut interrupted = Vec::new();
        for id in running {
            if let Some(_free) = FileLock::try_acquire(self.db_path(), &lock_key(id))? {
                self.conn()
                    .execute(
                        "UPDATE runs SET status = 'interrupted', ended_at = ?1
                         WHERE id = ?2 AND status = 'running'",
                        params![now(), id],
                    )
                    .map_err(db_err("marking a run interrupted"))?;
                interrupted.push(id);
            }
        }
        Ok(interrupted)
    }

    fn runs(&self, limit: usize) -> Result<Vec<RunRecord>, WorkspaceError> {
        let conn = self.conn();
        let mut st = conn
            .prepare(&format!(
                "SELECT {RUN_COLUMNS} FROM runs ORDER BY id DESC LIMIT ?1"
            ))
            .map_err(db_err("listing runs"))?;
        let rows = st
            .query_map([limit as i64], run_row)
            .map_err(db_err("listing runs"))?;
        rows.collect::<Result<_, _>>()
            .map_err(db_err("listing runs"))
    }

    fn run(&self, id: i64) -> Result<RunRecord, WorkspaceError> {
        let conn = self.conn();
        let mut run = conn
            .query_row(
                &format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = ?1"),
                [id],
                run_row,
            )
            .optional()
            .map_err(db_err("reading a run"))?
            .ok_or_else(|| WorkspaceError::NotFound(format!("there is no run {id}")))?;
        let mut st = conn
            .prepare("SELECT idx, record FROM steps WHERE run_id = ?1 ORDER BY idx")
            .map_err(db_err("reading steps"))?;
        let rows = st
            .query_map([id], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))
            .map_err(db_err("reading steps"))?;
        for row in rows {
            let (idx, json) = row.map_err(db_err("reading steps"))?;
            let step = StepRecord::from_kept_json(&json).map_err(|e| {
                WorkspaceError::Refused(format!("step {idx} of run {id} is not readable: {e}"))
            })?;
            run.steps.push(step);
        }
        Ok(run)
    }
}

/// The columns `run_row` reads, in its order.
const RUN_COLUMNS: &str =
    "id, task, model, protocol, status, final_answer, error, started_at, ended_at";

fn run_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<RunRecord> {
    let status: String = r.get(4)?;
    Ok(RunRecord {
        id: r.get(0)?,
        task: r.get(1)?,
        model: r.get(2)?,
        protocol: r.get(3)?,
        // A status this build does not know (written by a newer one) reads as an error.
        status: RunStatus::parse(&status).unwrap_or(RunStatus::Error),
        final_answer: r.get(5)?,
        error: r.get(6)?,
        started_at: r.get(7)?,
        ended_at: r.get(8)?,
        steps: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::record::ActionRecord;

    fn step(index: usize) -> StepRecord {
        StepRecord {
            index,
            prompt_tokens: 100 + index,
            cached_tokens: 90,
            output: format!("{{\"thought\": \"step {index}\"}}"),
            thought: format!("step {index}"),
            action: Some(ActionRecord {
                tool: "search".into(),
                args: serde_json::json!({"query": "crash"})
                    .as_object()
                    .cloned()
                    .unwrap(),
            }),
            observation: Some("3 results".into()),
            ttft_ms: 12.5,
            ..Default::default()
        }
    }

    #[test]
    fn runs_and_steps_are_kept_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::open_at(&dir.path().join("w.db")).unwrap();
        let run = ws
            .start_run("find the crash", Some("smollm2"), "json-action")
            .unwrap();
        ws.save_step(&run, &step(0)).unwrap();
        ws.save_step(&run, &step(1)).unwrap();
        ws.finish_run(&run, RunStatus::Succeeded, Some("#918"), None)
            .unwrap();
        let r = ws.run(run.id).unwrap();
        assert_eq!(r.status, RunStatus::Succeeded);
        assert_eq!(r.final_answer.as_deref(), Some("#918"));
        assert_eq!(r.steps, vec![step(0), step(1)]);
        assert!(r.ended_at.is_some());
        let listed = ws.runs(10).unwrap();
        assert_eq!(listed.len(), 1);
        assert!(listed[0].steps.is_empty());
        assert!(matches!(ws.run(99), Err(WorkspaceError::NotFound(_))));
        // An ended run cannot be taken over.
        let id = run.id;
        drop(run);
        let e = ws.resume_run(id, None).map(|_| ()).unwrap_err();
        assert!(e.to_string().contains("ended (succeeded)"), "{e}");
    }

    #[test]
    fn a_run_whose_process_died_is_interrupted_and_can_be_continued() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("w.db");
        let ws = Workspace::open_at(&db).unwrap();
        let alive = ws.start_run("still going", None, "text").unwrap();
        let dead = ws.start_run("killed", None, "text").unwrap();
        ws.save_step(&dead, &step(0)).unwrap();
        let dead_id = dead.id;
        // The process running it is gone: its lock is released.
        drop(dead);
        // Old enough to be judged.
        ws.conn()
            .execute("UPDATE runs SET started_at = started_at - 60", [])
            .unwrap();

        let other = Workspace::open_at(&db).unwrap();
        assert_eq!(other.interrupt_orphaned_runs().unwrap(), vec![dead_id]);
        assert_eq!(other.run(alive.id).unwrap().status, RunStatus::Running);
        assert_eq!(other.run(dead_id).unwrap().status, RunStatus::Interrupted);
        assert!(
            other.resume_run(alive.id, None).is_err(),
            "a live run is not taken over"
        );

        let (resumed, record) = other.resume_run(dead_id, None).unwrap();
        assert_eq!(record.steps, vec![step(0)]);
        assert_eq!(other.run(dead_id).unwrap().status, RunStatus::Running);
        other.save_step(&resumed, &step(1)).unwrap();
        assert_eq!(other.run(dead_id).unwrap().steps.len(), 2);
        // Now held again: not interrupted a second time.
        assert!(other.interrupt_orphaned_runs().unwrap().is_empty());
    }
}
