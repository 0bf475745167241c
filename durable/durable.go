// Package durable keeps a toolkit's calls in a NATS JetStream key-value
// bucket, so that they survive a restart of the agent's process: a call
// that finished is never run twice (running it again under the same session
// and call id returns the stored result), a call of an external tool that
// waits for an answer is listed as pending after a restart, and an answer
// given while no process was running is not lost. The same holds for a call
// that waits for a person's approval (interceptors.Permissions): a decision
// given with Store.Approve or Store.Reject while no process runs it is
// applied, through Permissions, when the call runs again, and nobody is
// asked twice.
//
// Install the interceptor first (outermost). It records a call's wait
// (an external tool's, or an approval's) in the bucket before the call is
// seen waiting, so that a process killed while a call waits leaves it
// pending, never "running".
//
//	st, _ := durable.New(ctx, js, "")
//	tk := toolkit.New()
//	tk.Use(st.Interceptor()) // before any other interceptor
//	tk.Use(perms.Interceptor())  // if calls are approved: after the store's
//	stop, _ := st.Deliver(ctx, tk, durable.WithPermissions(perms)) // answers and decisions given through st reach waiting calls
//
// What is exactly once: a call id's result. A call is claimed with the
// bucket's create-if-absent before it runs, and its outcome stored when it
// ends; any later call with the same session and call id gets that outcome.
// Each claim (or take-over by a later process) names its run in the record
// (Record.Owner), and only that run changes the record's state afterwards:
// what an earlier run does late (a process thought dead, an attempt given
// up on) is refused.
// What is not: a process that dies while a call runs leaves the call
// "running" in the bucket, and nobody knows whether its work was done. Run
// again, such a call of a read-only or idempotent tool runs again; any other
// gets an error result saying it may have done its work (ErrMaybeRan).
//
// On a cluster (WithReplicas), the loss of the server that leads the
// bucket is not such a death: every read and write goes to the bucket's
// leader and on through the election of the next one (WithElectionWait),
// and writes are sent again safely (a write whose answer was lost is
// stored once and reported stored). A call's claim and outcome are stored
// and the run stalls about as long as the election.
// docs/scale-out.md has the whole account.
package durable

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/internal/kvlead"
	"github.com/toolstream/toolstream/internal/kvready"
	"github.com/toolstream/toolstream/toolkit"
)

// DefaultBucket is the key-value bucket New uses when given none.
const DefaultBucket = "toolstream_calls"

// The states of a stored call.
const (
	Running   = "running"
	Suspended = "suspended"
	Done      = "done"
)

// MetaReplayed marks (in a result's meta) a result that was stored by an
// earlier run of the call and returned without running it again.
const MetaReplayed = "replayed"

// ErrMaybeRan is the cause of a call that was running when a process
// stopped and whose tool is neither read-only nor idempotent: it is not run
// again, since it may have done its work.
var ErrMaybeRan = errors.New("the call was running when its process stopped and may have done its work: it is not run again")

// ErrMaybeStored is the cause of a write to the bucket that gave up (its
// context ended, or WithElectionWait passed) while a request of it went
// unanswered: the bucket may have stored it. Reading the record tells.
var ErrMaybeStored = kvlead.ErrMaybeStored

// Record is a call as the bucket keeps it.
type Record struct {
	Session string       `json:"session"`
	Call    toolkit.Call `json:"call"`
	State   string       `json:"state"`
	// Reason is why a suspended call waits: "external" or "approval".
	Reason string `json:"reason,omitempty"`
	// Result is a done call's outcome.
	Result *Stored `json:"result,omitempty"`
	// Answer is the answer to a suspended external call, given with
	// Store.Answer: it is the call's result once delivered.
	Answer *Stored `json:"answer,omitempty"`
	// Decision is a person's decision about a call that waits for approval,
	// given with Store.Approve or Store.Reject.
	Decision *Decision `json:"decision,omitempty"`
	// Owner names the run of the call that holds the record: set when a
	// process claims the call or takes it over, and checked by every
	// change of state that run makes afterwards.
	Owner   string    `json:"owner,omitempty"`
	Updated time.Time `json:"updated"`
}

// Decision is a person's decision about a call that waits for approval, as
// the bucket keeps it.
type Decision struct {
	Approve bool `json:"approve"`
	// Args are the edited arguments an approval runs the call with (none:
	// as called).
	Args json.RawMessage `json:"args,omitempty"`
	// Reason is a rejection's reason, what the model reads.
	Reason string `json:"reason,omitempty"`
}

// Stored is an outcome as the bucket keeps it.
type Stored struct {
	State   events.State  `json:"state"`
	Content []events.Part `json:"content"`
	Error   string        `json:"error,omitempty"`
}

// Option configures New.
type Option func(*config)

type config struct {
	kv   jetstream.KeyValueConfig
	wait time.Duration
}

// WithReplicas keeps the bucket on n servers of a cluster.
func WithReplicas(n int) Option { return func(c *config) { c.kv.Replicas = n } }

// WithTTL forgets calls this long after their last change (default: never).
func WithTTL(d time.Duration) Option { return func(c *config) { c.kv.TTL = d } }

// defaultElectionWait is how long one read or write of the bucket goes on,
// unless WithElectionWait says otherwise, while the bucket does not answer
// it: a crashed leader's peers elect another within about 10 s with the
// NATS server's defaults, and 30 s leaves room for a second round.
const defaultElectionWait = kvlead.DefaultWait

// WithElectionWait bounds how long one read or write of the bucket goes on
// while the bucket does not answer it: its stream elects a new leader, or
// an answer was lost (default, and 0 or less: 30 s). Each read or write
// is sent again until answered, so it goes on within about 250 ms of the
// stream having a leader again. A call's own deadline (or cancellation)
// also ends the reads that decide whether it runs; the writes that record
// its claim and its outcome are bounded by d only, so that a call that
// timed out still has its outcome stored. Keep d under the bucket's
// duplicate window (2 minutes, or its TTL if shorter): within it, a write
// sent again is never stored twice.
func WithElectionWait(d time.Duration) Option { return func(c *config) { c.wait = d } }

// defaultWait is defaultElectionWait, but for tests (export_test.go).
var defaultWait atomic.Int64

func init() { defaultWait.Store(int64(defaultElectionWait)) }

// Store keeps calls in a key-value bucket.
type Store struct {
	kv jetstream.KeyValue // watches (Deliver, settle)
	// b reads and writes through the stream's leader, through elections
	// (package kvlead): a read sees every acknowledged write.
	b *kvlead.Bucket
}

// New opens (creating if needed) the bucket; an empty name means
// DefaultBucket.
func New(ctx context.Context, js jetstream.JetStream, bucket string, opts ...Option) (*Store, error) {
	if js == nil {
		return nil, errNoJetStream
	}
	if bucket == "" {
		bucket = DefaultBucket
	}
	cfg := config{
		kv:   jetstream.KeyValueConfig{Bucket: bucket, Description: "toolstream: calls by session and call id", History: 1},
		wait: time.Duration(defaultWait.Load()),
	}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.wait <= 0 {
		cfg.wait = defaultElectionWait
	}
	kv, err := kvlead.Open(ctx, cfg.wait, func(ctx context.Context) (jetstream.KeyValue, error) {
		return js.CreateOrUpdateKeyValue(ctx, cfg.kv)
	})
	if err != nil {
		return nil, fmt.Errorf("durable: key-value bucket %s: %w", bucket, err)
	}
	if err := kvready.Wait(ctx, kv); err != nil {
		return nil, fmt.Errorf("durable: key-value bucket %s: %w", bucket, err)
	}
	return &Store{kv: kv, b: kvlead.New(js, bucket, cfg.wait)}, nil
}

// key is the call's key: session and call id base64url-encoded (keys allow
// few characters), so one session's keys share a prefix.
func key(session, call string) string {
	return "c." + base64.RawURLEncoding.EncodeToString([]byte(session)) + "." + base64.RawURLEncoding.EncodeToString([]byte(call))
}

func sessionPrefix(session string) string {
	return "c." + base64.RawURLEncoding.EncodeToString([]byte(session)) + "."
}

// Get returns the stored call, or jetstream.ErrKeyNotFound.
func (s *Store) Get(ctx context.Context, session, callID string) (Record, error) {
	rec, _, err := s.get(ctx, key(session, callID))
	return rec, err
}

func (s *Store) get(ctx context.Context, k string) (Record, uint64, error) {
	value, rev, err := s.b.Get(ctx, k)
	if err != nil {
		return Record{}, 0, err
	}
	var rec Record
	if err := json.Unmarshal(value, &rec); err != nil {
		return Record{}, 0, fmt.Errorf("durable: record %s: %w", k, err)
	}
	return rec, rev, nil
}

func (s *Store) put(ctx context.Context, k string, rec Record, rev uint64) error {
	rec.Updated = time.Now().UTC()
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if rev == 0 {
		_, err = s.b.Create(ctx, k, data)
	} else {
		_, err = s.b.Update(ctx, k, data, rev)
	}
	return err
}

// update applies fn to the record with compare-and-set, retrying on a
// concurrent change; fn returns false to leave the record as it is.
func (s *Store) update(ctx context.Context, k string, fn func(*Record) bool) error {
	for range 16 {
		rec, rev, err := s.get(ctx, k)
		if err != nil {
			return err
		}
		if !fn(&rec) {
			return nil
		}
		if err = s.put(ctx, k, rec, rev); !conflict(err) {
			return err
		}
	}
	return fmt.Errorf("durable: %s: too many concurrent changes", k)
}

// conflict reports whether a create or compare-and-set failed because the
// record changed (or came to be) since it was read.
func conflict(err error) bool {
	return errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch)
}

// Pending lists the session's calls that wait (suspended), oldest first
// (by their last change). A call decided with Approve or Reject but not
// run again yet is listed with its Decision.
func (s *Store) Pending(ctx context.Context, session string) ([]Record, error) {
	keys, err := s.b.Keys(ctx, sessionPrefix(session)+">")
	if err != nil {
		return nil, fmt.Errorf("durable: listing calls: %w", err)
	}
	type pending struct {
		rec Record
		rev uint64
	}
	var found []pending
	for _, k := range keys {
		rec, rev, err := s.get(ctx, k)
		if err != nil {
			if errors.Is(err, jetstream.ErrKeyNotFound) {
				continue
			}
			return nil, err
		}
		if rec.State == Suspended {
			found = append(found, pending{rec, rev})
		}
	}
	slices.SortFunc(found, func(a, b pending) int { return cmp.Compare(a.rev, b.rev) })
	out := make([]Record, 0, len(found))
	for _, p := range found {
		out = append(out, p.rec)
	}
	return out, nil
}

// Answer answers a suspended call of an external tool: content is its
// result, or errText its failure. The answer is kept in the bucket: a
// process that runs the call now gets it (Deliver), and one that runs it
// again after a restart returns it at once. A successful answer that does
// not match the tool's output schema fails the call with the problems
// (a *toolkit.OutputError), as a handler's result would: it cannot be
// given again.
func (s *Store) Answer(ctx context.Context, session, callID string, content []events.Part, errText string) error {
	return s.settle(ctx, session, callID, "external", "an answer", "answered", func(r *Record) bool {
		if r.Answer != nil {
			return false
		}
		r.Answer = &Stored{State: events.StateSuccess, Content: content, Error: errText}
		if errText != "" {
			r.Answer.State = events.StateError
		}
		return true
	})
}

// Approve approves a call that waits for a person's approval, with edited
// arguments if args is not nil; Reject rejects it with reason. The decision
// is kept in the bucket: a process where the call waits now gets it
// (Deliver with WithPermissions), and one that runs the call again after a
// restart, with the same session, call id and arguments, applies it
// through its Permissions without asking again. Permissions still decides:
// a rule that denies the call denies it, approved or not.
func (s *Store) Approve(ctx context.Context, session, callID string, args json.RawMessage) error {
	if args != nil && !json.Valid(args) {
		return fmt.Errorf("durable: the edited arguments of call %q are not JSON: %s", callID, args)
	}
	return s.decide(ctx, session, callID, Decision{Approve: true, Args: args})
}

// Reject rejects a call that waits for a person's approval: see Approve.
func (s *Store) Reject(ctx context.Context, session, callID, reason string) error {
	return s.decide(ctx, session, callID, Decision{Reason: reason})
}

func (s *Store) decide(ctx context.Context, session, callID string, d Decision) error {
	return s.settle(ctx, session, callID, "approval", "approval", "decided", func(r *Record) bool {
		if r.Decision != nil {
			return false
		}
		r.Decision = &d
		return true
	})
}

// settle records what a call suspended for reason waits for: set fills it
// in, or reports false when it was given already. waitsFor and given word
// the errors ("an answer", "answered").
//
// A call recorded as running may be about to wait (its wait is recorded
// just before anyone is asked), or may have been asked by a process whose
// record says otherwise (one from before the interceptor recorded waits).
// settle then waits for the record to change, up to settleWait (or ctx),
// before refusing.
func (s *Store) settle(ctx context.Context, session, callID, reason, waitsFor, given string, set func(*Record) bool) error {
	k := key(session, callID)
	var w jetstream.KeyWatcher
	defer func() {
		if w != nil {
			_ = w.Stop()
		}
	}()
	wait := time.NewTimer(settleWait)
	defer wait.Stop()
	for {
		var why error
		running := false
		err := s.update(ctx, k, func(r *Record) bool {
			running = r.State == Running
			if r.State != Suspended || r.Reason != reason {
				why = fmt.Errorf("durable: call %q of session %q does not wait for %s (it is %s)", callID, session, waitsFor, r.State)
				return false
			}
			if !set(r) {
				why = fmt.Errorf("durable: call %q of session %q is %s already", callID, session, given)
				return false
			}
			return true
		})
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return fmt.Errorf("durable: no call %q in session %q", callID, session)
		}
		if err != nil || !running {
			return cmp.Or(err, why)
		}
		if w == nil {
			// Watch, then look again: a change between the look and the
			// watch is not missed.
			if w, err = s.kv.Watch(ctx, k, jetstream.UpdatesOnly()); err != nil {
				return why
			}
			continue
		}
		select {
		case _, ok := <-w.Updates():
			if !ok {
				return why
			}
		case <-wait.C:
			return why
		case <-ctx.Done():
			return why
		}
	}
}

// settleWait bounds how long Answer, Approve and Reject wait for a call
// recorded as running to be recorded as waiting before they refuse.
const settleWait = 5 * time.Second

func (st *Stored) outcome() toolkit.Outcome {
	out := toolkit.Outcome{State: st.State, Content: st.Content}
	if st.Error != "" {
		out.Err = errors.New(st.Error)
	}
	return out
}

func stored(out toolkit.Outcome) *Stored {
	st := &Stored{State: out.State, Content: out.Content}
	if st.Content == nil {
		st.Content = []events.Part{}
	}
	if out.Err != nil {
		st.Error = out.Err.Error()
	}
	return st
}

// Interceptor returns the interceptor (named "durable") that claims each
// call in the bucket before it runs and stores its outcome; add it before
// any other, so that a replayed result skips them all.
func (s *Store) Interceptor() toolkit.Interceptor {
	return toolkit.Interceptor{Name: "durable", Intercept: s.intercept}
}

// bookkeeping is the context of the interceptor's writes, and of the
// reads that decide them once the call ran: it outlives the call's context
// (a cancelled call's record must still be written). Each read or write is
// bounded by the store's election wait from its own start (a call may wait
// for hours).
func bookkeeping(ctx context.Context) context.Context { return context.WithoutCancel(ctx) }

func (s *Store) intercept(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
	k := key(inv.Session, inv.Call.ID)
	bctx := bookkeeping(ctx)
	owner := nuid.Next() // this run of the call
	for range 4 {
		// Nothing is written yet: the call's deadline and cancellation
		// end the read.
		rec, rev, err := s.get(ctx, k)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
			err = s.put(bctx, k, Record{Session: inv.Session, Call: inv.Call, State: Running, Owner: owner}, 0)
			if errors.Is(err, jetstream.ErrKeyExists) {
				continue // another process claimed it just now: look again
			}
			if err != nil {
				return toolkit.Failure(events.StateError, fmt.Errorf("durable: cannot record call %q: %w", inv.Call.ID, err))
			}
			return s.run(ctx, k, owner, inv, next)
		case err != nil && ctx.Err() != nil:
			return inv.ContextFailure(ctx)
		case err != nil:
			return toolkit.Failure(events.StateError, fmt.Errorf("durable: cannot read call %q: %w", inv.Call.ID, err))
		case rec.State == Done && rec.Result != nil:
			inv.Meta(MetaReplayed, true)
			return rec.Result.outcome()
		case rec.State == Suspended && rec.Answer != nil:
			// Answered while no process ran it: the answer is the result,
			// checked as Session.Submit checks it (it cannot be given
			// again: one that breaks the output schema fails the call).
			out := rec.Answer.outcome()
			if out.Err != nil {
				out.Content = append(out.Content, events.Text("Error: "+out.Err.Error()))
			} else if err := inv.Tool.CheckOutput(out.Content); err != nil {
				out = toolkit.Failure(events.StateError, err)
			}
			rec.State, rec.Reason, rec.Result, rec.Owner = Done, "", stored(out), owner
			if err := s.put(bctx, k, rec, rev); err != nil {
				if conflict(err) {
					continue // changed meanwhile: look again
				}
				return toolkit.Failure(events.StateError, fmt.Errorf("durable: cannot record call %q: %w", inv.Call.ID, err))
			}
			return out
		case rec.State == Suspended:
			// It waits again, in this process: back to running until the
			// suspend event marks it. A decision given meanwhile goes to
			// Permissions, for the arguments the person saw only.
			rctx := ctx
			if rec.Decision != nil && sameArgs(rec.Call.Args, inv.Call.Args) {
				rctx = interceptors.WithPriorDecision(ctx, inv.Session, inv.Call.ID, interceptors.PriorDecision(*rec.Decision))
			} else {
				// It was about other arguments: ask again, and keep the
				// arguments asked about now (Pending shows them, and a
				// decision given through the store is about them).
				rec.Decision, rec.Call = nil, inv.Call
			}
			rec.State, rec.Reason, rec.Owner = Running, "", owner
			if err := s.put(bctx, k, rec, rev); conflict(err) {
				continue // changed meanwhile: look again
			} else if err != nil {
				return toolkit.Failure(events.StateError, fmt.Errorf("durable: cannot record call %q: %w", inv.Call.ID, err))
			}
			return s.run(rctx, k, owner, inv, next)
		default: // running: its process stopped, or it runs elsewhere now
			if a, _ := inv.Tool.Spec().Annotations(); !a.IdempotentHint { // read-only tools are idempotent
				return toolkit.Failure(events.StateError, fmt.Errorf("call %q of tool %q: %w", inv.Call.ID, inv.Call.Name, ErrMaybeRan))
			}
			rec.Owner = owner
			if err := s.put(bctx, k, rec, rev); conflict(err) {
				continue // someone else took it over
			} else if err != nil {
				return toolkit.Failure(events.StateError, fmt.Errorf("durable: cannot record call %q: %w", inv.Call.ID, err))
			}
			return s.run(ctx, k, owner, inv, next)
		}
	}
	return toolkit.Failure(events.StateError, fmt.Errorf("durable: call %q keeps changing in the bucket", inv.Call.ID))
}

// run runs the call, claimed by owner, and stores its outcome. Its waits
// are recorded as they begin and end (Invocation.OnWait): a call
// interrupted while it waited stays pending; another interrupted call is
// forgotten, so that running it again runs it (one a person decided about
// goes back to pending with the decision, which applies again).
func (s *Store) run(ctx context.Context, k, owner string, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
	remove := inv.OnWait(func(reason string) { s.recordWait(ctx, k, owner, reason, inv) })
	out := next(ctx, inv)
	remove()
	bctx := bookkeeping(ctx)
	if out.State == events.StateInterrupted {
		rec, rev, err := s.get(bctx, k)
		switch {
		case err != nil || rec.Owner != owner || rec.State != Running:
			// Another run's now, done, or recorded as waiting already.
		case rec.Decision != nil:
			rec.State, rec.Reason = Suspended, "approval"
			_ = s.put(bctx, k, rec, rev)
		case inv.Waiting() != "":
			// It waited when it was interrupted, but recording the wait
			// failed.
			rec.State, rec.Reason = Suspended, inv.Waiting()
			_ = s.put(bctx, k, rec, rev)
		default:
			_ = s.b.Delete(bctx, k, rev)
		}
		return out
	}
	if err := s.finish(bctx, k, owner, out); err != nil {
		inv.Logger().Warn().Err(err).Str("call", inv.Call.ID).Msg("durable: the outcome was not stored")
	}
	return out
}

// recordWait records that owner's run of the call begins to wait for reason
// (running to suspended), or with reason "" that its wait is over (back to
// running), before anyone can see it wait or before it goes on. A record
// another run holds, or one done, is left as it is. A write that fails is
// logged: the call goes on (a process killed while it waits then leaves it
// running, and running it again gives ErrMaybeRan).
func (s *Store) recordWait(ctx context.Context, k, owner, reason string, inv *toolkit.Invocation) {
	err := s.update(bookkeeping(ctx), k, func(r *Record) bool {
		if r.Owner != owner {
			return false
		}
		switch {
		case reason != "" && r.State == Running:
			r.State, r.Reason = Suspended, reason
		case reason == "" && r.State == Suspended:
			r.State, r.Reason = Running, ""
		default:
			return false
		}
		return true
	})
	if err != nil {
		inv.Logger().Warn().Err(err).Str("call", inv.Call.ID).Str("waits_for", reason).Msg("durable: the call's wait was not recorded")
	}
}

// sameArgs reports whether two calls' arguments are equal as JSON.
func sameArgs(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	return reflect.DeepEqual(x, y)
}

// finish stores owner's outcome of the call, unless another run holds the
// record now (or stored its outcome): that run's stands.
func (s *Store) finish(ctx context.Context, k, owner string, out toolkit.Outcome) error {
	var held string
	err := s.update(ctx, k, func(r *Record) bool {
		if r.Owner != owner || r.State == Done {
			held = r.State
			return false
		}
		r.State, r.Reason, r.Result = Done, "", stored(out)
		return true
	})
	if err == nil && held != "" {
		err = fmt.Errorf("durable: %s: another run of the call holds its record (%s): its outcome stands", k, held)
	}
	return err
}

// DeliverOption configures Deliver.
type DeliverOption func(*deliverConfig)

type deliverConfig struct{ perms *interceptors.Permissions }

// WithPermissions makes Deliver pass decisions given with Store.Approve and
// Store.Reject to the calls that wait for them in p.
func WithPermissions(p *interceptors.Permissions) DeliverOption {
	return func(c *deliverConfig) { c.perms = p }
}

// Deliver watches the bucket for answers (Store.Answer) to calls that wait
// in tk's sessions in this process, and submits them; with WithPermissions,
// decisions about calls that wait for approval too. stop ends it.
func (s *Store) Deliver(ctx context.Context, tk *toolkit.Toolkit, opts ...DeliverOption) (stop func(), err error) {
	var cfg deliverConfig
	for _, o := range opts {
		o(&cfg)
	}
	ctx, cancel := context.WithCancel(ctx)
	w, err := s.kv.WatchAll(ctx, jetstream.UpdatesOnly())
	if err != nil {
		cancel()
		return nil, fmt.Errorf("durable: watching answers: %w", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e := range w.Updates() {
			if e == nil || e.Operation() != jetstream.KeyValuePut {
				continue
			}
			var rec Record
			if json.Unmarshal(e.Value(), &rec) != nil || rec.State != Suspended {
				continue
			}
			if rec.Decision != nil && cfg.perms != nil {
				// ErrNotPending: it waits in no process now, and the
				// decision applies when the call runs again.
				if d := rec.Decision; d.Approve {
					var opts []interceptors.ApproveOption
					if d.Args != nil {
						opts = append(opts, interceptors.WithArgs(d.Args))
					}
					_ = cfg.perms.Approve(rec.Session, rec.Call.ID, opts...)
				} else {
					_ = cfg.perms.Reject(rec.Session, rec.Call.ID, d.Reason)
				}
				continue
			}
			if rec.Answer == nil {
				continue
			}
			if !waiting(tk, rec.Session, rec.Call.ID) {
				continue
			}
			sess, err := tk.Session(rec.Session)
			if err != nil {
				continue
			}
			var aerr error
			if rec.Answer.Error != "" {
				aerr = errors.New(rec.Answer.Error)
			}
			if err := sess.Submit(rec.Call.ID, rec.Answer.Content, aerr); isOutputError(err) {
				// The answer breaks the tool's output schema and cannot be
				// given again: the call fails with the problems, as a
				// handler's result that breaks it does.
				var oe *toolkit.OutputError
				if errors.As(err, &oe) {
					err = oe
				}
				_ = sess.Submit(rec.Call.ID, nil, err)
			}
		}
	}()
	return func() {
		_ = w.Stop()
		cancel()
		<-done
	}, nil
}

// waiting reports whether the call waits in a session tk already has
// (without making the session).
func waiting(tk *toolkit.Toolkit, session, callID string) bool {
	found := false
	for _, id := range tk.Sessions() {
		if id != session {
			continue
		}
		sess, err := tk.Session(id)
		if err != nil {
			return false
		}
		for _, c := range sess.Suspended() {
			if c.ID == callID {
				found = true
			}
		}
	}
	return found
}

// errNoJetStream is New's error for a nil JetStream context, which it would
// otherwise take to the first request and panic there.
var errNoJetStream = errors.New("durable: no JetStream context (nil): natsbus.Bus.JetStream is nil unless the bus was opened WithDurable; pass jetstream.New(bus.Conn()) or open the bus durable")

// isOutputError reports whether err is a result the tool's output schema
// refused.
func isOutputError(err error) bool {
	_, ok := errors.AsType[*toolkit.OutputError](err)
	return ok
}
