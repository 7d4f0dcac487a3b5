// player: the recording player's logic, free of the DOM so node's test
// runner checks it (web/test/player.test.mjs): asciicast v2 parsing, the
// playback clock (position from an injected "now", so tests and a loaded
// machine agree on where playback is), and what a seek has to write.

export const SPEEDS = [0.5, 1, 2, 4];
// A recording's text is bounded by the gateway (256 MiB); the page keeps
// at most this many events so a huge history cannot hang the tab.
export const MAX_EVENTS = 2_000_000;

// asciicast v2: a JSON header line, then one [time, code, data] line per
// event. "o" is output, "r" a resize ("COLSxROWS"); other codes ("i",
// "m") are not shown and skipped. A last line cut short (a live recording
// read mid-write) is dropped; any other bad line is an error naming it.
export function parseCast(text, { maxEvents = MAX_EVENTS } = {}) {
  const lines = text.split('\n');
  if (lines.length && lines[lines.length - 1] === '') lines.pop();
  if (!lines.length) throw new Error('the recording is empty');
  let header;
  try { header = JSON.parse(lines[0]); } catch { throw new Error('line 1: the header is not JSON'); }
  if (!header || header.version !== 2) throw new Error('line 1: not an asciicast v2 header');
  const width = sizeOf(header.width), height = sizeOf(header.height);
  if (!width || !height) throw new Error('line 1: the header has no valid width and height');
  const events = [];
  let last = 0;
  for (let i = 1; i < lines.length; i++) {
    if (!lines[i].trim()) continue;
    let e;
    try { e = JSON.parse(lines[i]); } catch {
      if (i === lines.length - 1) break; // cut short while being written
      throw new Error(`line ${i + 1}: not JSON`);
    }
    if (!Array.isArray(e) || typeof e[0] !== 'number' || !Number.isFinite(e[0]) || e[0] < 0
      || typeof e[1] !== 'string' || typeof e[2] !== 'string')
      throw new Error(`line ${i + 1}: not a [time, code, data] event`);
    if (e[1] !== 'o' && e[1] !== 'r') continue;
    if (events.length >= maxEvents) throw new Error(`more than ${maxEvents} events: too long to play here`);
    // Times never go back: a stray earlier time is played in order.
    last = Math.max(last, e[0]);
    const ev = { t: last, code: e[1], data: e[2] };
    if (e[1] === 'r') {
      const size = parseSize(e[2]);
      if (!size) continue;
      Object.assign(ev, size);
    }
    events.push(ev);
  }
  return { width, height, timestamp: header.timestamp ?? null, events, duration: last };
}

function sizeOf(n) {
  return Number.isInteger(n) && n >= 1 && n <= 1024 ? n : 0;
}

export function parseSize(s) {
  const m = /^(\d{1,4})x(\d{1,4})$/.exec(s);
  if (!m) return null;
  const cols = sizeOf(Number(m[1])), rows = sizeOf(Number(m[2]));
  return cols && rows ? { cols, rows } : null;
}

// How many events are due at time t (seconds): the index of the first
// event after t.
export function countAt(events, t) {
  let lo = 0, hi = events.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (events[mid].t <= t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

// What to do to show time t when `shown` events are on the terminal:
// forward, write the ones in between; backward, reset the terminal and
// write all from the first (a terminal cannot be unwritten).
export function seekPlan(events, shown, t) {
  const want = countAt(events, t);
  return want >= shown ? { reset: false, from: shown, to: want } : { reset: true, from: 0, to: want };
}

// The size the terminal has after events[0..n): the header's, then the
// last resize among them.
export function sizeAfter(cast, n) {
  for (let i = Math.min(n, cast.events.length) - 1; i >= 0; i--)
    if (cast.events[i].code === 'r') return { cols: cast.events[i].cols, rows: cast.events[i].rows };
  return { cols: cast.width, rows: cast.height };
}

// The events in [from, to) as writes: runs of output joined into one
// string, a resize between them on its own.
export function batches(events, from, to) {
  const out = [];
  let text = '';
  for (let i = from; i < to; i++) {
    const e = events[i];
    if (e.code === 'o') { text += e.data; continue; }
    if (text) { out.push({ text }); text = ''; }
    out.push({ cols: e.cols, rows: e.rows });
  }
  if (text) out.push({ text });
  return out;
}

// Playback time: a position (seconds into the recording) that advances
// at `speed` recording seconds per clock second while playing, and never
// passes the end. Every change takes the clock's "now" (milliseconds).
export class Playhead {
  constructor(duration) {
    this.duration = duration;
    this.speed = 1;
    this.playing = false;
    this.pos = 0;      // position at `since`
    this.since = 0;    // clock time the position was taken
  }

  position(now) {
    if (!this.playing) return this.pos;
    return Math.min(this.duration, this.pos + ((now - this.since) / 1000) * this.speed);
  }

  ended(now) {
    return this.position(now) >= this.duration;
  }

  play(now) {
    if (this.playing) return;
    // Play at the end starts over.
    if (this.pos >= this.duration) this.pos = 0;
    this.playing = true;
    this.since = now;
  }

  pause(now) {
    this.pos = this.position(now);
    this.playing = false;
  }

  setSpeed(speed, now) {
    if (!SPEEDS.includes(speed)) throw new Error(`speed ${speed} is not one of ${SPEEDS.join(', ')}`);
    this.pos = this.position(now);
    this.since = now;
    this.speed = speed;
  }

  seek(t, now) {
    this.pos = Math.max(0, Math.min(this.duration, t));
    this.since = now;
  }

  // A reloaded live recording is longer: the position stays where it is.
  setDuration(duration, now) {
    this.pos = this.position(now);
    this.since = now;
    this.duration = duration;
  }
}

// "1:05.3": minutes and seconds to a tenth.
export function formatTime(s) {
  const tenths = Math.floor(Math.max(0, s) * 10 + 1e-6);
  const m = Math.floor(tenths / 600), rest = (tenths % 600) / 10;
  return `${m}:${rest < 10 ? '0' : ''}${rest.toFixed(1)}`;
}
