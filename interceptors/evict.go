package interceptors

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/toolkit"
)

// Defaults of [Evict].
const (
	defaultEvictLimit        = 32 << 10
	defaultEvictPreviewLines = 10
	defaultEvictLineBytes    = 200
	// defaultEvictHint tells the model how to read a stored result.
	defaultEvictHint = "Read it in parts (for example 100 lines at a time) rather than all at once."
)

// evictStoreTimeout bounds a store. It runs on a context of its own: the
// call's deadline may have passed (a timed-out call's partial output is
// evicted too) and a slow store must not hold the call forever.
const evictStoreTimeout = 10 * time.Second

// Metadata keys Evict sets on the call's result (for code, not the model).
const (
	EvictMetaLocation = "evict.location" // where the full result is
	EvictMetaBytes    = "evict.bytes"    // its size
	EvictMetaError    = "evict.error"    // why storing failed (the result was truncated instead)
)

// EvictOption configures [Evict].
type EvictOption func(*evictConfig)

type evictConfig struct {
	passes      *toolkit.Local[*atomic.Int64] // how many times a call entered Evict: more than once inside Retry
	limit       int
	lines       int
	lineBytes   int
	backend     Backend
	successOnly bool
	hint        string
	excluded    map[string]bool // tools whose results are never evicted
}

// EvictLimit sets the size, in bytes of text, above which a result is
// evicted (default 32 KiB).
func EvictLimit(bytes int) EvictOption {
	return func(c *evictConfig) { c.limit = max(bytes, 1) }
}

// EvictPreview sets how many of the first lines the replacement message
// shows and how many bytes of each (default 10 lines of 200 bytes).
func EvictPreview(lines, maxLineBytes int) EvictOption {
	return func(c *evictConfig) { c.lines, c.lineBytes = max(lines, 0), max(maxLineBytes, 1) }
}

// EvictBackend stores results with b. The default is
// DirBackend("", 1000, 256<<20): at most 1000 files and 256 MiB in the
// default folder; another folder or other limits are another [DirBackend].
func EvictBackend(b Backend) EvictOption { return func(c *evictConfig) { c.backend = b } }

// EvictSuccessOnly leaves failed calls' results alone: only successes are
// evicted.
func EvictSuccessOnly() EvictOption { return func(c *evictConfig) { c.successOnly = true } }

// EvictHint sets the sentence that tells the model how to read the stored
// result, for example naming the tool that reads it (default "Read it in
// parts (for example 100 lines at a time) rather than all at once.").
func EvictHint(hint string) EvictOption { return func(c *evictConfig) { c.hint = hint } }

// filesystemTools are the file-system tools the seeds leave alone
// (Spring AI Alibaba's excludeFilesystemTools, after deepagents).
var filesystemTools = []string{"ls", "read_file", "write_file", "edit_file", "glob", "grep"}

// EvictExcludeFilesystemTools leaves the results of the usual file-system
// tools alone, as the seeds do: ls, read_file, write_file, edit_file, glob
// and grep (exact names). They page through files themselves, and
// read_file is how the model reads an evicted result back: storing its
// output would send the model in a circle.
func EvictExcludeFilesystemTools() EvictOption {
	return func(c *evictConfig) {
		c.excluded = map[string]bool{}
		for _, t := range filesystemTools {
			c.excluded[t] = true
		}
	}
}

// Evict returns an interceptor, named "evict", that keeps large results out
// of the conversation. A result whose text is larger than the limit is
// stored in full through a [Backend] (by default files in the system's
// temporary folder, see [EvictBackend]) and replaced by a short message:
// where it is, its size, its first lines, its last line and how to read
// more. Binary parts (images) stay in the
// result. The outcome's state and error are kept: an evicted failure is
// still a failure.
//
// If storing fails, the result's text is truncated to the limit instead,
// with a note saying why (binary parts stay): the model is never pointed at
// a file that does not exist.
//
// EvictExcludeFilesystemTools leaves the usual file-system tools alone; to
// leave others alone, such as the one that reads stored results back, set
// the returned interceptor's Match (or Tools):
//
//	ev := interceptors.Evict()
//	ev.Match = func(t *toolkit.Tool) bool { return t.Name() != "read_stored" }
func Evict(opts ...EvictOption) toolkit.Interceptor {
	cfg := &evictConfig{
		limit: defaultEvictLimit, lines: defaultEvictPreviewLines, lineBytes: defaultEvictLineBytes,
		hint: defaultEvictHint, passes: toolkit.NewCallLocal[*atomic.Int64](),
	}
	for _, o := range opts {
		o(cfg)
	}
	if cfg.backend == nil {
		cfg.backend = DirBackend("", defaultEvictMaxFiles, defaultEvictMaxBytes)
	}
	return toolkit.Interceptor{
		Name: "evict",
		Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Result {
			if cfg.excluded[toolName(inv)] {
				return next(ctx, inv)
			}
			n := cfg.passes.LoadOrInit(inv, func() *atomic.Int64 { return new(atomic.Int64) })
			pass := n.Add(1)
			return cfg.evict(ctx, inv, next(ctx, inv), pass, n)
		},
	}
}

// evict stores out if it is too large. pass is this pass's number among the
// call's passes through Evict, passes their count so far.
func (cfg *evictConfig) evict(ctx context.Context, inv *toolkit.Invocation, out toolkit.Result, pass int64, passes *atomic.Int64) toolkit.Result {
	success := out.State == "" || out.State == events.StateSuccess
	if out.State == events.StateSuspended || cfg.successOnly && !success {
		return out
	}
	if sanitizeSize(out.Content) <= cfg.limit {
		return out // measured without building the text: most results stay
	}
	text := events.ContentText(out.Content)
	// Binary parts stay as they are (the file holds only their
	// placeholder), beside the reference or beside the cut text.
	nonBinary, binary := splitBinary(out.Content)
	// Run ids are unique across processes and restarts; models reuse call
	// ids (call_0, ...), so the call id alone would overwrite results.
	ids := []string{inv.Session, inv.BatchID(), inv.Call.ID}
	if pass > 1 {
		// Each pass gets a file of its own: a pass a Timeout gave up on may
		// still be storing its result when the retry's reference has gone
		// to the model, and must not write over the file it names.
		ids = append(ids, "pass-"+strconv.FormatInt(pass, 10))
	}
	name := evictFileName(inv.Call.Name, ids...)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), evictStoreTimeout)
	loc, err := cfg.backend.Put(sctx, name, []byte(text))
	cancel()
	if err == nil && loc == "" {
		err = fmt.Errorf("the store returned no location")
	}
	if err != nil {
		reason := sanitizeCutString(err.Error(), 300)
		if passes.Load() == pass {
			inv.Meta(EvictMetaError, err.Error())
		}
		// The text is cut.
		textual := out
		textual.Content = nonBinary
		out.Content = append(sanitizeTruncate(textual, cfg.limit, func(int) string {
			return fmt.Sprintf("\n[truncated: the full result (%d bytes) could not be stored: %s]\n", len(text), reason)
		}), binary...)
		return out
	}
	if passes.Load() == pass {
		// A pass that a later one replaced must not point the call's
		// metadata at its own file.
		inv.Meta(EvictMetaLocation, loc)
		inv.Meta(EvictMetaBytes, len(text))
	}
	out.Content = append([]events.Part{events.Text(cfg.message(text, loc))}, binary...)
	return out
}

// splitBinary returns parts' non-binary parts and its binary ones, each in
// their order.
func splitBinary(parts []events.Part) (nonBinary, binary []events.Part) {
	for _, p := range parts {
		if p.Type == events.PartBinary {
			binary = append(binary, p)
		} else {
			nonBinary = append(nonBinary, p)
		}
	}
	return nonBinary, binary
}

// message builds what the model reads instead of the result:
//
//	The result is too large to show here (123456 bytes, 2345 lines). It was saved in full to LOCATION.
//	HINT
//
//	First 10 lines:
//	     1	...
//	Last line (2345):
//	  2345	...
func (cfg *evictConfig) message(text, loc string) string {
	total := strings.Count(text, "\n")
	if !strings.HasSuffix(text, "\n") {
		total++
	}
	var b strings.Builder
	lines := fmt.Sprintf("%d lines", total)
	if total == 1 {
		lines = "1 line"
	}
	fmt.Fprintf(&b, "The result is too large to show here (%d bytes, %s). It was saved in full to %s\n", len(text), lines, loc)
	if cfg.hint != "" {
		b.WriteString(cfg.hint)
		b.WriteByte('\n')
	}
	shown, rest := 0, text
	for shown < cfg.lines && rest != "" {
		if shown == 0 {
			if n := min(cfg.lines, total); n == 1 {
				b.WriteString("\nFirst line:\n")
			} else {
				fmt.Fprintf(&b, "\nFirst %d lines:\n", n)
			}
		}
		var line string
		line, rest, _ = strings.Cut(rest, "\n")
		shown++
		fmt.Fprintf(&b, "%6d\t%s\n", shown, cfg.previewLine(line))
	}
	if total > shown {
		last := strings.TrimSuffix(text, "\n")
		last = last[strings.LastIndexByte(last, '\n')+1:]
		fmt.Fprintf(&b, "Last line (%d):\n%6d\t%s\n", total, total, cfg.previewLine(last))
	}
	return b.String()
}

func (cfg *evictConfig) previewLine(line string) string {
	line = strings.TrimSuffix(line, "\r")
	if len(line) <= cfg.lineBytes {
		return line
	}
	return sanitizeCutString(line, cfg.lineBytes) + " [...]"
}

// evictFileName returns the name under which [Evict] stores a result:
// a readable prefix made from the tool's name, then the first 32 hex digits
// of a SHA-256 of the ids, then ".txt", for example
// "count_lines-3f2a9c...e1.txt". No id can steer the name (separators, "..",
// NUL and length are all hashed away) and it stays short enough for any
// file system. Evict passes the session, the run id and the call id, and
// from a call's second pass through it on (Evict inside [Retry]) also
// "pass-N", so that every attempt's result has a file of its own.
func evictFileName(tool string, ids ...string) string {
	h := sha256.New()
	var n [binary.MaxVarintLen64]byte
	for _, id := range ids {
		// Length-prefixed, so ("a", "bc") and ("ab", "c") differ.
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(id)))])
		h.Write([]byte(id))
	}
	sum := hex.EncodeToString(h.Sum(nil))[:32]
	var p strings.Builder
	for _, r := range tool {
		if p.Len() >= 40 {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			p.WriteRune(r)
		case r < utf8.RuneSelf && p.Len() > 0 && !strings.HasSuffix(p.String(), "_"):
			p.WriteByte('_')
		}
	}
	prefix := strings.Trim(p.String(), "_-")
	if prefix == "" {
		prefix = "result"
	}
	return prefix + "-" + sum + ".txt"
}
