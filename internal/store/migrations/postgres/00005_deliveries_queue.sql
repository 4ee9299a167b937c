-- +goose Up
-- The drain reads the oldest deliveries never attempted; this index holds
-- exactly those rows, so the read does not grow with the processed history.
CREATE INDEX deliveries_to_drain ON deliveries (received_at, id) WHERE state = 'queued' AND attempts = 0;

-- +goose Down
DROP INDEX deliveries_to_drain;
