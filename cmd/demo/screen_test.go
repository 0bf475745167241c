package main

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// screen is a small terminal for the tests, enough to replay what the demo
// writes: printable characters (East Asian wide ones take two cells), tab,
// CR, LF, cursor up (CSI n A) and erase to the end of the screen (CSI J).
// Like xterm it wraps a line that reaches its width onto the next row; the
// tests count those wraps, since the demo must never cause one. Anything
// else a terminal would act on (other sequences, control characters, C1
// controls, bidirectional overrides, invalid UTF-8) is recorded in bad.
type screen struct {
	cols     int
	rows     [][]rune // the screen and everything scrolled above it
	row, col int
	wraps    int      // lines the terminal had to wrap
	ups      []int    // cursor-up distances, in order
	bad      []string // what a terminal would have acted on
}

func newScreen(cols int) *screen { return &screen{cols: cols, rows: [][]rune{nil}} }

func (s *screen) write(p string) {
	for i := 0; i < len(p); {
		r, size := utf8.DecodeRuneInString(p[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			s.bad = append(s.bad, fmt.Sprintf("invalid UTF-8 %#x", p[i]))
		case r == 0x1b:
			n := s.escape(p[i:])
			i += n
			continue
		case r == '\r':
			s.col = 0
		case r == '\n':
			s.row, s.col = s.row+1, 0 // the tty turns \n into \r\n
			for len(s.rows) <= s.row {
				s.rows = append(s.rows, nil)
			}
		case r == '\t':
			s.col = min((s.col/8+1)*8, s.cols-1)
		case r < 0x20 || r == 0x7f || dangerous(r):
			s.bad = append(s.bad, fmt.Sprintf("control %U", r))
		default:
			s.put(r)
		}
		i += size
	}
}

// escape handles the sequence at the start of p and returns its length.
func (s *screen) escape(p string) int {
	if len(p) < 2 || p[1] != '[' {
		s.bad = append(s.bad, fmt.Sprintf("escape %q", p[:min(len(p), 8)]))
		return 1
	}
	j := 2
	for j < len(p) && (p[j] >= '0' && p[j] <= '9' || p[j] == ';') {
		j++
	}
	if j == len(p) {
		s.bad = append(s.bad, fmt.Sprintf("cut sequence %q", p))
		return j
	}
	arg, final := p[2:j], p[j]
	n, err := strconv.Atoi(arg)
	if arg == "" {
		n, err = 0, nil
	}
	switch {
	case final == 'A' && err == nil:
		s.ups = append(s.ups, max(n, 1))
		s.row = max(s.row-max(n, 1), 0)
	case final == 'J' && (arg == "" || arg == "0"):
		s.rows[s.row] = cut(s.rows[s.row], s.col)
		s.rows = s.rows[:s.row+1]
	default:
		s.bad = append(s.bad, fmt.Sprintf("sequence %q", p[:j+1]))
	}
	return j + 1
}

func cut(cells []rune, n int) []rune {
	if len(cells) > n {
		return cells[:n]
	}
	return cells
}

func (s *screen) put(r rune) {
	w := runeWidth(r)
	if s.col+w > s.cols { // past the last column: the terminal wraps
		s.wraps++
		s.row, s.col = s.row+1, 0
		for len(s.rows) <= s.row {
			s.rows = append(s.rows, nil)
		}
	}
	line := s.rows[s.row]
	for len(line) < s.col+w {
		line = append(line, ' ')
	}
	line[s.col] = r
	for k := 1; k < w; k++ {
		line[s.col+k] = 0 // the second cell of a wide character
	}
	s.rows[s.row] = line
	s.col += w
}

// lines returns the rows as text, without trailing blanks.
func (s *screen) lines() []string {
	out := make([]string, len(s.rows))
	for i, cells := range s.rows {
		out[i] = strings.TrimRight(strings.ReplaceAll(string(cells), "\x00", ""), " ")
	}
	return out
}

func (s *screen) String() string { return strings.Join(s.lines(), "\n") }

// widest is the widest row, in columns.
func (s *screen) widest() int {
	w := 0
	for _, l := range s.lines() {
		w = max(w, displayWidth(l))
	}
	return w
}

// barRows returns the rows that show a live progress bar or a waiting
// label: after a run, none may be left.
func (s *screen) barRows() []string {
	var out []string
	for _, l := range s.lines() {
		if strings.ContainsAny(l, "█░·") || strings.Contains(l, "awaiting") && strings.HasPrefix(l, "  call") {
			out = append(out, l)
		}
	}
	return out
}
