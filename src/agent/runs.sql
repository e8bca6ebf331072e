-- The agent's runs and their steps, each step written as it completes (agent/store.rs).
-- Applied as the workspace database's migration 3: migrations stay append-only, one
-- sequence keyed on `user_version`, and these statements must not change once released.
    CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        task TEXT NOT NULL,
        model TEXT,
        protocol TEXT NOT NULL,
        -- running, succeeded, failed, blocked, cancelled, max_steps, error, interrupted
        status TEXT NOT NULL,
        final_answer TEXT,
        error TEXT,
        started_at INTEGER NOT NULL,
        ended_at INTEGER
    );
    CREATE INDEX runs_status ON runs (status);
    CREATE TABLE steps (
        run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        idx INTEGER NOT NULL,
        -- The step record as JSON (agent/record.rs): it grows fields without migrations.
        record TEXT NOT NULL,
        PRIMARY KEY (run_id, idx)
    ) WITHOUT ROWID;
    