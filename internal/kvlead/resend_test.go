package kvlead

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolstream/toolstream/internal/testutil/natstest"
)

// sameID makes every write name itself id, as the requests of one write
// sent again do, and restores the rule at the end of the test.
func sameID(t *testing.T, id string) {
	old := newID
	newID = func() string { return id }
	t.Cleanup(func() { newID = old })
}

// TestWriteSentAgainIsStoredOnce: a write sent again after the stream
// applied it (its first answer lost, as when the leader dies before
// answering) is reported stored, with the revision it got the first time,
// and stored once. This is what makes sending writes again safe: before,
// jetstream.KeyValue sent a compare-and-set write once, and one sent again
// would have been refused as out of date ("wrong last sequence"), the
// caller told it conflicted although it was stored.
func TestWriteSentAgainIsStoredOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	js := natstest.JetStream(t)
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "again", History: 5}); err != nil {
		t.Fatal(err)
	}
	b := New(js, "again", 0)

	sameID(t, "create-1")
	first, err := b.Create(ctx, "k", []byte("v1"))
	if err != nil {
		t.Fatal(err)
	}
	if again, err := b.Create(ctx, "k", []byte("v1")); err != nil || again != first {
		t.Fatalf("the create sent again: revision %d, %v; want %d, stored", again, err, first)
	}
	sameID(t, "update-1")
	second, err := b.Update(ctx, "k", []byte("v2"), first)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := b.Update(ctx, "k", []byte("v2"), first); err != nil || again != second {
		t.Fatalf("the update sent again: revision %d, %v; want %d, stored", again, err, second)
	}
	sameID(t, "delete-1")
	for range 2 {
		if err := b.Delete(ctx, "k", second); err != nil {
			t.Fatalf("the delete (sent twice): %v", err)
		}
	}
	st, err := js.Stream(ctx, "KV_again")
	if err != nil {
		t.Fatal(err)
	}
	if n := st.CachedInfo().State.Msgs; n != 3 {
		t.Errorf("the stream holds %d messages; want 3 (a create, an update, a delete, each once)", n)
	}
}

// TestRefusedWriteThatWasStoredIsReadBack: a compare-and-set write that the
// stream refuses as out of date, because this very write moved the key on
// (applied by a request whose answer was lost, and its message id no longer
// remembered: a new leader that had not learned it yet, or the duplicate
// window over), is read back and reported stored, with its revision.
func TestRefusedWriteThatWasStoredIsReadBack(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	js := natstest.JetStream(t)
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "forgot"}); err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(ctx, "KV_forgot")
	if err != nil {
		t.Fatal(err)
	}
	cfg := st.CachedInfo().Config
	cfg.Duplicates = 100 * time.Millisecond
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	b := New(js, "forgot", 0)
	sameID(t, "forgotten-1")
	rev, err := b.Create(ctx, "k", []byte("v"))
	if err != nil {
		t.Fatal(err)
	}
	// Until the stream forgets the id: the same message sent again is then
	// refused as out of date, no longer answered as a duplicate.
	m := &nats.Msg{Subject: "$KV.forgot.k", Header: nats.Header{}, Data: []byte("v")}
	m.Header.Set(jetstream.MsgIDHeader, "forgotten-1")
	m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, "0")
	for {
		_, err := js.PublishMsg(ctx, m)
		if isWrongLastSequence(err) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the stream never forgot the message id: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if again, err := b.Create(ctx, "k", []byte("v")); err != nil || again != rev {
		t.Fatalf("the create sent again after its id was forgotten: revision %d, %v; want %d, stored", again, err, rev)
	}
	// Another write's refusal is still a conflict.
	sameID(t, "other-1")
	if _, err := b.Create(ctx, "k", []byte("w")); !errors.Is(err, jetstream.ErrKeyExists) {
		t.Fatalf("another create of the key: %v, want ErrKeyExists", err)
	}
	if _, err := b.Update(ctx, "k", []byte("w"), rev+7); !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		t.Fatalf("an update at another revision: %v, want ErrKeyRevisionMismatch", err)
	}
}

// TestWritesAgreeWithTheBucket: Create, Update, Put and Delete answer as
// jetstream.KeyValue's do: a create of a key that has a value is
// ErrKeyExists, and of a deleted key stores over its marker; an update or
// delete at another revision is ErrKeyRevisionMismatch; jetstream.KeyValue
// reads what they wrote.
func TestWritesAgreeWithTheBucket(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	js := natstest.JetStream(t)
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "agree", History: 1})
	if err != nil {
		t.Fatal(err)
	}
	b := New(js, "agree", 0)
	rev, err := b.Create(ctx, "k", []byte("1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Create(ctx, "k", []byte("x")); !errors.Is(err, jetstream.ErrKeyExists) {
		t.Fatalf("a create of a key that has a value: %v", err)
	}
	if _, err := b.Update(ctx, "k", []byte("x"), rev+1); !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		t.Fatalf("an update at another revision: %v", err)
	}
	if rev, err = b.Update(ctx, "k", []byte("2"), rev); err != nil {
		t.Fatal(err)
	}
	if err := b.Delete(ctx, "k", rev+1); !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		t.Fatalf("a delete at another revision: %v", err)
	}
	if err := b.Delete(ctx, "k", rev); err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Get(ctx, "k"); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("the bucket after the delete: %v", err)
	}
	if rev, err = b.Create(ctx, "k", []byte("3")); err != nil {
		t.Fatalf("a create over the delete marker: %v", err)
	}
	if e, err := kv.Get(ctx, "k"); err != nil || string(e.Value()) != "3" || e.Revision() != rev {
		t.Fatalf("the bucket reads %v after the create over the marker", e)
	}
	if rev, err = b.Put(ctx, "k", []byte("4")); err != nil {
		t.Fatal(err)
	}
	if e, err := kv.Get(ctx, "k"); err != nil || string(e.Value()) != "4" || e.Revision() != rev {
		t.Fatalf("the bucket reads %v after the put", e)
	}
	keys, err := b.Keys(ctx, ">")
	if err != nil || len(keys) != 1 || keys[0] != "k" {
		t.Fatalf("Keys: %v %v", keys, err)
	}
}

// TestBucketGoneFailsAtOnce: once the bucket is deleted, reads and writes
// fail with jetstream.ErrBucketNotFound, not after the bound: a write's "no
// responders" (what an election answers too) is told apart by a read.
func TestBucketGoneFailsAtOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	js := natstest.JetStream(t)
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "gone"}); err != nil {
		t.Fatal(err)
	}
	b := New(js, "gone", time.Minute)
	rev, err := b.Put(ctx, "k", []byte("v"))
	if err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteKeyValue(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	_, _, gerr := b.Get(ctx, "k")
	_, cerr := b.Create(ctx, "j", []byte("v"))
	_, uerr := b.Update(ctx, "k", []byte("v"), rev)
	_, perr := b.Put(ctx, "k", []byte("v"))
	derr := b.Delete(ctx, "k", 0)
	_, kerr := b.Keys(ctx, ">")
	for i, err := range []error{gerr, cerr, uerr, perr, derr, kerr} {
		if !errors.Is(err, jetstream.ErrBucketNotFound) {
			t.Errorf("%s after the bucket was deleted: %v, want ErrBucketNotFound", []string{"Get", "Create", "Update", "Put", "Delete", "Keys"}[i], err)
		}
	}
}

// TestNoAnswerIsSentAgainUntilTheBound: a request nobody answers (a leader
// that died with it, a stream that has none yet) is sent again while it
// goes unanswered, until the bound: then a read fails saying so, and a
// write says it may have been stored (ErrMaybeStored), since a request of
// it was taken and may have been applied. Here the requests go to a
// subscriber that never answers.
func TestNoAnswerIsSentAgainUntilTheBound(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	bus := natstest.Bus(t)
	nc, err := nats.Connect("", nats.InProcessServer(bus.Server()))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	silent, err := nc.SubscribeSync("$SILENT.API.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.NewWithAPIPrefix(bus.Conn(), "$SILENT.API")
	if err != nil {
		t.Fatal(err)
	}
	const bound = 700 * time.Millisecond
	b := New(js, "silent", bound)
	_, _, gerr := b.Get(ctx, "k")
	if !errors.Is(gerr, context.DeadlineExceeded) || !strings.Contains(gerr.Error(), "no answer within "+bound.String()) {
		t.Errorf("a read nobody answers: %v", gerr)
	}
	reads, _, _ := silent.Pending()
	_, perr := b.Put(ctx, "k", []byte("v"))
	if !errors.Is(perr, ErrMaybeStored) || !errors.Is(perr, context.DeadlineExceeded) {
		t.Errorf("a write nobody answers: %v, want ErrMaybeStored", perr)
	}
	all, _, _ := silent.Pending()
	if reads < 2 || all-reads < 2 {
		t.Errorf("the read was sent %d times and the write %d times in %v; want each sent again", reads, all-reads, bound)
	}
	t.Logf("sent %d and %d times in %v", reads, all-reads, bound)
}

// TestPermissionFailsAtOnce: a connection that may not publish to the
// bucket's keys (or to the API) is refused by the server with an
// asynchronous error, and its requests go unanswered, as during an
// election. The first request that waits a while finds the refusal: the
// read or write fails with the permissions violation, not after the bound.
func TestPermissionFailsAtOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true,
		JetStream: true, StoreDir: t.TempDir(),
		Users: []*server.User{
			{Username: "admin", Password: "a"},
			{Username: "reader", Password: "r", Permissions: &server.Permissions{
				Publish: &server.SubjectPermission{Allow: []string{">"}, Deny: []string{"$KV.perm.>", "$JS.API.STREAM.INFO.>"}},
			}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("the server did not start")
	}
	connect := func(user, pass string) jetstream.JetStream {
		nc, err := nats.Connect(s.ClientURL(), nats.UserInfo(user, pass), nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		return js
	}
	admin := connect("admin", "a")
	if _, err := admin.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "perm"}); err != nil {
		t.Fatal(err)
	}
	if _, err := New(admin, "perm", 0).Put(ctx, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	b := New(connect("reader", "r"), "perm", time.Minute)
	if v, _, err := b.Get(ctx, "k"); err != nil || string(v) != "v" {
		t.Fatalf("the reader's read: %q %v", v, err)
	}
	_, perr := b.Put(ctx, "k", []byte("w"))
	_, kerr := b.Keys(ctx, ">")
	for i, err := range []error{perr, kerr} {
		if !errors.Is(err, nats.ErrPermissionViolation) || errors.Is(err, ErrMaybeStored) {
			t.Errorf("%s without the permission: %v, want the permissions violation", []string{"Put", "Keys"}[i], err)
		}
	}
	if v, _, err := b.Get(ctx, "k"); err != nil || string(v) != "v" {
		t.Fatalf("after the refused write the key holds %q %v", v, err)
	}
}
