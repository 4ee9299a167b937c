-- +goose Up
-- An observation's key names its source, the kind of workload
-- (cluster/namespace/source/name, records.Fact.WorkloadKey): a Deployment
-- and an Argo Rollout of one name in one namespace are two workloads, and
-- under cluster/namespace/name their facts overwrote each other's
-- observation. Every observation that knows its source (migration 15 gave
-- it one where a kept fact told) moves to its new key; one that does not
-- stays under its old key, where the next fact of a workload of that name
-- finds it and replaces it with its own.
UPDATE observations
SET key = (body->>'cluster') || '/' || (body->>'namespace') || '/' || (body->>'source') || '/' || (body->>'name')
WHERE coalesce(body->>'source', '') <> '';

-- +goose Down
-- Back to one observation per cluster/namespace/name: where a Deployment
-- and a Rollout share one, the one observed last is kept.
DELETE FROM observations d
WHERE EXISTS (
    SELECT 1 FROM observations o
    WHERE o.key <> d.key
      AND o.body->>'cluster' = d.body->>'cluster' AND o.body->>'namespace' = d.body->>'namespace'
      AND o.body->>'name' = d.body->>'name'
      AND (o.observed_at > d.observed_at OR (o.observed_at = d.observed_at AND o.key > d.key)));
UPDATE observations
SET key = (body->>'cluster') || '/' || (body->>'namespace') || '/' || (body->>'name');
