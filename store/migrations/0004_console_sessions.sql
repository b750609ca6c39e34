-- Console sessions ended by a logout before they expire (cmd/copierd/console). A session
-- cookie whose id is listed is refused by every process that serves the console; a row is
-- deleted once its cookie would have expired anyway.
CREATE TABLE console_revoked_sessions (
    session_id text        PRIMARY KEY,
    expires_at timestamptz NOT NULL
);
