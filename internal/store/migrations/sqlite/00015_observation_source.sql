-- +goose Up
-- An observation keeps the source of the fact that wrote it
-- (records.Observation.Source), so an agent's inventory judges only the
-- workloads that agent watches (POST /api/v1/facts/{cluster}/inventory).
-- Observations stored before it take the source of a kept cluster fact of
-- the same workload (cluster, uid and release); one without such a fact
-- keeps none and is not judged until its workload's next change.
UPDATE observations SET body = json_set(body, '$.source', (
    SELECT f.source FROM facts f
    WHERE f.release_id = observations.release_id AND f.source <> 'task'
      AND json_extract(f.body, '$.uid') = json_extract(observations.body, '$.uid')
      AND json_extract(f.body, '$.cluster') = json_extract(observations.body, '$.cluster')
    LIMIT 1))
WHERE json_extract(body, '$.source') IS NULL AND EXISTS (
    SELECT 1 FROM facts f
    WHERE f.release_id = observations.release_id AND f.source <> 'task'
      AND json_extract(f.body, '$.uid') = json_extract(observations.body, '$.uid')
      AND json_extract(f.body, '$.cluster') = json_extract(observations.body, '$.cluster'));

-- +goose Down
UPDATE observations SET body = json_remove(body, '$.source');
