//! The schema's migrations, in order: each entry is the SQL that takes the database from
//! `user_version` N to N + 1. Released entries never change; a change is a new entry.

/// The schema, one migration per entry; `user_version` is the number applied.
pub(super) const MIGRATIONS: &[&str] = &[
    // 1: repositories, files, commits, issues and pull requests, and the search index.
    r#"
    CREATE TABLE repos (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        -- Absolute path of a local checkout; NULL for a repository known only by imports.
        root TEXT UNIQUE,
        is_git INTEGER NOT NULL DEFAULT 0,
        -- owner/name, for imported issues and pull requests.
        remote TEXT UNIQUE,
        added_at INTEGER NOT NULL,
        indexed_at INTEGER,
        head TEXT,
        status TEXT NOT NULL DEFAULT 'new',
        error TEXT
    );

    CREATE TABLE files (
        id INTEGER PRIMARY KEY,
        repo_id INTEGER NOT NULL REFERENCES repos(id) ON DELETE CASCADE,
        path TEXT NOT NULL,
        language TEXT,
        size INTEGER NOT NULL,
        mtime_ns INTEGER NOT NULL,
        hash TEXT NOT NULL,
        lines INTEGER NOT NULL,
        UNIQUE (repo_id, path)
    );

    -- Files seen but not indexed, and why (binary, too large, unreadable, not UTF-8).
    CREATE TABLE skipped_files (
        repo_id INTEGER NOT NULL REFERENCES repos(id) ON DELETE CASCADE,
        path TEXT NOT NULL,
        reason TEXT NOT NULL,
        PRIMARY KEY (repo_id, path)
    );

    CREATE TABLE commits (
        id INTEGER PRIMARY KEY,
        repo_id INTEGER NOT NULL REFERENCES repos(id) ON DELETE CASCADE,
        hash TEXT NOT NULL,
        author_name TEXT NOT NULL,
        author_email TEXT NOT NULL,
        time INTEGER NOT NULL,
        summary TEXT NOT NULL,
        message TEXT NOT NULL,
        parents TEXT NOT NULL,
        UNIQUE (repo_id, hash)
    );
    CREATE INDEX commits_time ON commits (repo_id, time);
    CREATE INDEX commits_author ON commits (repo_id, author_email);

    CREATE TABLE commit_files (
        commit_id INTEGER NOT NULL REFERENCES commits(id) ON DELETE CASCADE,
        path TEXT NOT NULL,
        change TEXT NOT NULL,
        additions INTEGER NOT NULL,
        deletions INTEGER NOT NULL
    );
    CREATE INDEX commit_files_commit ON commit_files (commit_id);
    CREATE INDEX commit_files_path ON commit_files (path);

    CREATE TABLE refs (
        repo_id INTEGER NOT NULL REFERENCES repos(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        kind TEXT NOT NULL,
        target TEXT NOT NULL,
        PRIMARY KEY (repo_id, name)
    );

    -- Issues and pull requests (is_pr); GitHub numbers them in one sequence per repository.
    CREATE TABLE issues (
        id INTEGER PRIMARY KEY,
        repo_id INTEGER NOT NULL REFERENCES repos(id) ON DELETE CASCADE,
        number INTEGER NOT NULL,
        is_pr INTEGER NOT NULL,
        title TEXT NOT NULL,
        body TEXT NOT NULL,
        state TEXT NOT NULL,
        author TEXT NOT NULL,
        labels TEXT NOT NULL,
        created_at INTEGER,
        updated_at INTEGER,
        closed_at INTEGER,
        merged_at INTEGER,
        url TEXT,
        base_ref TEXT,
        head_ref TEXT,
        draft INTEGER NOT NULL DEFAULT 0,
        UNIQUE (repo_id, number)
    );

    -- Comments on issues and pull requests, reviews, and review comments on the diff.
    CREATE TABLE comments (
        id INTEGER PRIMARY KEY,
        issue_id INTEGER NOT NULL REFERENCES issues(id) ON DELETE CASCADE,
        kind TEXT NOT NULL,
        external_id TEXT NOT NULL,
        author TEXT NOT NULL,
        body TEXT NOT NULL,
        created_at INTEGER,
        path TEXT,
        line INTEGER,
        diff_hunk TEXT,
        review_state TEXT,
        UNIQUE (issue_id, kind, external_id)
    );
    CREATE INDEX comments_issue ON comments (issue_id, created_at);

    -- Everything searchable, one row per unit: a chunk of a source file, a section of a document,
    -- a commit, an issue or pull request, or one of their comments. `source` and `source_id`
    -- point at the row the unit was made from, so re-indexing it replaces its units.
    CREATE TABLE docs (
        id INTEGER PRIMARY KEY,
        repo_id INTEGER NOT NULL REFERENCES repos(id) ON DELETE CASCADE,
        kind TEXT NOT NULL,
        source TEXT NOT NULL,
        source_id INTEGER NOT NULL,
        path TEXT,
        line INTEGER,
        number INTEGER,
        comment_id INTEGER,
        hash TEXT,
        state TEXT,
        author TEXT,
        labels TEXT,
        time INTEGER,
        title TEXT NOT NULL,
        body TEXT NOT NULL,
        terms TEXT NOT NULL
    );
    CREATE INDEX docs_source ON docs (source, source_id);
    CREATE INDEX docs_repo_kind ON docs (repo_id, kind);

    CREATE VIRTUAL TABLE docs_fts USING fts5(
        title, body, terms,
        content = 'docs', content_rowid = 'id',
        tokenize = 'porter unicode61 remove_diacritics 2'
    );
    CREATE TRIGGER docs_ai AFTER INSERT ON docs BEGIN
        INSERT INTO docs_fts (rowid, title, body, terms) VALUES (new.id, new.title, new.body, new.terms);
    END;
    CREATE TRIGGER docs_ad AFTER DELETE ON docs BEGIN
        INSERT INTO docs_fts (docs_fts, rowid, title, body, terms)
        VALUES ('delete', old.id, old.title, old.body, old.terms);
    END;
    CREATE TRIGGER docs_au AFTER UPDATE ON docs BEGIN
        INSERT INTO docs_fts (docs_fts, rowid, title, body, terms)
        VALUES ('delete', old.id, old.title, old.body, old.terms);
        INSERT INTO docs_fts (rowid, title, body, terms) VALUES (new.id, new.title, new.body, new.terms);
    END;
    "#,
    // 2: the filters move into the full-text index. Repository, kind, state, author and labels
    // become tokens of a `facets` column, so a filtered search intersects posting lists instead
    // of joining every match to `docs` and discarding most of them. A value is spelled as the
    // hex of its lowercase bytes with A and E written Q and Z: that alphabet (digits, b c d f q
    // z) has no vowel, `s`, `l` or `y`, so the porter stemmer the index runs leaves every such
    // token as it is. `facet_token` in search/query.rs spells them the same way. The index keeps no
    // content: search reads the text from `docs` (FTS5 cannot read an external content that
    // needs json_each, and nothing needs FTS5's own copy).
    r#"
    DROP TRIGGER docs_ai;
    DROP TRIGGER docs_ad;
    DROP TRIGGER docs_au;
    DROP TABLE docs_fts;
    CREATE VIEW docs_fts_source AS
    SELECT id, title, body, terms,
        'k' || replace(replace(hex(lower(kind)), 'A', 'Q'), 'E', 'Z')
        || ' r' || repo_id
        || CASE WHEN coalesce(state, '') <> ''
            THEN ' t' || replace(replace(hex(lower(state)), 'A', 'Q'), 'E', 'Z') ELSE '' END
        || CASE WHEN coalesce(author, '') <> ''
            THEN ' h' || replace(replace(hex(lower(author)), 'A', 'Q'), 'E', 'Z') ELSE '' END
        || CASE WHEN json_valid(labels) THEN coalesce((
            SELECT ' ' || group_concat('g' || replace(replace(hex(lower(value)), 'A', 'Q'), 'E', 'Z'), ' ')
            FROM json_each(labels) WHERE type = 'text' AND value <> ''), '') ELSE '' END
        AS facets
    FROM docs;
    CREATE VIRTUAL TABLE docs_fts USING fts5(
        title, body, terms, facets,
        content = '', contentless_delete = 1,
        tokenize = 'porter unicode61 remove_diacritics 2'
    );
    CREATE TRIGGER docs_ai AFTER INSERT ON docs BEGIN
        INSERT INTO docs_fts (rowid, title, body, terms, facets)
        SELECT id, title, body, terms, facets FROM docs_fts_source WHERE id = new.id;
    END;
    CREATE TRIGGER docs_ad AFTER DELETE ON docs BEGIN
        DELETE FROM docs_fts WHERE rowid = old.id;
    END;
    CREATE TRIGGER docs_au AFTER UPDATE ON docs BEGIN
        DELETE FROM docs_fts WHERE rowid = old.id;
        INSERT INTO docs_fts (rowid, title, body, terms, facets)
        SELECT id, title, body, terms, facets FROM docs_fts_source WHERE id = new.id;
    END;
    INSERT INTO docs_fts (rowid, title, body, terms, facets)
    SELECT id, title, body, terms, facets FROM docs_fts_source;
    -- How many rows hold each term: search weighs words by it (see rank.rs).
    CREATE VIRTUAL TABLE docs_vocab USING fts5vocab(docs_fts, 'row');
    "#,
    // 3: agent runs and their steps. The agent owns these tables (agent/store.rs); their
    // schema is kept beside that code and included here, as the one sequence of migrations
    // needs every part in order.
    include_str!("../../agent/runs.sql"),
    // 4: search by meaning. A vector per searchable unit (`docs` row), kept by the hash of the
    // text it was made from, so a unit re-indexed with the same text keeps its vector and the
    // same text in two units is embedded once. `embedding_model` names the model the vectors
    // came from: another model's vectors are never compared with them (its change clears them).
    r#"
    CREATE TABLE embedding_model (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        name TEXT NOT NULL,
        dimension INTEGER NOT NULL,
        -- Counts the passes that changed the vectors, so searches know to reload them.
        generation INTEGER NOT NULL DEFAULT 0
    );
    CREATE TABLE vectors (
        hash BLOB PRIMARY KEY,
        -- `dimension` little-endian f32, unit length.
        vec BLOB NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE doc_vectors (
        doc_id INTEGER PRIMARY KEY REFERENCES docs(id) ON DELETE CASCADE,
        hash BLOB NOT NULL
    );
    CREATE INDEX doc_vectors_hash ON doc_vectors (hash);
    -- Which pull request fixed which issue, where the data says so: the pull request's text
    -- says "fixes #N" (or closes, resolves), or the issue was closed by its merge commit.
    ALTER TABLE issues ADD COLUMN merge_commit TEXT;
    ALTER TABLE issues ADD COLUMN closed_by TEXT;
    CREATE TABLE links (
        repo_id INTEGER NOT NULL REFERENCES repos(id) ON DELETE CASCADE,
        issue INTEGER NOT NULL,
        pr INTEGER NOT NULL,
        -- 'fixes' (the pull request says so) or 'merge' (its merge commit closed the issue).
        how TEXT NOT NULL,
        PRIMARY KEY (repo_id, issue, pr, how)
    );
    CREATE INDEX links_pr ON links (repo_id, pr);
    CREATE INDEX issues_merge_commit ON issues (repo_id, merge_commit)
        WHERE merge_commit IS NOT NULL;
    -- A linked pull request's unit, found by number (search, for each issue it ranks).
    CREATE INDEX docs_number ON docs (repo_id, number) WHERE number IS NOT NULL;
    "#,
    // 5: a counter of changes to the vectors, kept by triggers, so a search knows whether the
    // vectors it holds in memory are current from one row. It counted and summed every
    // `doc_vectors` row, up to four times a search: 5-10 ms over a 100,000-issue import.
    r#"
    CREATE TABLE vector_changes (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        n INTEGER NOT NULL
    );
    INSERT INTO vector_changes (id, n) VALUES (1, 0);
    CREATE TRIGGER doc_vectors_changes_ai AFTER INSERT ON doc_vectors BEGIN
        UPDATE vector_changes SET n = n + 1 WHERE id = 1;
    END;
    CREATE TRIGGER doc_vectors_changes_ad AFTER DELETE ON doc_vectors BEGIN
        UPDATE vector_changes SET n = n + 1 WHERE id = 1;
    END;
    CREATE TRIGGER doc_vectors_changes_au AFTER UPDATE ON doc_vectors BEGIN
        UPDATE vector_changes SET n = n + 1 WHERE id = 1;
    END;
    CREATE TRIGGER embedding_model_changes_ai AFTER INSERT ON embedding_model BEGIN
        UPDATE vector_changes SET n = n + 1 WHERE id = 1;
    END;
    CREATE TRIGGER embedding_model_changes_ad AFTER DELETE ON embedding_model BEGIN
        UPDATE vector_changes SET n = n + 1 WHERE id = 1;
    END;
    CREATE TRIGGER embedding_model_changes_au AFTER UPDATE ON embedding_model BEGIN
        UPDATE vector_changes SET n = n + 1 WHERE id = 1;
    END;
    "#,
    // 6: a counter of changes to the searchable units, kept by triggers. Search keeps the row
    // counts of the words and kinds it ranks by while the units are unchanged; it took any
    // commit (the vectors an embedding pass writes, each step of an agent run) for a change
    // of the units and counted again (a kind of 100,000 issues: about 15 ms a search).
    r#"
    CREATE TABLE docs_changes (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        n INTEGER NOT NULL
    );
    INSERT INTO docs_changes (id, n) VALUES (1, 0);
    CREATE TRIGGER docs_changes_ai AFTER INSERT ON docs BEGIN
        UPDATE docs_changes SET n = n + 1 WHERE id = 1;
    END;
    CREATE TRIGGER docs_changes_ad AFTER DELETE ON docs BEGIN
        UPDATE docs_changes SET n = n + 1 WHERE id = 1;
    END;
    CREATE TRIGGER docs_changes_au AFTER UPDATE ON docs BEGIN
        UPDATE docs_changes SET n = n + 1 WHERE id = 1;
    END;
    "#,
    // 7: a code file in several units gains one more, its outline (`text::outline_unit`), so
    // every file is cut again at the next index, as if changed. Its parts keep their vectors
    // (kept by their text's hash): an embedding pass gives the outlines theirs.
    r#"
    UPDATE files SET mtime_ns = -1, hash = '';
    "#,
    // 8: what a code unit is of its file (`text::Role`: 0 a part, 1 its outline, 2 a file of
    // one unit) is stored by the indexer, where it was read back from titles (an outline's
    // title differs from its path) and sibling rows in three places. Rows indexed before are
    // given theirs by that rule, once. Only the outlines and whole files are updated (about
    // one row a file): every row updated is taken out of the words index and put back by
    // `docs_au`, and the parts keep 0.
    r#"
    ALTER TABLE docs ADD COLUMN role INTEGER NOT NULL DEFAULT 0;
    UPDATE docs SET role = CASE WHEN title <> path THEN 1 ELSE 2 END
    WHERE kind = 'code' AND (title <> path OR NOT EXISTS (SELECT 1 FROM docs o
        WHERE o.source = docs.source AND o.source_id = docs.source_id AND o.id <> docs.id));
    "#,
    // 9: the abbreviations each unit defines ("Byte-Order Mark (BOM)"), so that a search for
    // one finds the other, read once per change to the units rather than looked for in the
    // text at each query. Kept with the units by triggers (`burrow_abbreviations`); the units
    // indexed before get theirs here.
    r#"
    CREATE TABLE abbreviations (
        doc_id INTEGER NOT NULL,
        abbr TEXT NOT NULL,
        long TEXT NOT NULL
    );
    CREATE INDEX abbreviations_doc ON abbreviations (doc_id);
    CREATE TRIGGER abbreviations_ai AFTER INSERT ON docs BEGIN
        INSERT INTO abbreviations (doc_id, abbr, long)
        SELECT new.id, value ->> 0, value ->> 1
        FROM json_each(burrow_abbreviations(new.title, new.body));
    END;
    CREATE TRIGGER abbreviations_ad AFTER DELETE ON docs BEGIN
        DELETE FROM abbreviations WHERE doc_id = old.id;
    END;
    CREATE TRIGGER abbreviations_au AFTER UPDATE OF title, body ON docs BEGIN
        DELETE FROM abbreviations WHERE doc_id = old.id;
        INSERT INTO abbreviations (doc_id, abbr, long)
        SELECT new.id, value ->> 0, value ->> 1
        FROM json_each(burrow_abbreviations(new.title, new.body));
    END;
    INSERT INTO abbreviations (doc_id, abbr, long)
    SELECT d.id, j.value ->> 0, j.value ->> 1
    FROM docs d, json_each(burrow_abbreviations(d.title, d.body)) j;
    "#,
    // 10: what the embedding model's file holds (`Embedder::fingerprint`), beside its name:
    // another file of the same name (llama.cpp's default `ggml-model-f16.gguf`, a file
    // replaced in place) passed for the model the vectors came from. Vectors kept from before
    // have none; the next pass of that name records its own.
    r#"
    ALTER TABLE embedding_model ADD COLUMN fingerprint TEXT;
    "#,
    // 11: a pass of another model writes here until it has a vector for every unit, then
    // takes the place of the vectors above in one transaction: switching models cleared them
    // first, and a pass stopped half way (Ctrl-C, a crash) left neither model's set whole.
    r#"
    CREATE TABLE next_embedding_model (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        name TEXT NOT NULL,
        dimension INTEGER NOT NULL,
        fingerprint TEXT
    );
    CREATE TABLE next_vectors (
        hash BLOB PRIMARY KEY,
        vec BLOB NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE next_doc_vectors (
        doc_id INTEGER PRIMARY KEY REFERENCES docs(id) ON DELETE CASCADE,
        hash BLOB NOT NULL
    );
    "#,
    // 12: how many rows hold each term in each column, so that search can tell a name written
    // as one word in the text (`.agignore`, `-debuglogfile`) from the joined form of an
    // identifier's parts the index adds to the `terms` column (`compressed_gzip`), whose
    // parts match already (`search::compound`).
    r#"
    CREATE VIRTUAL TABLE docs_vocab_col USING fts5vocab(docs_fts, 'col');
    "#,
    // 13: a commit is searched by the lines it changed as well as by its message (a second
    // unit, `text::Role::Changes`). The commits indexed before have none yet: the next index
    // of their repository reads them (`changes_read`), and their messages stay searchable
    // meanwhile.
    // The lines hold the abbreviations of files as they were ("Byte-Order Mark (BOM)" in a
    // line a commit removed), and the workspace defines only what its text does now: those
    // units define none.
    r#"
    ALTER TABLE commits ADD COLUMN changes_read INTEGER NOT NULL DEFAULT 0;
    DROP TRIGGER abbreviations_ai;
    DROP TRIGGER abbreviations_au;
    CREATE TRIGGER abbreviations_ai AFTER INSERT ON docs WHEN new.role <> 3 BEGIN
        INSERT INTO abbreviations (doc_id, abbr, long)
        SELECT new.id, value ->> 0, value ->> 1
        FROM json_each(burrow_abbreviations(new.title, new.body));
    END;
    CREATE TRIGGER abbreviations_au AFTER UPDATE OF title, body ON docs BEGIN
        DELETE FROM abbreviations WHERE doc_id = old.id;
        INSERT INTO abbreviations (doc_id, abbr, long)
        SELECT new.id, value ->> 0, value ->> 1
        FROM json_each(burrow_abbreviations(new.title, new.body))
        WHERE new.role <> 3;
    END;
    "#,
    // 14: who merged a pull request and why an issue was closed, for the filters and counts
    // the agent's tools offer ("merged by", "closed as not planned"). Items imported before
    // have neither until they are imported again.
    r#"
    ALTER TABLE issues ADD COLUMN merged_by TEXT;
    ALTER TABLE issues ADD COLUMN state_reason TEXT;
    "#,
];
