-- +goose Up
-- Payloads move to a table of their own. SQLite rewrites a whole row on
-- UPDATE, so each change of a delivery's state (claimed, processed, failed)
-- wrote its 12 KB body to the WAL again; now a body is written once. The
-- body is keyed by seq, the delivery's storage order (an INTEGER PRIMARY
-- KEY, so it is the row's own key and survives VACUUM): new bodies append
-- at the end of their b-tree instead of landing at random places as a key
-- by delivery id (a GUID) would.
-- deliveries_repository is not recreated: no query reads deliveries by
-- repository, and each delivery paid for one more index entry.
CREATE TABLE deliveries_v9 (
    seq             INTEGER PRIMARY KEY,
    id              TEXT NOT NULL UNIQUE,        -- X-GitHub-Delivery
    event           TEXT NOT NULL,
    action          TEXT NOT NULL DEFAULT '',
    installation_id INTEGER NOT NULL DEFAULT 0,
    repository      TEXT NOT NULL DEFAULT '',
    received_at     INTEGER NOT NULL,            -- unix microseconds
    state           TEXT NOT NULL DEFAULT 'queued',
    attempts        INTEGER NOT NULL DEFAULT 0,
    last_error      TEXT NOT NULL DEFAULT '',
    processed_at    INTEGER,
    processed_count INTEGER NOT NULL DEFAULT 0   -- how many times work completed; 1 is the only right answer
);
CREATE TABLE delivery_bodies (
    seq  INTEGER PRIMARY KEY,                    -- deliveries.seq
    body BLOB NOT NULL
);
INSERT INTO deliveries_v9 (seq, id, event, action, installation_id, repository, received_at, state, attempts,
    last_error, processed_at, processed_count)
SELECT rowid, id, event, action, installation_id, repository, received_at, state, attempts,
    last_error, processed_at, processed_count FROM deliveries ORDER BY rowid;
INSERT INTO delivery_bodies (seq, body) SELECT rowid, body FROM deliveries ORDER BY rowid;
DROP TABLE deliveries;
ALTER TABLE deliveries_v9 RENAME TO deliveries;
CREATE INDEX deliveries_received_at ON deliveries (received_at DESC, id);
CREATE INDEX deliveries_to_drain ON deliveries (received_at, id) WHERE state = 'queued' AND attempts = 0;

-- +goose Down
CREATE TABLE deliveries_v8 (
    id              TEXT PRIMARY KEY,
    event           TEXT NOT NULL,
    action          TEXT NOT NULL DEFAULT '',
    installation_id INTEGER NOT NULL DEFAULT 0,
    repository      TEXT NOT NULL DEFAULT '',
    body            BLOB NOT NULL,
    received_at     INTEGER NOT NULL,
    state           TEXT NOT NULL DEFAULT 'queued',
    attempts        INTEGER NOT NULL DEFAULT 0,
    last_error      TEXT NOT NULL DEFAULT '',
    processed_at    INTEGER,
    processed_count INTEGER NOT NULL DEFAULT 0
);
INSERT INTO deliveries_v8 (id, event, action, installation_id, repository, body, received_at, state, attempts,
    last_error, processed_at, processed_count)
SELECT d.id, d.event, d.action, d.installation_id, d.repository, b.body, d.received_at, d.state, d.attempts,
    d.last_error, d.processed_at, d.processed_count FROM deliveries d JOIN delivery_bodies b ON b.seq = d.seq ORDER BY d.seq;
DROP TABLE delivery_bodies;
DROP TABLE deliveries;
ALTER TABLE deliveries_v8 RENAME TO deliveries;
CREATE INDEX deliveries_received_at ON deliveries (received_at DESC, id);
CREATE INDEX deliveries_repository ON deliveries (repository, received_at DESC);
CREATE INDEX deliveries_to_drain ON deliveries (received_at, id) WHERE state = 'queued' AND attempts = 0;
