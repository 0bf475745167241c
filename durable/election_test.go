package durable_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/toolstream/toolstream/agent"
	"github.com/toolstream/toolstream/durable"
	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/groups/natskv"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/internal/testutil/natstest"
	"github.com/toolstream/toolstream/toolkit"
)

// TestLeaderKilledMidRun: on a three-node cluster (servers in child
// processes) with the calls bucket and the group state kept on all three,
// the server that leads both buckets' streams and JetStream's meta group is
// killed (SIGKILL: its peers find out by missed heartbeats) while an agent
// connected to another server runs batches of calls of a read-only and a
// non-idempotent tool in four sessions, saving each session's conversation
// after each batch, and changes the sessions' group state, one update
// after another. Every call, save and update goes on through the election
// and succeeds. The longest time no call or save ended is at most the
// calls bucket's election plus a second, and the longest time no update
// ended at most the groups bucket's election plus a second (each stream
// elects its own leader; an election lasts from the kill until the stream
// answers a read again, measured in the same run).
// A second agent opens its stores on a surviving server right at the kill
// (through the meta group's election), then runs every call id again: it
// gets every result from the bucket, as the model was told it, and nothing
// runs again (each tool ran once per call id). The last conversation saved
// and the last group state acknowledged, before the kill and during the
// election, are read back.
//
// Before, the stall was 10 s (one read, sent once, waited for its 10 s
// bound), calls failed ("cannot record call", "cannot read call"), a group
// update waited for its caller's deadline, and run again, calls whose
// outcome was not stored ran a second time or came back "may have done its
// work".
func TestLeaderKilledMidRun(t *testing.T) { leaderKilled(t, false) }

// TestLeaderKilledUnderTheAgent: the same with the agent connected to the
// server that is killed: its connection fails over to another server while
// its requests are in flight.
func TestLeaderKilledUnderTheAgent(t *testing.T) { leaderKilled(t, true) }

// electionLoad is one agent's side of the leader tests: tools that count
// their runs per call id, and what each call returned.
type electionLoad struct {
	mu      sync.Mutex
	runs    map[string]int             // session/call -> runs of its tool
	results map[string]toolkit.Result  // session/call -> what the model was told
	marks   map[string][]time.Time     // when each call, save and update ended: the run's progress
	exits   map[string]time.Time       // when the last loop of a kind ended
	convs   map[string]int             // session -> messages in its last saved conversation
	groups  map[string]map[string]bool // session -> its last acknowledged group state
	fails   []string
	logs    syncLog
}

func newElectionLoad() *electionLoad {
	return &electionLoad{runs: map[string]int{}, results: map[string]toolkit.Result{}, convs: map[string]int{},
		groups: map[string]map[string]bool{}, marks: map[string][]time.Time{}, exits: map[string]time.Time{}}
}

type syncLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// tools are a read-only tool and one that is not idempotent; both count
// their runs per call id.
func (l *electionLoad) tools() []*toolkit.Tool {
	count := func(ctx context.Context) string {
		info, _ := toolkit.CallInfoFrom(ctx)
		l.mu.Lock()
		defer l.mu.Unlock()
		l.runs[info.Session+"/"+info.CallID]++
		return info.CallID
	}
	no := false
	return []*toolkit.Tool{
		toolkit.MustTool(toolkit.Spec{Name: "look", ReadOnly: true, ConcurrencySafe: true}, func(ctx context.Context, _ struct{}) (string, error) {
			return "looked " + count(ctx), nil
		}),
		toolkit.MustTool(toolkit.Spec{Name: "write", Idempotent: &no, ConcurrencySafe: true}, func(ctx context.Context, _ struct{}) (string, error) {
			return "wrote " + count(ctx), nil
		}),
	}
}

// stores opens the calls bucket and the group state (three replicas each).
func stores(ctx context.Context, js jetstream.JetStream) (*durable.Store, *natskv.Store, error) {
	st, err := durable.New(ctx, js, "", durable.WithReplicas(3))
	if err != nil {
		return nil, nil, err
	}
	gs, err := natskv.New(ctx, js, "", natskv.WithReplicas(3))
	return st, gs, err
}

// toolkitFor is an agent's toolkit: the tools behind the store's
// interceptor, warnings logged to l.
func (l *electionLoad) toolkitFor(t *testing.T, st *durable.Store) *toolkit.Toolkit {
	t.Helper()
	tk := testutil.Kit(t, toolkit.WithLogger(zerolog.New(&l.logs).Level(zerolog.WarnLevel)))
	testutil.Add(t, tk, l.tools()...)
	if err := tk.Use(st.Interceptor()); err != nil {
		t.Fatal(err)
	}
	return tk
}

// batch is the calls of batch b of session s: two of each tool.
func batch(s string, b int) []toolkit.Call {
	var calls []toolkit.Call
	for i, tool := range []string{"look", "write", "look", "write"} {
		calls = append(calls, testutil.Call(fmt.Sprintf("%s-b%d-%d", s, b, i), tool, `{}`))
	}
	return calls
}

// session runs batches in session s until stop, saving its conversation
// after each: all of it in the calls bucket.
func (l *electionLoad) session(ctx context.Context, tk *toolkit.Toolkit, st *durable.Store, s string, done *progress) {
	sess, err := tk.Session(s)
	if err != nil {
		l.fail("%s: %v", s, err)
		return
	}
	defer l.exit("calls")
	conv := &agent.Conversation{}
	for b := 0; !done.reached() && ctx.Err() == nil; b++ {
		rs := sess.Run(ctx, batch(s, b))
		conv.Messages = append(conv.Messages, agent.UserText(fmt.Sprintf("batch %d", b)))
		err := st.SaveConversation(ctx, s, conv)
		l.mu.Lock()
		l.marks["calls"] = append(l.marks["calls"], time.Now())
		for _, r := range rs {
			l.results[s+"/"+r.Call.ID] = r
			l.marks["calls"] = append(l.marks["calls"], r.Started.Add(r.Duration))
			if r.State != events.StateSuccess {
				l.fails = append(l.fails, fmt.Sprintf("%s: %s %q", r.Call.ID, r.State, r.Text()))
			}
		}
		if err != nil {
			l.fails = append(l.fails, fmt.Sprintf("%s: saving the conversation after batch %d: %v", s, b, err))
		} else {
			l.convs[s] = len(conv.Messages)
		}
		l.mu.Unlock()
		done.n.Add(int64(len(rs)))
	}
}

// switchGroups changes session s's group state, one update after another,
// until stop: all of it in the groups bucket.
func (l *electionLoad) switchGroups(ctx context.Context, gs *natskv.Store, s string, done *progress) {
	defer l.exit("groups")
	for n := 0; !done.reached() && ctx.Err() == nil; n++ {
		state := map[string]bool{fmt.Sprintf("g%d", n): true}
		_, err := gs.Update(ctx, s, func(map[string]bool) (map[string]bool, error) { return state, nil })
		l.mu.Lock()
		l.marks["groups"] = append(l.marks["groups"], time.Now())
		if err != nil {
			l.fails = append(l.fails, fmt.Sprintf("%s: group update %d: %v", s, n, err))
		} else {
			l.groups[s] = state
		}
		l.mu.Unlock()
		done.n.Add(1)
	}
}

// progress counts what a loop did; it stops once it did target (0: no
// target yet).
type progress struct{ n, target atomic.Int64 }

func (p *progress) reached() bool {
	t := p.target.Load()
	return t > 0 && p.n.Load() >= t
}

func (l *electionLoad) fail(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.fails = append(l.fails, fmt.Sprintf(format, args...))
}

// exit marks the end of a loop of a kind: the stall of that kind counts
// until its last loop ended.
func (l *electionLoad) exit(kind string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.exits[kind] = time.Now()
}

// stall is the longest time nothing of a kind ("calls": a call or a save;
// "groups": a group update) ended, until its loops ended.
func (l *electionLoad) stall(kind string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	marks := slices.SortedFunc(slices.Values(append(l.marks[kind], l.exits[kind])), func(a, b time.Time) int { return a.Compare(b) })
	var longest time.Duration
	for i := 1; i < len(marks); i++ {
		longest = max(longest, marks[i].Sub(marks[i-1]))
	}
	return longest
}

func leaderKilled(t *testing.T, agentOnLeader bool) {
	testutil.Long(t)
	if testing.Short() {
		t.Skip("a cluster of three server processes and an election take seconds")
	}
	cl := natstest.NewProcCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // setting up, and the first agent's run
	defer cancel()
	calls, groups := "KV_"+durable.DefaultBucket, "KV_"+natskv.DefaultBucket

	// The buckets, led by the server that leads the meta group.
	admin := cl.JetStream(t, 0)
	if _, _, err := stores(ctx, admin); err != nil {
		t.Fatal(err)
	}
	leader, err := cl.MetaLeader(ctx, 0)
	if err != nil || leader == "" {
		t.Fatalf("the meta leader: %q %v", leader, err)
	}
	for _, stream := range []string{calls, groups} {
		if err := natstest.MoveLeader(ctx, admin, stream, leader); err != nil {
			t.Fatal(err)
		}
	}
	victim := cl.Index(leader)
	agentNode, watchNode, restartNode := (victim+1)%3, (victim+2)%3, (victim+1)%3
	if agentOnLeader {
		agentNode = victim
	}

	first := newElectionLoad()
	js1 := cl.JetStream(t, agentNode)
	st, gs, err := stores(ctx, js1)
	if err != nil {
		t.Fatal(err)
	}
	tk := first.toolkitFor(t, st)
	sessions := []string{"s0", "s1", "s2", "s3"}
	var done, switched progress // calls ended, group updates made
	var wg sync.WaitGroup
	for _, s := range sessions {
		wg.Go(func() { first.session(ctx, tk, st, s, &done) })
		wg.Go(func() { first.switchGroups(ctx, gs, s, &switched) })
	}

	// Once the run is under way, kill the leader; a second agent opens its
	// stores meanwhile; measure the election from a surviving server.
	for done.n.Load() < 40 {
		if ctx.Err() != nil {
			t.Fatal("the run never got going")
		}
		time.Sleep(5 * time.Millisecond)
	}
	js2 := cl.JetStream(t, restartNode)
	atKill, killed := done.n.Load(), time.Now()
	cl.Kill(victim)
	// The second agent opens its stores from the kill, under a context of
	// its own (as the run again below), so that it gets to run every
	// call again even when the first run hangs.
	later, cancelLater := context.WithTimeout(context.Background(), time.Minute)
	defer cancelLater()
	type opened struct {
		st   *durable.Store
		gs   *natskv.Store
		err  error
		took time.Duration
	}
	second := make(chan opened, 1)
	go func() {
		st, gs, err := stores(later, js2)
		second <- opened{st, gs, err, time.Since(killed)}
	}()
	meta := make(chan time.Duration, 1)
	go func() {
		at, _, _ := awaitLeader(later, leader, func(ctx context.Context) (string, error) { return cl.MetaLeader(ctx, watchNode) })
		meta <- at.Sub(killed)
	}()
	// An election as a client sees it: from the kill until the bucket's
	// stream answers a read again (its new leader serves), asked through
	// both surviving servers (a member that does not know the new leader
	// yet answers "unavailable" itself, sooner than the leader).
	watch, other := cl.JetStream(t, watchNode), cl.JetStream(t, (victim+1)%3)
	servesAgain := func(stream string) (time.Duration, error) {
		var turn atomic.Int64
		at, _, err := awaitLeader(ctx, leader, func(ctx context.Context) (string, error) {
			if turn.Add(1)%2 == 0 {
				return leaderServes(ctx, other.Conn(), stream)
			}
			return leaderServes(ctx, watch.Conn(), stream)
		})
		return at.Sub(killed), err
	}
	type elected struct {
		after time.Duration
		err   error
	}
	groupsElected := make(chan elected, 1)
	go func() {
		d, err := servesAgain(groups)
		groupsElected <- elected{d, err}
	}()
	// Each session runs three batches and makes three group updates more
	// once the bucket serves again.
	callsElection, err := servesAgain(calls)
	if err != nil {
		t.Fatalf("the calls bucket: %v", err)
	}
	done.target.Store(done.n.Load() + int64(len(sessions))*4*3)
	g := <-groupsElected
	if g.err != nil {
		t.Fatalf("the groups bucket: %v", g.err)
	}
	groupsElection := g.after
	switched.target.Store(switched.n.Load() + int64(len(sessions))*3)
	wg.Wait()
	callStall, groupStall := first.stall("calls"), first.stall("groups")
	o, metaElection := <-second, <-meta
	ask, cancelAsk := context.WithTimeout(context.Background(), 5*time.Second)
	newLeader, _ := natstest.StreamLeader(ask, watch, calls)
	cancelAsk()
	t.Logf("killed %s (leader of both buckets and of the meta group; the agent on it: %v); the calls bucket serves again after %v (%s leads), the groups bucket after %v; the longest stalls: %v (calls and saves), %v (group updates); %d calls, %d before the kill; the meta group has a leader after %v; the second agent's stores opened %v after the kill",
		leader, agentOnLeader, callsElection.Round(time.Millisecond), newLeader, groupsElection.Round(time.Millisecond),
		callStall.Round(time.Millisecond), groupStall.Round(time.Millisecond), len(first.results), atKill,
		metaElection.Round(time.Millisecond), o.took.Round(time.Millisecond))
	for _, f := range first.fails {
		t.Errorf("first run: %s", f)
	}
	if callStall > callsElection+time.Second {
		t.Errorf("calls and saves stalled %v, more than the calls bucket's election (%v) plus 1 s", callStall.Round(time.Millisecond), callsElection.Round(time.Millisecond))
	}
	if groupStall > groupsElection+time.Second {
		t.Errorf("group updates stalled %v, more than the groups bucket's election (%v) plus 1 s", groupStall.Round(time.Millisecond), groupsElection.Round(time.Millisecond))
	}

	// The second agent runs every call again.
	rerun, cancelRerun := context.WithTimeout(context.Background(), time.Minute)
	defer cancelRerun()
	if o.err != nil {
		t.Errorf("the second agent's stores, opened during the election: %v", o.err)
		if o.st, o.gs, o.err = stores(rerun, js2); o.err != nil {
			t.Fatalf("the second agent's stores, opened after the election: %v", o.err)
		}
	}
	closeCtx, cancelClose := context.WithTimeout(rerun, 10*time.Second)
	_ = tk.Close(closeCtx)
	cancelClose()
	again := newElectionLoad()
	tk2 := again.toolkitFor(t, o.st)
	for _, s := range sessions {
		var calls []toolkit.Call
		for k, r := range first.results {
			if strings.HasPrefix(k, s+"/") {
				calls = append(calls, r.Call)
			}
		}
		for _, r := range testutil.Session(t, tk2, s).Run(rerun, calls) {
			k := s + "/" + r.Call.ID
			was := first.results[k]
			if r.Meta[durable.MetaReplayed] != true || r.State != was.State || r.Text() != was.Text() {
				t.Errorf("%s run again: %s %q (replayed %v); the model was told %s %q", k, r.State, r.Text(), r.Meta[durable.MetaReplayed], was.State, was.Text())
			}
		}
		conv, err := o.st.LoadConversation(rerun, s)
		if err != nil || conv == nil || len(conv.Messages) != first.convs[s] {
			n := -1
			if conv != nil {
				n = len(conv.Messages)
			}
			t.Errorf("%s: the conversation read back has %d messages (%v); the last save acknowledged had %d", s, n, err, first.convs[s])
		}
		state, err := o.gs.Load(rerun, s)
		if err != nil || !maps.Equal(state, first.groups[s]) {
			t.Errorf("%s: the group state read back is %v (%v); the last update acknowledged set %v", s, state, err, first.groups[s])
		}
	}
	for k := range first.results {
		if n := first.runs[k] + again.runs[k]; n != 1 {
			t.Errorf("%s: its tool ran %d times", k, n)
		}
	}
	if t.Failed() {
		if logs := first.logs.String(); logs != "" {
			t.Logf("the first agent's log:\n%s", limitLines(logs, 20))
		}
	}
}

// leaderServes asks the stream's leader for a message once: it answers
// "serving" when the leader answered (with the message or without one), ""
// while the stream has no leader that serves.
func leaderServes(ctx context.Context, nc *nats.Conn, stream string) (string, error) {
	resp, err := nc.RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET."+stream, []byte(`{"last_by_subj":"$KV.none"}`))
	if err != nil {
		return "", err
	}
	var r struct {
		Error *jetstream.APIError `json:"error"`
	}
	if err := json.Unmarshal(resp.Data, &r); err != nil {
		return "", err
	}
	if r.Error != nil && r.Error.ErrorCode != jetstream.JSErrCodeMessageNotFound {
		return "", nil
	}
	return "serving", nil
}

// awaitLeader returns when, and which, a server other than old first
// answered as the leader (leader asks). It asks every 20 ms without waiting
// for earlier questions (nobody answers them during an election), so the
// time is that of the first answer naming the new leader.
func awaitLeader(ctx context.Context, old string, leader func(context.Context) (string, error)) (time.Time, string, error) {
	type seen struct {
		at   time.Time
		name string
	}
	found := make(chan seen, 1)
	probes, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case s := <-found:
			return s.at, s.name, nil
		case <-ctx.Done():
			return time.Time{}, "", fmt.Errorf("no leader other than %s: %w", old, ctx.Err())
		case <-tick.C:
			wg.Go(func() {
				probe, cancelProbe := context.WithTimeout(probes, 2*time.Second)
				defer cancelProbe()
				if name, err := leader(probe); err == nil && name != "" && name != old {
					select {
					case found <- seen{time.Now(), name}:
					default:
					}
				}
			})
		}
	}
}

func limitLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = append(lines[:n], fmt.Sprintf("... %d lines more", len(lines)-n))
	}
	return strings.Join(lines, "\n")
}
