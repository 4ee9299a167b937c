-- +goose Up
-- The /ripcord command comments ripcord ran (or refused), one row per
-- comment (app/commands/handler.go). GitHub signs a webhook's body, not its
-- X-GitHub-Delivery id, so a captured issue_comment delivery can be posted
-- again under a new id, which the intake stores as a new delivery: the row
-- makes such a replay run nothing. It is written in the transaction of the
-- delivery that ran the command, with the command's effects; a second
-- insert of the comment does nothing, and neither does the rest of that
-- delivery's commit. delivery_id is the delivery that ran it; at is when
-- (unix microseconds). Rows stay when the App is uninstalled: a replay
-- after it was installed again must run nothing either, and a row is
-- small (one per command comment).
CREATE TABLE comment_commands (
    repository  TEXT NOT NULL,
    comment_id  BIGINT NOT NULL,
    delivery_id TEXT NOT NULL,
    at          BIGINT NOT NULL,
    PRIMARY KEY (repository, comment_id)
);

-- +goose Down
DROP TABLE comment_commands;
