"""The store's SQL schema, as migrations: entry N takes a database from version N-1 to N.

`PRAGMA user_version` records which version a SQLite file is at. Statements are separated by `;`
and applied one by one inside a single write transaction.
"""

#: Each entry moves the schema one version up; `PRAGMA user_version` records where a file is.
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE incidents (
        id INTEGER PRIMARY KEY,
        group_key TEXT NOT NULL,
        generation INTEGER NOT NULL,
        channel TEXT NOT NULL,
        channel_id TEXT,
        parent_ts TEXT,
        status TEXT NOT NULL,
        group_json TEXT NOT NULL,
        started_at TEXT NOT NULL,
        resolved_at TEXT,
        fired_count INTEGER NOT NULL DEFAULT 1,
        previous_id INTEGER REFERENCES incidents(id),
        previous_link TEXT,
        version INTEGER NOT NULL DEFAULT 1,
        parent_version INTEGER NOT NULL DEFAULT 0,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        UNIQUE (group_key, generation)
    );
    CREATE TABLE notifications (
        id INTEGER PRIMARY KEY,
        group_key TEXT NOT NULL,
        received_at TEXT NOT NULL,
        body TEXT NOT NULL,
        outcome TEXT NOT NULL,
        incident_id INTEGER REFERENCES incidents(id)
    );
    CREATE TABLE outbox (
        id INTEGER PRIMARY KEY,
        incident_id INTEGER NOT NULL REFERENCES incidents(id),
        kind TEXT NOT NULL,
        payload TEXT NOT NULL DEFAULT '',
        state TEXT NOT NULL DEFAULT 'pending',
        attempts INTEGER NOT NULL DEFAULT 0,
        not_before REAL NOT NULL DEFAULT 0,
        lease_owner TEXT,
        lease_until REAL,
        last_error TEXT,
        created_at REAL NOT NULL,
        done_at REAL
    );
    CREATE INDEX outbox_pending ON outbox (incident_id, id) WHERE state = 'pending';
    """,
    """
    ALTER TABLE incidents ADD COLUMN silence_json TEXT;
    ALTER TABLE outbox ADD COLUMN sent_at REAL;
    ALTER TABLE notifications ADD COLUMN content_key TEXT;
    CREATE TABLE digests (
        id INTEGER PRIMARY KEY,
        channel TEXT NOT NULL,
        channel_id TEXT,
        ts TEXT,
        opened_at TEXT NOT NULL,
        last_joined_at TEXT NOT NULL,
        version INTEGER NOT NULL DEFAULT 1,
        shown_version INTEGER NOT NULL DEFAULT 0,
        pages_json TEXT NOT NULL DEFAULT '[]'
    );
    ALTER TABLE incidents ADD COLUMN digest_id INTEGER REFERENCES digests(id);
    CREATE INDEX notifications_content ON notifications (group_key, content_key);
    CREATE TABLE claims (
        incident_id INTEGER NOT NULL REFERENCES incidents(id),
        purpose TEXT NOT NULL,
        owner TEXT NOT NULL,
        until REAL NOT NULL,
        PRIMARY KEY (incident_id, purpose)
    );
    CREATE INDEX incidents_silenced ON incidents (id)
        WHERE silence_json IS NOT NULL AND status = 'firing';
    """,
    """
    ALTER TABLE incidents ADD COLUMN permalink TEXT;
    ALTER TABLE digests ADD COLUMN permalink TEXT;
    ALTER TABLE outbox ADD COLUMN posted_ts TEXT;
    CREATE TABLE diagnoses (
        id INTEGER PRIMARY KEY,
        incident_id INTEGER NOT NULL REFERENCES incidents(id),
        note_id INTEGER NOT NULL REFERENCES outbox(id),
        requested_at REAL NOT NULL,
        finished_at REAL
    );
    CREATE INDEX diagnoses_unfinished ON diagnoses (id) WHERE finished_at IS NULL;
    """,
    """
    CREATE TABLE store_identity (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        store_id TEXT NOT NULL,
        checked_at REAL
    );
    CREATE TABLE seen_requests (
        key TEXT PRIMARY KEY,
        expires_at REAL NOT NULL
    ) WITHOUT ROWID;
    CREATE INDEX seen_requests_expiry ON seen_requests (expires_at);
    CREATE TABLE notification_bodies (
        sha256 TEXT PRIMARY KEY,
        deflated BLOB NOT NULL
    ) WITHOUT ROWID;
    ALTER TABLE notifications ADD COLUMN body_sha256 TEXT;
    CREATE INDEX notifications_received ON notifications (received_at);
    CREATE INDEX notifications_incident ON notifications (incident_id);
    CREATE INDEX notifications_body ON notifications (body_sha256);
    CREATE INDEX incidents_resolved ON incidents (resolved_at) WHERE status = 'resolved';
    CREATE INDEX incidents_previous ON incidents (previous_id);
    CREATE INDEX incidents_digest ON incidents (digest_id);
    CREATE INDEX outbox_finished ON outbox (done_at) WHERE state != 'pending';
    CREATE INDEX outbox_incident ON outbox (incident_id);
    CREATE INDEX diagnoses_incident ON diagnoses (incident_id);
    CREATE INDEX diagnoses_note ON diagnoses (note_id)
    """,
    """
    CREATE TABLE jobs (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL,
        run_attempt INTEGER NOT NULL,
        repository TEXT NOT NULL,
        workflow TEXT NOT NULL,
        job TEXT NOT NULL,
        labels TEXT NOT NULL,
        runner_type TEXT NOT NULL,
        html_url TEXT,
        head_branch TEXT,
        status TEXT NOT NULL,
        created_at REAL NOT NULL,
        started_at REAL,
        completed_at REAL,
        left_queue_at REAL,
        conclusion TEXT,
        runner_name TEXT,
        updated_at REAL NOT NULL
    );
    CREATE INDEX jobs_created ON jobs (created_at);
    CREATE INDEX jobs_started ON jobs (started_at) WHERE started_at IS NOT NULL;
    CREATE INDEX jobs_completed ON jobs (completed_at) WHERE completed_at IS NOT NULL;
    CREATE INDEX jobs_in_queue ON jobs (created_at) WHERE left_queue_at IS NULL;
    CREATE INDEX jobs_long_waits ON jobs (created_at) WHERE left_queue_at - created_at >= 3600
    """,
    """
    CREATE TABLE channel_pace (
        channel TEXT PRIMARY KEY,
        tokens REAL NOT NULL,
        at REAL NOT NULL
    );
    CREATE TABLE channel_openings (
        channel TEXT NOT NULL,
        at REAL NOT NULL
    );
    CREATE INDEX channel_openings_at ON channel_openings (channel, at);
    CREATE TABLE leader_leases (
        role TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        until REAL NOT NULL
    )
    """,
    """
    ALTER TABLE digests ADD COLUMN editor TEXT
    """,
    """
    CREATE TABLE heads_ups (
        channel TEXT NOT NULL,
        runner_type TEXT NOT NULL,
        started_at REAL NOT NULL,
        phase TEXT NOT NULL,
        view_json TEXT NOT NULL,
        updated_at REAL NOT NULL,
        ended_at REAL,
        version INTEGER NOT NULL DEFAULT 1,
        shown_version INTEGER NOT NULL DEFAULT 0,
        channel_id TEXT,
        ts TEXT,
        PRIMARY KEY (channel, runner_type, started_at)
    );
    CREATE INDEX heads_ups_recent ON heads_ups (channel, updated_at);
    CREATE INDEX heads_ups_unshown ON heads_ups (updated_at) WHERE shown_version < version
    """,
    """
    CREATE TABLE reports (
        slot TEXT PRIMARY KEY,
        channel TEXT NOT NULL,
        due_at REAL NOT NULL,
        view_json TEXT NOT NULL,
        chart BLOB,
        created_at REAL NOT NULL,
        sent_at REAL,
        channel_id TEXT,
        ts TEXT
    );
    CREATE INDEX reports_unposted ON reports (due_at) WHERE ts IS NULL
    """,
    # Retention forgets a job by when it was last recorded too (a job "created" in the year
    # 9999 by a bad delivery would otherwise stay for good).
    """
    CREATE INDEX jobs_recorded ON jobs (updated_at)
    """,
    # A notification's body is kept in notification_bodies since step 4; the column it had
    # before is read by nothing, and PostgreSQL's table never had it.
    """
    ALTER TABLE notifications DROP COLUMN body
    """,
)
