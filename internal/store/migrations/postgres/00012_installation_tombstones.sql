-- +goose Up
-- A deleted installation leaves a tombstone, so that an older installation
-- or installation_repositories event delivered (or redelivered) after the
-- deletion does not bring it back (app/installations.go). updated_at is the
-- installation's updated_at in the deleted payload (GitHub's clock; the
-- delivery's received time when the payload has none): an event for this
-- installation is applied only if its installation.updated_at is later.
-- GitHub gives a reinstallation a new id, so in practice a tombstone stays.
CREATE TABLE installation_tombstones (
    id         BIGINT PRIMARY KEY,
    deleted_at BIGINT NOT NULL,     -- unix microseconds, delivery received
    updated_at BIGINT NOT NULL     -- unix microseconds, see above
);

-- +goose Down
DROP TABLE installation_tombstones;
