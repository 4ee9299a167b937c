-- +goose Up
-- The index that lists deliveries newest first was (received_at DESC, id):
-- every new delivery went to its first leaf, and a b-tree that grows on its
-- left splits its pages in half and rebalances the first leaves again and
-- again, so nearly every group commit of the intake wrote three of its
-- leaves and two of its inner pages (WAL of a loaded server, PERFORMANCE.md).
-- Ascending, new deliveries go to its last leaf, the way both databases
-- grow an index cheaply; read backwards it gives received_at DESC, id DESC,
-- the list's order (the old one, id ascending within a received_at, did
-- not match it), and forwards the sweep's (received_at, id).
DROP INDEX deliveries_received_at;
CREATE INDEX deliveries_received_at ON deliveries (received_at, id);

-- +goose Down
DROP INDEX deliveries_received_at;
CREATE INDEX deliveries_received_at ON deliveries (received_at DESC, id);
