package thread_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/toolstream/toolstream/ui"
	"github.com/toolstream/toolstream/ui/internal/frames"
	"github.com/toolstream/toolstream/ui/internal/thread"
	"github.com/toolstream/toolstream/ui/internal/uitest"
)

// written is what a handler writing one large frame with the host's write timeout
// reports: the writer's error, and how long after the request it came.
type written struct {
	err  error
	took time.Duration
}

// serveBigFrame serves, with small socket buffers, a handler that writes
// one 1.5 MiB frame with h's write timeout and reports the outcome on the channel.
func serveBigFrame(t *testing.T, h *thread.Host) (addr string, out <-chan written) {
	t.Helper()
	frame := []byte(`"` + strings.Repeat("x", 3<<19) + `"`)
	ch := make(chan written, 1)
	addr, _ = uitest.SmallBuffers(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		f := frames.New(w, h.WriteTimeout())
		f.Data(frame)
		f.Flush()
		ch <- written{f.Err(), time.Since(start)}
	}))
	return addr, ch
}

// TestWriteTimeoutDefaultAndNone: WithWriteTimeout(0) means the default
// (30 s, here shortened to 100 ms by a test hook), as does
// no option: a client that stops reading is dropped once a write waited
// that long (the writer's error is a deadline). A negative timeout means
// no bound: the same client is still waited for at six times the
// default, and gets the whole frame when it reads again. Before the
// test, neither setting was checked.
func TestWriteTimeoutDefaultAndNone(t *testing.T) {
	const short = 100 * time.Millisecond
	thread.SetDefaultWriteTimeout(short)
	t.Cleanup(func() { thread.SetDefaultWriteTimeout(0) })
	for name, opts := range map[string][]ui.Option{"WithWriteTimeout(0)": {ui.WithWriteTimeout(0)}, "no option": nil} {
		t.Run(name, func(t *testing.T) {
			addr, out := serveBigFrame(t, uitest.New(t, opts...).Threads)
			uitest.StuckClient(t, addr, http.MethodGet, "/", nil)
			var w written
			select {
			case w = <-out:
			case <-time.After(10 * time.Second):
				t.Fatalf("the writer still waits for a client that does not read, 10 s on (default timeout %v)", short)
			}
			if !errors.Is(w.err, os.ErrDeadlineExceeded) {
				t.Fatalf("the writer's error: %v, not a deadline", w.err)
			}
			if w.took > short+3*time.Second {
				t.Errorf("dropped after %v with a default of %v", w.took, short)
			}
			t.Logf("dropped after %v (default %v)", w.took.Round(time.Millisecond), short)
		})
	}
	t.Run("WithWriteTimeout(-1)", func(t *testing.T) {
		addr, out := serveBigFrame(t, uitest.New(t, ui.WithWriteTimeout(-1)).Threads)
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		// Far less than the frame, more than a loopback segment (a
		// buffer under that makes TCP send at its persist timer's pace).
		_ = c.(*net.TCPConn).SetReadBuffer(128 << 10)
		if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		select {
		case w := <-out:
			t.Fatalf("with no bound, the writer gave up on a client that does not read after %v: %v", w.took, w.err)
		case <-time.After(6 * short):
		}
		read := make(chan int)
		go func() { // reads the frame's data line
			defer close(read)
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				return
			}
			line, _ := bufio.NewReaderSize(resp.Body, 64<<10).ReadString('\n')
			read <- len(line)
		}()
		var w written
		select {
		case w = <-out:
		case <-time.After(10 * time.Second):
			t.Fatal("the writer did not finish once the client read")
		}
		n := <-read
		_ = c.Close()
		if w.err != nil {
			t.Fatalf("the writer's error: %v", w.err)
		}
		if want := len("data: \"\"\n") + 3<<19; n != want {
			t.Errorf("the client read a data line of %d bytes, want %d", n, want)
		}
		t.Logf("the frame was written in %v", w.took.Round(time.Millisecond))
	})
}
