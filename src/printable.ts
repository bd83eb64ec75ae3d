/**
 * Text from a worker, a submitter or the network made safe for a terminal: every control
 * character that could move the cursor, set the title, clear the screen or reorder what is shown
 * is written as an escape instead (`\x1b`, `\u202e`). C0 controls but tab and newline, DEL, C1
 * controls (U+0080–009F: a lone U+009B is a CSI on some terminals), and the bidi controls
 * (U+061C, U+200E–200F, U+202A–202E, U+2066–2069) that make `gnp.exe` read as `exe.png`.
 * `printableLine` escapes newlines too, for a value shown inside one line.
 *
 * Pure: the ledger's text views use it as well (src/ledger/format.ts re-exports it).
 */

// eslint-disable-next-line no-control-regex -- these are the characters it exists to escape
const CONTROLS = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
// eslint-disable-next-line no-control-regex
const LINE_CONTROLS = /[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

function escaped(c: string): string {
  const code = c.charCodeAt(0);
  return code < 0x100 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
}

/** `text` with every terminal control but tab and newline escaped. */
export function printable(text: string): string {
  return text.replace(CONTROLS, escaped);
}

/** `text` with every terminal control escaped, newlines and tabs included: one line. */
export function printableLine(text: string): string {
  return text.replace(LINE_CONTROLS, escaped);
}

const JSON_CONTROLS = /[\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** JSON.stringify, with the controls it leaves raw (DEL, C1, bidi) as `\uNNNN`: the same JSON value. */
export function printableJson(value: unknown): string {
  return JSON.stringify(value, null, 2).replace(JSON_CONTROLS, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
