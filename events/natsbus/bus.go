package natsbus

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
	"github.com/rs/zerolog"

	"github.com/toolstream/toolstream/events"
)

// EnvURL names the environment variable that, when set and neither WithURL
// nor WithListen is given, makes Open connect to that NATS server instead of
// embedding one.
const EnvURL = "TOOLSTREAM_NATS_URL"

// Bus is the NATS side of toolstream: a connection (to an embedded server by
// default), the subjects events go to, optionally a JetStream stream that
// keeps them, and the publisher that sends a toolkit's events.
type Bus struct {
	nc       *nats.Conn
	url      string              // "" for the embedded server
	natsOpts []nats.Option       // Open's, for the SSE bridge's own connection
	js       jetstream.JetStream // nil unless durable
	srv      *server.Server      // nil when connected to a URL
	storeDir string              // removed on Close when we made it
	ownDir   bool
	subjects events.Subjects
	durable  *Durable
	log      zerolog.Logger
	pub      *Publisher
	hub      *sseHub // nil unless durable
	wsOn     bool

	closing  atomic.Bool   // the first Close took it
	closed   chan struct{} // closed when Close is over; closeErr is set
	closeErr error
}

// Durable configures the JetStream stream that keeps events for replay. The
// zero value of a field picks its default.
type Durable struct {
	// Stream is the stream's name; default "TOOLSTREAM".
	Stream string
	// MaxAge drops events older than this; default 24h.
	MaxAge time.Duration
	// MaxBytes caps the stream's size, dropping the oldest events; default
	// 1 GiB on disk, 64 MiB in memory.
	MaxBytes int64
	// Duplicates is the window in which a republished event (same
	// Nats-Msg-Id) is stored once; default 2 minutes.
	Duplicates time.Duration
	// Memory keeps the stream in memory instead of on disk.
	Memory bool
	// Replicas is how many servers of a JetStream cluster keep the stream
	// (1 to 5; default 1). With 3, the stream survives the loss of one
	// server.
	Replicas int
	// Bind uses the stream as another party (the agent, an operator)
	// created it: Open neither creates nor updates it, nor asks for its
	// configuration, so that a NATS user that may only read the stream (an
	// SSE bridge in a process of its own, docs/security.md) can open a
	// durable bus to Replay and serve SSE. The fields other than Stream are
	// then unused, and a stream that does not exist is reported by the
	// first Replay.
	Bind bool
}

func (d Durable) withDefaults() Durable {
	if d.Stream == "" {
		d.Stream = "TOOLSTREAM"
	}
	if d.MaxAge <= 0 {
		d.MaxAge = 24 * time.Hour
	}
	if d.MaxBytes <= 0 {
		d.MaxBytes = 1 << 30
		if d.Memory {
			d.MaxBytes = 64 << 20
		}
	}
	if d.Duplicates <= 0 {
		d.Duplicates = 2 * time.Minute
	}
	return d
}

type busOptions struct {
	url        string
	natsOpts   []nats.Option
	prefix     string
	durable    *Durable
	listen     string
	websocket  string
	storeDir   string
	log        zerolog.Logger
	queue      int
	maxPayload int32
}

// Option configures Open.
type Option func(*busOptions)

// WithURL connects to a NATS server or cluster (comma-separated URLs)
// instead of starting an embedded server.
func WithURL(url string) Option { return func(o *busOptions) { o.url = url } }

// WithNATSOptions passes options to nats.Connect: credentials, TLS, a
// connection name, reconnect settings.
func WithNATSOptions(opts ...nats.Option) Option {
	return func(o *busOptions) { o.natsOpts = append(o.natsOpts, opts...) }
}

// WithPrefix sets the subject prefix (default "toolstream").
func WithPrefix(prefix string) Option { return func(o *busOptions) { o.prefix = prefix } }

// WithDurable keeps events in a JetStream stream so that subscribers can
// resume from a stream sequence and miss nothing.
func WithDurable(d Durable) Option { return func(o *busOptions) { o.durable = &d } }

// WithListen makes the embedded server accept NATS clients over TCP on addr
// (for example "127.0.0.1:4222", or "127.0.0.1:0" for a free port), so that
// other processes (the nats CLI, another service) can watch. Without it the
// embedded server has no listener at all.
func WithListen(addr string) Option { return func(o *busOptions) { o.listen = addr } }

// WithWebSocket makes the embedded server accept NATS WebSocket clients
// (nats.js in a browser) on addr, without TLS: meant for loopback.
func WithWebSocket(addr string) Option { return func(o *busOptions) { o.websocket = addr } }

// WithStoreDir sets the embedded server's JetStream directory. By default a
// private temporary directory is made, and removed by Close.
func WithStoreDir(dir string) Option { return func(o *busOptions) { o.storeDir = dir } }

// WithLogger sets the logger (silent by default).
func WithLogger(l zerolog.Logger) Option { return func(o *busOptions) { o.log = l } }

// WithPublisherQueue sets how many progress events may wait for NATS before
// newer ones are dropped (default 65536, a few hundred bytes each: enough for
// a burst of tens of thousands of progress events). Other events are never
// dropped.
func WithPublisherQueue(n int) Option { return func(o *busOptions) { o.queue = max(n, 1) } }

// Open connects to NATS: to the URL given with WithURL or in
// TOOLSTREAM_NATS_URL, or else to a new embedded server (JetStream on, store
// in a private temporary directory, no signal handlers, no listener unless
// asked for).
func Open(ctx context.Context, opts ...Option) (*Bus, error) {
	o := busOptions{log: zerolog.Nop(), queue: 1 << 16}
	for _, opt := range opts {
		opt(&o)
	}
	if o.url == "" && o.listen == "" {
		// A program that asks for a listening embedded server gets one:
		// the variable only stands in for WithURL.
		o.url = os.Getenv(EnvURL)
	}
	subjects, err := events.NewSubjects(o.prefix)
	if err != nil {
		return nil, err
	}
	b := &Bus{subjects: subjects, log: o.log, closed: make(chan struct{})}
	if o.url == "" {
		if err := b.startServer(&o); err != nil {
			return nil, err
		}
	}
	if err := b.connect(ctx, &o); err != nil {
		b.shutdownServer()
		return nil, err
	}
	if o.durable != nil {
		if err := b.setUpStream(ctx, o.durable.withDefaults()); err != nil {
			b.nc.Close()
			b.shutdownServer()
			return nil, err
		}
	}
	b.pub = newPublisher(b, o.queue)
	return b, nil
}

func (b *Bus) startServer(o *busOptions) error {
	dir := o.storeDir
	if dir == "" {
		d, err := os.MkdirTemp("", "toolstream-nats-")
		if err != nil {
			return fmt.Errorf("events: embedded server: %w", err)
		}
		dir, b.ownDir = d, true
	}
	b.storeDir = dir
	sopts := &server.Options{
		ServerName:         "toolstream-" + nuid.Next(),
		JetStream:          true,
		StoreDir:           dir,
		JetStreamMaxMemory: 256 << 20,
		JetStreamMaxStore:  4 << 30,
		NoLog:              true,
		NoSigs:             true,
		DontListen:         o.listen == "",
	}
	fail := func(err error) error {
		b.removeDir()
		return err
	}
	if o.listen != "" {
		host, port, err := listenAddr("listen", "NATS clients", o.listen)
		if err != nil {
			return fail(err)
		}
		sopts.Host, sopts.Port = host, port
	}
	if o.websocket != "" {
		host, port, err := listenAddr("websocket", "WebSocket clients", o.websocket)
		if err != nil {
			return fail(err)
		}
		sopts.Websocket.Host, sopts.Websocket.Port, sopts.Websocket.NoTLS = host, port, true
		b.wsOn = true
	}
	srv, err := server.NewServer(sopts)
	if err != nil {
		return fail(fmt.Errorf("events: embedded server: %w", err))
	}
	// The server reports what stops it (a port taken after our check, a
	// store it cannot write) only to its logger, then waits: catch it.
	fatal := &fatalLog{log: b.log}
	srv.SetLogger(fatal, false, false)
	srv.Start() // listens before it returns
	if err := fatal.err(); err != nil {
		srv.Shutdown()
		srv.WaitForShutdown()
		return fail(fmt.Errorf("events: embedded server: %w", err))
	}
	if !srv.ReadyForConnections(10 * time.Second) {
		srv.Shutdown()
		srv.WaitForShutdown()
		return fail(errors.New("events: embedded server did not start within 10s"))
	}
	b.srv = srv
	return nil
}

// listenAddr parses an address the embedded server is to listen on and, for
// a fixed port, checks that it can be had: a port already taken (another
// demo, another NATS server) fails here at once with the system's error
// ("address already in use") instead of a server that never gets ready.
func listenAddr(what, clients, addr string) (string, int, error) {
	host, port, err := splitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("events: %s address %q: %w", what, addr, err)
	}
	if port != server.RANDOM_PORT {
		l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			return "", 0, fmt.Errorf("events: embedded server cannot listen for %s on %s: %w", clients, addr, err)
		}
		l.Close()
	}
	return host, port, nil
}

// fatalLog is the embedded server's logger: it keeps the first fatal error
// (the server does not stop on one by itself) and passes errors on to the
// bus's logger.
type fatalLog struct {
	log   zerolog.Logger
	mu    sync.Mutex
	first error
}

func (f *fatalLog) Fatalf(format string, v ...any) {
	err := fmt.Errorf(format, v...)
	f.log.Error().Err(err).Msg("toolstream: embedded NATS server")
	f.mu.Lock()
	if f.first == nil {
		f.first = err
	}
	f.mu.Unlock()
}

func (f *fatalLog) Errorf(format string, v ...any) {
	f.log.Error().Msgf("toolstream: embedded NATS server: "+format, v...)
}

func (f *fatalLog) err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.first
}

func (*fatalLog) Noticef(string, ...any) {}
func (*fatalLog) Warnf(string, ...any)   {}
func (*fatalLog) Debugf(string, ...any)  {}
func (*fatalLog) Tracef(string, ...any)  {}

// splitHostPort parses "host:port"; port 0 asks for a free one.
func splitHostPort(addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("bad port %q", p)
	}
	if port == 0 {
		port = server.RANDOM_PORT
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return host, port, nil
}

// connectTimeout bounds the first connection to a NATS URL when the
// caller's context has no earlier deadline (nats.go's own default).
const connectTimeout = 2 * time.Second

func (b *Bus) connect(ctx context.Context, o *busOptions) error {
	timeout := connectTimeout
	if d, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(d))
	}
	if err := ctx.Err(); err != nil || timeout <= 0 {
		return fmt.Errorf("events: cannot connect to NATS at %s: %w", redact(o.url), cmp.Or(err, context.DeadlineExceeded))
	}
	b.url, b.natsOpts = o.url, o.natsOpts
	if b.srv != nil {
		b.url = ""
	}
	nc, err := b.dial("toolstream", timeout, false)
	if err != nil {
		return fmt.Errorf("events: cannot connect to NATS at %s: %w", redact(b.url), connectCause(ctx, b.url, timeout, err))
	}
	b.nc = nc
	return nil
}

// dial opens a connection to the bus's NATS (its embedded server or its
// URL) with the options Open was given (credentials, TLS). name is the
// connection's name unless those options set one. A connection of the bus's
// own (own: the SSE bridge's) keeps its name and handlers over the caller's:
// their handlers are about the connection they asked for, and its closing
// when the last viewer has gone is nothing they need to hear of.
func (b *Bus) dial(name string, timeout time.Duration, own bool) (*nats.Conn, error) {
	log := b.log
	mine := []nats.Option{
		nats.Name(name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		// The first connection must succeed (a wrong URL is an error the
		// caller sees at once); after that, outages are ridden out.
		nats.RetryOnFailedConnect(false),
		nats.Timeout(timeout),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			log.Warn().Err(err).Str("connection", name).Msg("toolstream: disconnected from NATS; events are buffered until it is back")
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			log.Info().Str("url", nc.ConnectedUrlRedacted()).Str("connection", name).Msg("toolstream: reconnected to NATS")
		}),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			e := log.Error().Err(err).Str("connection", name)
			if sub != nil {
				e = e.Str("subject", sub.Subject)
			}
			e.Msg("toolstream: NATS error")
		}),
	}
	var opts []nats.Option
	if b.srv != nil {
		opts = append(opts, nats.InProcessServer(b.srv))
	}
	if own {
		opts = append(append(opts, b.natsOpts...), mine...)
		opts = append(opts, nats.ClosedHandler(nil), nats.ConnectHandler(nil))
	} else {
		opts = append(append(opts, mine...), b.natsOpts...)
	}
	return nats.Connect(b.url, opts...)
}

// connectCause explains a failed first connection. nats.go reports a refused
// connection as "no servers available": dialling the servers once more
// recovers the system's reason ("connection refused") for the message.
func connectCause(ctx context.Context, urls string, timeout time.Duration, err error) error {
	if !errors.Is(err, nats.ErrNoServers) {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	for _, u := range strings.Split(urls, ",") {
		pu, perr := url.Parse(strings.TrimSpace(u))
		if perr != nil || pu.Host == "" {
			continue
		}
		host := pu.Host
		if pu.Port() == "" {
			host = net.JoinHostPort(pu.Hostname(), strconv.Itoa(nats.DefaultPort))
		}
		c, derr := d.DialContext(ctx, "tcp", host)
		if derr != nil {
			return fmt.Errorf("%w (%w)", err, derr)
		}
		c.Close()
	}
	return err
}

func (b *Bus) setUpStream(ctx context.Context, d Durable) error {
	js, err := jetstream.New(b.nc,
		jetstream.WithPublishAsyncMaxPending(asyncMaxPending),
		jetstream.WithPublishAsyncTimeout(10*time.Second),
		jetstream.WithPublishAsyncErrHandler(func(_ jetstream.JetStream, m *nats.Msg, err error) {
			if b.pub != nil {
				b.pub.retry(m, err)
			}
		}),
		jetstream.WithPublishAsyncAckHandler(func(_ jetstream.JetStream, m *nats.Msg, _ *jetstream.PubAck) {
			if b.pub != nil {
				b.pub.acked(m)
			}
		}))
	if err != nil {
		return fmt.Errorf("events: JetStream: %w", err)
	}
	if d.Bind {
		b.js, b.durable = js, &d
		b.hub = newHub(b)
		return nil
	}
	storage := jetstream.FileStorage
	if d.Memory {
		storage = jetstream.MemoryStorage
	}
	cfg := jetstream.StreamConfig{
		Name:        d.Stream,
		Description: "toolstream tool-call events",
		// Event subjects only: a remote tool call (<prefix>._tools.<tool>)
		// is not stored, nor acknowledged to its caller's inbox.
		Subjects:    []string{b.subjects.Events()},
		Storage:     storage,
		Retention:   jetstream.LimitsPolicy,
		Discard:     jetstream.DiscardOld,
		MaxAge:      d.MaxAge,
		MaxBytes:    d.MaxBytes,
		Duplicates:  d.Duplicates,
		AllowDirect: true, // the SSE bridge reads with direct gets
		Replicas:    d.Replicas,
	}
	if _, err := js.CreateOrUpdateStream(ctx, cfg); err != nil {
		if err, ok := denied(b.nc, err); ok {
			return fmt.Errorf("events: creating stream %s over %s: %w; a user that may only read the stream opens the bus with Durable{Bind: true}", d.Stream, cfg.Subjects[0], err)
		}
		return fmt.Errorf("events: creating stream %s over %s: %w", d.Stream, cfg.Subjects[0], err)
	}
	b.js, b.durable = js, &d
	b.hub = newHub(b)
	return nil
}

// Conn returns the NATS connection.
func (b *Bus) Conn() *nats.Conn { return b.nc }

// JetStream returns the JetStream context, or nil when the bus is not
// durable.
func (b *Bus) JetStream() jetstream.JetStream { return b.js }

// Stream returns the name of the events stream, or "" when not durable.
func (b *Bus) Stream() string {
	if b.durable == nil {
		return ""
	}
	return b.durable.Stream
}

// Subjects returns the subject scheme of the bus.
func (b *Bus) Subjects() events.Subjects { return b.subjects }

// Server returns the embedded server, or nil when connected to a URL.
func (b *Bus) Server() *server.Server { return b.srv }

// ClientURL returns a URL other processes can connect to: the embedded
// server's TCP listener (WithListen), or the URL given. It is "" for an
// embedded server without a listener.
func (b *Bus) ClientURL() string {
	if b.srv == nil {
		return b.nc.ConnectedUrlRedacted()
	}
	if b.srv.Addr() == nil {
		return ""
	}
	return b.srv.ClientURL()
}

// WebSocketURL returns the embedded server's WebSocket URL (WithWebSocket),
// or "".
func (b *Bus) WebSocketURL() string {
	if b.srv == nil || !b.wsOn {
		return ""
	}
	return b.srv.WebsocketURL()
}

// Publisher returns the bus's publisher: attach it to a toolkit as an inline
// observer.
func (b *Bus) Publisher() *Publisher { return b.pub }

// Close flushes what the publisher holds, closes the connection and shuts
// the embedded server down, removing its temporary store. On a durable bus
// it waits for the server to acknowledge every event, retrying those whose
// publish failed once NATS is back, bounded by ctx (10s when ctx has no
// deadline); what is still unacknowledged then is given up: counted in
// Stats.Undelivered, logged, and reported in the error Close returns.
// Without JetStream it waits, bounded alike, for a connection that is away
// to come back and send the events in its reconnect buffer, and counts
// those left there the same way. Close may be called more than once and from several goroutines: a Close
// while another is under way waits for it within its own ctx, then returns
// the same error.
func (b *Bus) Close(ctx context.Context) error {
	if b.closing.CompareAndSwap(false, true) {
		b.close(ctx)
		return b.closeErr
	}
	// Another Close is under way, with its own context: wait for it within
	// this one's.
	select {
	case <-b.closed:
		return b.closeErr
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (b *Bus) close(ctx context.Context) {
	defer close(b.closed)
	var errs []error
	if b.hub != nil {
		b.hub.close()
	}
	if b.pub != nil {
		errs = append(errs, b.pub.close(ctx))
	}
	if b.nc != nil && !b.nc.IsClosed() {
		closed := make(chan struct{})
		b.nc.SetClosedHandler(func(*nats.Conn) { close(closed) })
		if err := b.nc.Drain(); err != nil {
			b.nc.Close()
		}
		select {
		case <-closed:
		case <-ctx.Done():
			b.nc.Close()
			errs = append(errs, ctx.Err())
		}
	}
	b.shutdownServer()
	b.closeErr = errors.Join(errs...)
}

func (b *Bus) shutdownServer() {
	if b.srv != nil {
		b.srv.Shutdown()
		b.srv.WaitForShutdown()
	}
	b.removeDir()
}

func (b *Bus) removeDir() {
	if b.ownDir && b.storeDir != "" {
		os.RemoveAll(b.storeDir)
	}
}

// redact hides passwords in (comma-separated) URLs for error messages.
func redact(urls string) string {
	if urls == "" {
		return "(embedded)"
	}
	parts := strings.Split(urls, ",")
	for i, u := range parts {
		if pu, err := url.Parse(strings.TrimSpace(u)); err == nil {
			parts[i] = pu.Redacted()
		}
	}
	return strings.Join(parts, ",")
}
