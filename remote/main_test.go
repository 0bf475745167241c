package remote_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolstream/toolstream/internal/leak"
	"github.com/toolstream/toolstream/remote"
	"github.com/toolstream/toolstream/stream"
	"github.com/toolstream/toolstream/toolkit"
)

// envWorker makes the test binary a worker process serving workerTools on
// the NATS URL it names (TestWorkerDies starts it, then kills it).
const envWorker = "TOOLSTREAM_TEST_WORKER_URL"

func TestMain(m *testing.M) {
	if url := os.Getenv(envWorker); url != "" {
		os.Exit(workerProcess(url))
	}
	leak.VerifyTestMain(m)
}

// workerProcess serves workerTools until its standard input closes (or it is
// killed); it says "ready <id>" when it serves.
func workerProcess(url string) int {
	nc, err := nats.Connect(url)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	tk := toolkit.New()
	if err := tk.Add(workerTools()...); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	w, err := remote.Serve(nc, tk)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("ready %s\n", w.ID())
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = w.Stop(ctx)
	_ = tk.Close(ctx)
	nc.Close()
	return 0
}

type slowIn struct {
	Steps int `json:"steps"`
}

// workerTools are the tools of the worker processes: "slow" works in steps
// of 20 ms, reporting progress, and answers with its worker's pid.
func workerTools() []*toolkit.Tool {
	return []*toolkit.Tool{
		toolkit.MustTool(toolkit.Spec{Name: "slow", Description: "works in steps", ReadOnly: true, ConcurrencySafe: true},
			func(ctx context.Context, in slowIn) (string, error) {
				em := stream.From(ctx)
				for i := range in.Steps {
					em.Report("step", float64(i+1)/float64(in.Steps), map[string]int{"pid": os.Getpid()})
					select {
					case <-ctx.Done():
						return "", ctx.Err()
					case <-time.After(20 * time.Millisecond):
					}
				}
				return fmt.Sprintf("done by pid %d", os.Getpid()), nil
			}),
	}
}
