// protocol: the pure parts of the page's pty-ws/v1 client (no DOM, no
// socket), so node can test them: encodings, envelopes, where a page is,
// the reconnect backoff and which frames to apply.

export const SUBPROTOCOL = 'pty-ws.v1';
export const EXTENSION_URI =
  'https://agentic-sandbox.aiwg.io/extensions/pty-extensions/v1';
// ptygate's control approval (docs/protocol.md, "Control approval"):
// requests for control a controller approves, in sessions that ask it.
export const CONTROL_URI = 'urn:ptygate:extensions:control-approval:v1';
export const BACKOFF_FIRST_MS = 500;
export const BACKOFF_MAX_MS = 30000;

const utf8 = new TextEncoder();

export function bytesToBase64(bytes) {
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000)
    s += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

export function base64ToBytes(b64) {
  const s = atob(b64);
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}

// The token rides in the subprotocol offer as base64url without
// padding ('=' is not allowed in a header token).
export function bearerProtocol(token) {
  return 'bearer.' + bytesToBase64(utf8.encode(token))
    .replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

// xterm.js gives typed text as a string, and binary mouse reports as a
// string of byte values: both become the bytes to send.
export function inputBytes(data, binary) {
  if (!binary) return utf8.encode(data);
  const out = new Uint8Array(data.length);
  for (let i = 0; i < data.length; i++) out[i] = data.charCodeAt(i) & 0xff;
  return out;
}

// A request id (any 1..128 chars). crypto.randomUUID needs a
// secure context, which a plain-http gateway on a LAN is not.
export function newId() {
  const b = crypto.getRandomValues(new Uint8Array(16));
  return 'web-' + Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}

export function envelope(op, payload, fields = {}) {
  return { op, id: newId(), ts: new Date().toISOString(), ...fields, payload };
}

// The join (docs/protocol.md, "Client ops"); replay_from only on a reconnect.
export function joinFrame({ role, cols, rows, label, replayFrom }) {
  const fields = { extensions: [EXTENSION_URI, CONTROL_URI] };
  if (replayFrom !== null && replayFrom !== undefined) fields.replay_from = replayFrom;
  const payload = { role, cols, rows };
  if (label) payload.client_label = label.slice(0, 128);
  return envelope('pty.join_session', payload, fields);
}

// The banner's line for one pending control request (you: this page's
// client id), and what a control event says to everyone.
export function controlAsker(r, you) {
  return `${r.label || r.client_id}${r.client_id === you ? ' (you)' : ''} asks for control`;
}

export function controlEventText(ev) {
  if (!ev || !ev.kind || ev.kind === 'requested') return '';
  const who = ev.label || ev.client_id;
  const by = ev.by ? (ev.by.label || ev.by.client_id) : '';
  if (ev.kind === 'approved') return by ? `${who} was given control by ${by}` : `${who} took control (no controller was left)`;
  if (ev.kind === 'denied') return `${by} denied control to ${who}`;
  return `the request of ${who} ${ev.kind}`;
}

// Where the page is: "PREFIX/" is the picker, "PREFIX/agents/I/sessions/S/"
// one session, where PREFIX is whatever path a proxy put in front of the
// gateway ("/" when there is none). Every URL the page makes starts from
// that prefix, never from "/". The token comes only from the fragment
// (never the query: the gateway refuses tokens there and URLs get
// logged); role and label may come from either.
export function parseLocation(pathname, search, hash) {
  const m = /^(.*\/)agents\/([^/]+)\/sessions\/([^/]+)\/?$/.exec(pathname);
  const frag = new URLSearchParams(hash.replace(/^#/, ''));
  const query = new URLSearchParams(search);
  const pick = (k) => frag.get(k) ?? query.get(k);
  const role = pick('role');
  return {
    prefix: m ? m[1] : pathname.replace(/[^/]*$/, ''),
    instance: m ? decodeURIComponent(m[2]) : null,
    session: m ? decodeURIComponent(m[3]) : null,
    token: frag.get('token'),
    role: role === 'observer' || role === 'controller' ? role : null,
    label: pick('label'),
  };
}

// The REST and WebSocket paths of the gateway under a page's prefix.
export function sessionsPath(prefix, instance) {
  return `${prefix}agents/${encodeURIComponent(instance)}/sessions`;
}
export function sessionPath(prefix, instance, session) {
  return `${sessionsPath(prefix, instance)}/${encodeURIComponent(session)}`;
}
// ws: or wss: as the page itself was loaded over http: or https:.
export function attachUrl(loc, prefix, instance, session) {
  const scheme = loc.protocol === 'https:' ? 'wss:' : 'ws:';
  return `${scheme}//${loc.host}${sessionPath(prefix, instance, session)}/attach`;
}

// The claims of a JWT, unverified: only to prefill the picker.
export function tokenClaims(token) {
  try {
    const part = token.split('.')[1].replace(/-/g, '+').replace(/_/g, '/');
    return JSON.parse(new TextDecoder().decode(base64ToBytes(part.padEnd(part.length + (4 - part.length % 4) % 4, '='))));
  } catch {
    return {};
  }
}

// Exponential backoff with +-20% jitter, so a restarted gateway is not
// hit by every page at the same instant.
export function backoffMs(attempt, random = Math.random) {
  const base = Math.min(BACKOFF_MAX_MS, BACKOFF_FIRST_MS * 2 ** Math.min(attempt, 16));
  return Math.round(base * (0.8 + 0.4 * random()));
}

// What the page does with one sequenced pty.session_frame, given its
// state: { lastSeq (null before any), helloSeq (current_sequence of this
// connection's hello), needKeyframe (join or lag not yet repaired) }.
//   'drop'     already applied (sequence <= lastSeq)
//   'skip'     a Keyframe the page does not need: it already has every
//              frame before it (a periodic broadcast while in sync, or one
//              replayed before the joiner's own)
//   'replay'   apply with the terminal's answers to queries suppressed
//   'live'     apply normally
// Keyframes that are applied are always 'replay': a snapshot re-runs
// history, and must never make the terminal answer into the session.
//   'live' also for a frame without a sequence (it neither drops nor
//              moves lastSeq)
//   'private' RoleAssigned: addressed to this connection alone, numbered
//              when the join is handled, so on a reconnect it arrives
//              before the replayed frames it outnumbers. It neither drops
//              nor moves lastSeq, or the replay behind it would be lost.
export function classify(state, frame) {
  const seq = frame.sequence;
  const kind = frame.payload && frame.payload.kind;
  if (kind === 'RoleAssigned') return 'private';
  // PTY_OUTPUT_LAGGED is the gateway's own and has no sequence.
  if (typeof seq !== 'number') return 'live';
  if (state.lastSeq !== null && seq <= state.lastSeq) return 'drop';
  if (kind === 'Keyframe')
    return state.needKeyframe && seq > state.helloSeq ? 'replay' : 'skip';
  // Until the join's Keyframe, everything is history being replayed.
  return state.needKeyframe || seq <= state.helloSeq ? 'replay' : 'live';
}

// ---- the key bar (phones and tablets have no Esc, Ctrl, Tab or arrows) ----

const ARROWS = { up: 'A', down: 'B', right: 'C', left: 'D' };
const NAMED = { esc: '\x1b', tab: '\t' };

// The bytes of one key bar key. Arrows follow the program's cursor key
// mode (DECCKM: "ESC O A" in application mode, "ESC [ A" otherwise), and
// with Ctrl held they are "ESC [ 1 ; 5 A" as xterm sends them.
export function keyBarBytes(key, { ctrl = false, appCursor = false } = {}) {
  if (ARROWS[key]) {
    if (ctrl) return `\x1b[1;5${ARROWS[key]}`;
    return (appCursor ? '\x1bO' : '\x1b[') + ARROWS[key];
  }
  if (NAMED[key]) return NAMED[key];
  return ctrl ? withCtrl(key) : key;
}

// What Ctrl does to one typed character, as a terminal keyboard sends it:
// letters and @[\]^_ become C0 controls, '?' is DEL, space is NUL; other
// text is sent as it is.
export function withCtrl(data) {
  if (data.length !== 1) return data;
  const c = data.toUpperCase().charCodeAt(0);
  if (c >= 0x40 && c <= 0x5f) return String.fromCharCode(c - 0x40);
  if (data === '?') return '\x7f';
  if (data === ' ') return '\x00';
  return data;
}

// ---- the session's size, and who set it ----

// Who most likely set the session's size: nothing in pty-ws/v1 names the
// sender of a Resize, so the page says "you" when the size is one it
// asked for itself, the controller's name when there is one other, and
// the controllers otherwise. members: the last MembershipChanged;
// selfId: this page's client_id; mine: the last size this page sent
// ({cols, rows} or null).
export function sizeNote({ cols, rows }, members, selfId, mine) {
  const size = `${cols}x${rows}`;
  if (mine && mine.cols === cols && mine.rows === rows) return `${size}, set by you`;
  const others = ((members && members.controllers) || []).filter((m) => m.client_id !== selfId);
  const name = (m) => m.label || m.client_id;
  if (others.length === 1) return `${size}, set by ${name(others[0])}`;
  if (others.length > 1) return `${size}, set by a controller (${others.map(name).join(', ')})`;
  return `${size}, no controller`;
}

// The name a page goes by: the token's subject (the principal), cut to
// the protocol's 128 characters for a client_label.
export function principalOf(claims) {
  return typeof claims.sub === 'string' && claims.sub ? claims.sub.slice(0, 128) : null;
}
