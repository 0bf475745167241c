package main

import "testing"

// TestPageShowsHiddenCharactersInArguments: the page shows a call's
// arguments (in its card and in an approval's editable text) as JSON it
// re-encodes from the decoded value, which brings back the characters the
// approval request had escaped: a right-to-left override (U+202E) or
// another invisible character in the arguments would make them read
// differently from what the person approves. shownJSON writes them as \u
// escapes: the text parses back to the same value (what an unedited
// approval sends), and indentation stays as it is. Runs app.js in Node
// (skipped without it).
func TestPageShowsHiddenCharactersInArguments(t *testing.T) {
	runAppJS(t, `
const shownJSON = window.toolstream.shownJSON;
if (typeof shownJSON !== 'function') { console.log('FAIL the page has no shownJSON'); process.exit(0); }
const hidden = ['\u202a', '\u202b', '\u202c', '\u202d', '\u202e', '\u2066', '\u2067', '\u2068', '\u2069',
  '\u200e', '\u200f', '\u061c', '\u200b', '\u200d', '\u2060', '\ufeff', '\u00ad', '\u180e',
  '\n', '\r', '\t', '\u2028', '\u2029', '\u0085', '\u001b', '\u009b', '\u007f', '\u{e0041}', '\u00a0', '\u3164', '\ufe0f'];
for (const ch of hidden) {
  const v = { command: 'echo hi ' + ch + '~ fr- mr', ['k' + ch]: [1, { x: ch }] };
  for (const text of [JSON.stringify(v), JSON.stringify(v, null, 2)]) {
    const s = shownJSON(text);
    const code = 'U+' + ch.codePointAt(0).toString(16);
    if (ch !== '\n' && s.includes(ch)) console.log('FAIL ' + code + ' shown as it is: ' + JSON.stringify(s));
    if (JSON.stringify(JSON.parse(s)) !== JSON.stringify(v)) console.log('FAIL ' + code + ' does not parse back: ' + s);
    if (text.includes('\n') && s.split('\n').length !== text.split('\n').length) console.log('FAIL ' + code + ' changed the indentation');
  }
}
const plain = JSON.stringify({ a: 'b c', d: [1, 2] }, null, 2);
if (shownJSON(plain) !== plain) console.log('FAIL changed plain JSON: ' + shownJSON(plain));
`)
}
