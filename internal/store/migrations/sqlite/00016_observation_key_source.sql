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
SET key = json_extract(body, '$.cluster') || '/' || json_extract(body, '$.namespace') || '/'
    || json_extract(body, '$.source') || '/' || json_extract(body, '$.name')
WHERE coalesce(json_extract(body, '$.source'), '') <> '';

-- +goose Down
-- Back to one observation per cluster/namespace/name: where a Deployment
-- and a Rollout share one, the one observed last is kept.
DELETE FROM observations
WHERE EXISTS (
    SELECT 1 FROM observations o
    WHERE o.key <> observations.key
      AND json_extract(o.body, '$.cluster') = json_extract(observations.body, '$.cluster')
      AND json_extract(o.body, '$.namespace') = json_extract(observations.body, '$.namespace')
      AND json_extract(o.body, '$.name') = json_extract(observations.body, '$.name')
      AND (o.observed_at > observations.observed_at OR (o.observed_at = observations.observed_at AND o.key > observations.key)));
UPDATE observations
SET key = json_extract(body, '$.cluster') || '/' || json_extract(body, '$.namespace') || '/' || json_extract(body, '$.name');
