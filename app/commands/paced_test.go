package commands

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/ripcord/ripcord/app/ghclient"
	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/internal/githubtest"
)

// A job whose write the client's own pacing would hold past the job's
// timeout waits for the pace the way it waits for GitHub's rate limit: it
// snoozes, counting no attempt, until the write may go, and nothing is
// sent. It used to sleep out its whole timeout inside the client and fail
// the attempt with "context deadline exceeded". Here the installation may
// write once every 30 minutes; the reaction job has its minute (River's
// Timeout), and the real clock.
func TestAPacedWriteSnoozesTheJobUntilThePaceLetsItGo(t *testing.T) {
	const pace = 30 * time.Minute
	fake := githubtest.NewServer(t)
	comment := fake.AddComment("acme/checkout", 7, "octocat", "/ripcord help")
	cc, err := ghclient.New(ghclient.Config{AppID: githubtest.AppID, PrivateKey: githubtest.AppPrivateKey(t), APIURL: fake.URL(),
		Pace: ghclient.PacePolicy{Windows: []ghclient.Window{{Limit: 1, Period: pace}}}})
	if err != nil {
		t.Fatal(err)
	}
	w := &reactionWorker{deps: pipeline.Deps{GitHub: cc, Now: time.Now, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}}
	react := func(content string) (context.Context, error) {
		job := &river.Job[ReactionArgs]{JobRow: &rivertype.JobRow{Attempt: 1, MaxAttempts: jobAttempts, Kind: ReactionArgs{}.Kind()},
			Args: ReactionArgs{Repository: "acme/checkout", CommentID: comment.ID, Content: content, InstallationID: githubtest.InstallationID}}
		ctx, cancel := context.WithTimeout(context.Background(), w.Timeout(job))
		t.Cleanup(cancel)
		return ctx, w.Work(ctx, job)
	}

	first := time.Now()
	if _, err := react("eyes"); err != nil {
		t.Fatalf("the first reaction: %v", err)
	}
	ctx, err := react("+1")
	var snooze *river.JobSnoozeError
	if !errors.As(err, &snooze) {
		t.Fatalf("the second reaction, paced for %s: %v; want the job snoozed until the pace lets it go", pace, err)
	}
	if ctx.Err() != nil {
		t.Errorf("the job's timeout ran out (%v): it was spent waiting for the pace, not told at once", ctx.Err())
	}
	if lo, hi := pace-time.Since(first), pace; snooze.Duration < lo || snooze.Duration > hi {
		t.Errorf("snoozed %s, want until the pace lets the write go, %s to %s from now", snooze.Duration, lo, hi)
	}
	var contents []string
	for _, rx := range fake.Reactions("acme/checkout", comment.ID) {
		contents = append(contents, rx.Content)
	}
	if len(contents) != 1 || contents[0] != "eyes" {
		t.Errorf("reactions on GitHub %v, want [eyes]: the paced write is not sent", contents)
	}
}
