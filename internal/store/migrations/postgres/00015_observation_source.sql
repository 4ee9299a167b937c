-- +goose Up
-- An observation keeps the source of the fact that wrote it
-- (records.Observation.Source), so an agent's inventory judges only the
-- workloads that agent watches (POST /api/v1/facts/{cluster}/inventory).
-- Observations stored before it take the source of a kept cluster fact of
-- the same workload (cluster, uid and release); one without such a fact
-- keeps none and is not judged until its workload's next change.
UPDATE observations o SET body = o.body || jsonb_build_object('source', (
    SELECT f.source FROM facts f
    WHERE f.release_id = o.release_id AND f.source <> 'task'
      AND f.body->>'uid' = o.body->>'uid' AND f.body->>'cluster' = o.body->>'cluster'
    LIMIT 1))
WHERE o.body->'source' IS NULL AND EXISTS (
    SELECT 1 FROM facts f
    WHERE f.release_id = o.release_id AND f.source <> 'task'
      AND f.body->>'uid' = o.body->>'uid' AND f.body->>'cluster' = o.body->>'cluster');

-- +goose Down
UPDATE observations SET body = body - 'source';
