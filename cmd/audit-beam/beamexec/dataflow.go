package beamexec

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/gcpopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/dataflow"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/dataflow/dataflowlib"
	df "google.golang.org/api/dataflow/v1b3"

	"github.com/rnnaudit/rnnaudit/audit/table"
)

// runDataflow runs a stage's pipeline on Dataflow. The SDK's own wait
// (dataflow.Execute without --async) polls the job every 30 seconds and
// never cancels it: an interrupted driver would leave the job running
// and paying for its workers. So the job is submitted asynchronously and
// watched here (watchDataflow), which cancels it through the Dataflow
// jobs API, with the SDK's client and credentials, when ctx ends.
func (e *Executor) runDataflow(ctx context.Context, p *beam.Pipeline, kind table.StageKind, total int) error {
	dry := false
	if f := flag.Lookup("dry_run"); f != nil && f.Value.String() == "true" {
		dry = true
	}
	if !dry {
		// Beam's flags are the process's: a later job on another runner
		// must wait for its end again.
		if err := flag.Set("async", "true"); err != nil {
			return fmt.Errorf("beamexec: Beam's --async: %w", err)
		}
		defer flag.Set("async", "false")
	}
	// Submission (staging the worker binary and the model, then the
	// job's creation) is not interrupted: the job's id comes with its
	// end, and without the id the job could not be cancelled.
	res, err := dataflow.Execute(context.WithoutCancel(ctx), p)
	if err != nil {
		return fmt.Errorf("beamexec: the %s stage's job: %w", kind, err)
	}
	if dry {
		return ErrDryRun
	}
	if res == nil || res.JobID() == "" {
		return fmt.Errorf("beamexec: the %s stage's Dataflow job was submitted without an id", kind)
	}
	project, region := gcpopts.GetProjectFromFlagOrEnvironment(ctx), gcpopts.GetRegion(ctx)
	endpoint := ""
	if f := flag.Lookup("dataflow_endpoint"); f != nil {
		endpoint = f.Value.String()
	}
	client, err := dataflowlib.NewClient(context.WithoutCancel(ctx), endpoint)
	if err != nil {
		fmt.Fprint(e.stderr(), cancelHint(res.JobID(), project, region))
		return fmt.Errorf("beamexec: the Dataflow client to watch job %s: %w", res.JobID(), err)
	}
	err = watchDataflow(ctx, client, dataflowJob{Project: project, Region: region, ID: res.JobID()}, 10*e.cfg.Poll, e.stderr(),
		func(done int) { e.progress(kind, done, total) })
	if err != nil {
		return fmt.Errorf("beamexec: the %s stage's job: %w", kind, err)
	}
	e.progress(kind, total, total)
	return nil
}

// stderr is where the executor writes what a user must know.
func (e *Executor) stderr() io.Writer {
	if e.cfg.Stderr != nil {
		return e.cfg.Stderr
	}
	return os.Stderr
}

// dataflowJob names a Dataflow job.
type dataflowJob struct{ Project, Region, ID string }

// cancelHint is the command that cancels a Dataflow job by hand.
func cancelHint(id, project, region string) string {
	return fmt.Sprintf("beamexec: if Dataflow job %s is still running, cancel it with: gcloud dataflow jobs cancel %s --region %s --project %s\n", id, id, region, project)
}

// watchDataflow polls job's state every poll until it ends: nil when it
// is done, an error when it failed or was cancelled or drained
// elsewhere. While it runs, progress is given the chunks run so far (the
// job's attempted "chunks" counter), when the job reports it. When ctx ends first it requests the job's cancellation
// (the jobs API's update with requestedState JOB_STATE_CANCELLED, what
// gcloud dataflow jobs cancel does), writes the job's id and the gcloud
// command to w, waits up to a minute for the job to say it is
// cancelling, and returns ctx's error.
func watchDataflow(ctx context.Context, client *df.Service, job dataflowJob, poll time.Duration, w io.Writer, progress func(done int)) error {
	jobs := client.Projects.Locations.Jobs
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			fmt.Fprintf(w, "beamexec: cancelling Dataflow job %s (project %s, region %s)\n", job.ID, job.Project, job.Region)
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			defer cancel()
			_, err := jobs.Update(job.Project, job.Region, job.ID, &df.Job{RequestedState: "JOB_STATE_CANCELLED"}).Context(cctx).Do()
			if err != nil {
				fmt.Fprintf(w, "beamexec: the cancel request failed: %v\n", err)
				fmt.Fprint(w, cancelHint(job.ID, job.Project, job.Region))
				return ctx.Err()
			}
			for {
				j, err := jobs.Get(job.Project, job.Region, job.ID).Context(cctx).Do()
				if err == nil {
					switch j.CurrentState {
					case "JOB_STATE_CANCELLING", "JOB_STATE_CANCELLED", "JOB_STATE_DONE", "JOB_STATE_FAILED", "JOB_STATE_DRAINED", "JOB_STATE_UPDATED":
						fmt.Fprintf(w, "beamexec: Dataflow job %s: %s\n", job.ID, j.CurrentState)
						return ctx.Err()
					}
				}
				select {
				case <-cctx.Done():
					fmt.Fprint(w, cancelHint(job.ID, job.Project, job.Region))
					return ctx.Err()
				case <-tick.C:
				}
			}
		case <-tick.C:
			j, err := jobs.Get(job.Project, job.Region, job.ID).Context(ctx).Do()
			if err != nil {
				if ctx.Err() != nil {
					continue // cancel above
				}
				fmt.Fprint(w, cancelHint(job.ID, job.Project, job.Region))
				return fmt.Errorf("reading Dataflow job %s: %w", job.ID, err)
			}
			switch s := j.CurrentState; s {
			case "JOB_STATE_DONE":
				return nil
			case "JOB_STATE_FAILED", "JOB_STATE_CANCELLED", "JOB_STATE_DRAINED", "JOB_STATE_UPDATED":
				return fmt.Errorf("Dataflow job %s ended %s", job.ID, s)
			case "JOB_STATE_RUNNING":
				if m, err := jobs.GetMetrics(job.Project, job.Region, job.ID).Context(ctx).Do(); err == nil && progress != nil {
					if n, ok := dataflowChunks(m); ok {
						progress(n)
					}
				}
			}
		}
	}
}

// dataflowChunks is the job's attempted (tentative) count of chunks run,
// summed over its steps, from the Dataflow job's metrics.
func dataflowChunks(m *df.JobMetrics) (int, bool) {
	n, found := 0, false
	for _, u := range m.Metrics {
		if u.Name == nil || u.Name.Name != metricChunks || u.Name.Context["namespace"] != metricNamespace || u.Name.Context["tentative"] != "true" {
			continue
		}
		if v, ok := u.Scalar.(float64); ok {
			n += int(v)
			found = true
		}
	}
	return n, found
}
