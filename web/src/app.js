// app: ptygate's browser terminal. "PREFIX/" picks an instance and a
// session; "PREFIX/agents/I/sessions/S/" attaches to one with xterm.js over
// pty-ws/v1 (docs/protocol.md): renders Output, applies Keyframes, follows
// Resize, shows membership, roles and who set the size, and reconnects by
// itself with replay_from. PREFIX is whatever path a proxy serves the
// gateway under: every URL is made from it, never from "/". Clickable
// links, a scrollback search, font size and theme (kept in localStorage)
// and a key bar for touch screens are the page's own. "?play" on a
// session's page plays its recording instead (Player, player.js).
import {
  SUBPROTOCOL, base64ToBytes, bytesToBase64, bearerProtocol, inputBytes,
  envelope, joinFrame, parseLocation, tokenClaims, backoffMs, classify,
  sessionsPath, sessionPath, attachUrl, keyBarBytes, withCtrl, sizeNote, principalOf,
  controlAsker, controlEventText,
} from './protocol.js';
import {
  parseCast, countAt, seekPlan, sizeAfter, batches, Playhead, formatTime, SPEEDS,
} from './player.js';

const TOKEN_KEY = 'ptygate.token';
const RESIZE_DEBOUNCE_MS = 200;
const RESYNCED_NOTE_MS = 5000;
const EMPTY = new Uint8Array(0);
const RIS = '\x1bc';
// Animation frames xterm.js takes to measure its rows again after a reset
// (Viewport.reset, then syncScrollArea, then its refresh), and one more.
const RESET_SETTLE_FRAMES = 3;
// Close codes after which trying again cannot help (docs/protocol.md,
// "Errors and closing").
const FINAL_CLOSE = { 4401: 'token expired', 4403: 'access revoked', 4404: 'session gone' };

const FONT_KEY = 'ptygate.fontSize';
const THEME_KEY = 'ptygate.theme';
const FONT_DEFAULT = 14, FONT_MIN = 8, FONT_MAX = 32;
// Active match first: the test finds it by this exact colour.
const SEARCH_DECORATIONS = {
  matchBackground: '#7a5c00', matchBorder: '#7a5c00', matchOverviewRuler: '#7a5c00',
  activeMatchBackground: '#ff8c00', activeMatchBorder: '#ff8c00',
  activeMatchColorOverviewRuler: '#ff8c00',
};
const THEMES = {
  dark: { background: '#1e1e1e', foreground: '#d4d4d4', cursor: '#d4d4d4',
    selectionBackground: '#264f78' },
  // The default palette's yellow and white vanish on white: darker ones.
  light: { background: '#ffffff', foreground: '#1e1e1e', cursor: '#1e1e1e',
    cursorAccent: '#ffffff', selectionBackground: '#add6ff',
    black: '#000000', red: '#cd3131', green: '#00a000', yellow: '#8a7300',
    blue: '#0451a5', magenta: '#bc05bc', cyan: '#0598bc', white: '#555555',
    brightBlack: '#666666', brightRed: '#cd3131', brightGreen: '#14a014',
    brightYellow: '#8a7300', brightBlue: '#0451a5', brightMagenta: '#bc05bc',
    brightCyan: '#0598bc', brightWhite: '#333333' },
};

const $ = (id) => document.getElementById(id);

// ---- preferences kept in localStorage (per browser, not per tab) ----

function stored(key) {
  try { return localStorage.getItem(key); } catch { return null; }
}
function store(key, value) {
  try { localStorage.setItem(key, String(value)); } catch { /* private mode: not kept */ }
}
function fontSize() {
  const n = Number(stored(FONT_KEY));
  return Number.isInteger(n) && n >= FONT_MIN && n <= FONT_MAX ? n : FONT_DEFAULT;
}
function themeName() {
  const t = stored(THEME_KEY);
  return Object.hasOwn(THEMES, t) ? t : 'dark';
}
function applyPageTheme(name) {
  document.body.classList.toggle('light', name === 'light');
  $('theme-select').value = name;
}

function setStatus(text, level = '') {
  const el = $('status');
  el.textContent = text;
  el.className = level;
}

// ---- the token: entered once, or from the fragment; kept per tab ----

function takeTokenFromFragment(loc) {
  if (loc.token) {
    sessionStorage.setItem(TOKEN_KEY, loc.token);
    // Out of the address bar and history at once.
    history.replaceState(null, '', location.pathname + location.search);
  }
  return sessionStorage.getItem(TOKEN_KEY);
}

function askToken() {
  return new Promise((resolve) => {
    const form = $('token-form');
    form.hidden = false;
    $('token-input').focus();
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      const t = $('token-input').value.trim();
      if (!t) return;
      sessionStorage.setItem(TOKEN_KEY, t);
      $('token-input').value = '';
      form.hidden = true;
      resolve(t);
    }, { once: true });
  });
}

// ---- the picker ----

function sessionHref(prefix, instance, session, role) {
  const path = sessionPath(prefix, instance, session) + '/';
  return role === 'observer' ? path + '?role=observer' : path;
}

function cell(row, text) {
  const td = document.createElement('td');
  td.textContent = text;
  row.appendChild(td);
  return td;
}

async function listSessions(prefix, token) {
  const instance = $('instance-input').value.trim();
  const msg = $('picker-message');
  const table = $('session-table');
  if (!instance) return;
  msg.textContent = 'listing...';
  let r;
  try {
    r = await fetch(sessionsPath(prefix, instance),
      { headers: { Authorization: 'Bearer ' + token }, cache: 'no-store' });
  } catch (e) {
    msg.textContent = 'the gateway did not answer: ' + e.message;
    return;
  }
  const body = await r.json().catch(() => ({}));
  if (!r.ok) {
    msg.textContent = r.status === 403
      ? 'this token may not list sessions (it lacks the "sessions" scope): enter a session id'
      : `listing failed: ${r.status} ${body.code || ''} ${body.message || ''}`;
    table.hidden = true;
    return;
  }
  const tbody = table.querySelector('tbody');
  tbody.replaceChildren();
  for (const s of body.sessions || []) {
    const tr = document.createElement('tr');
    const a = document.createElement('a');
    a.href = sessionHref(prefix, instance, s.session_id, $('role-input').value);
    a.textContent = s.session_id;
    cell(tr, '').appendChild(a);
    cell(tr, s.state + (s.state === 'exited' ? ` (${s.exit_code})` : ''));
    cell(tr, `${s.cols}x${s.rows}`);
    cell(tr, String((s.controllers || []).length));
    cell(tr, String((s.observers || []).length));
    cell(tr, s.created_at || '');
    tbody.appendChild(tr);
  }
  table.hidden = false;
  msg.textContent = `${(body.sessions || []).length} session(s)`;
}

function showPicker(prefix, token) {
  const claims = tokenClaims(token);
  $('picker').hidden = false;
  if (claims.instance_id && claims.instance_id !== '*') $('instance-input').value = claims.instance_id;
  if (claims.session_id && claims.session_id !== '*') $('session-input').value = claims.session_id;
  if (!/\bpty:control\b/.test(claims.scope || '')) $('role-input').value = 'observer';
  $('pick-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const session = $('session-input').value.trim();
    if (!session) { listSessions(prefix, token); return; }
    location.assign(sessionHref(prefix, $('instance-input').value.trim(), session,
      $('role-input').value));
  });
  $('list-button').addEventListener('click', () => listSessions(prefix, token));
  $('forget-token').addEventListener('click', () => {
    sessionStorage.removeItem(TOKEN_KEY);
    location.reload();
  });
  setStatus('pick a session');
  if (/\bsessions\b/.test(claims.scope || '') && $('instance-input').value) listSessions(prefix, token);
}

// ---- one attachment ----

class Attachment {
  constructor({ prefix, instance, session, token, role, label }) {
    Object.assign(this, { prefix, instance, session, token, label });
    this.wantRole = role;     // asked for on every (re)join
    this.role = null;         // what the server granted
    this.clientId = null;
    this.members = { controllers: [], observers: [] };
    this.pending = [];        // control requests waiting for a controller (approve sessions)
    this.lastSeq = null;      // last sequence applied (replay_from)
    this.helloSeq = 0;
    this.needKeyframe = true;
    this.joined = false;
    this.ended = false;       // no reconnect after this
    this.attempt = 0;
    this.recent = [];
    this.connects = 0;        // connections opened, for the status and tests
    this.suppress = 0;        // writes in flight whose answers are dropped
    this.ws = null;
    this.countdown = null;
    this.resizeTimer = null;
    this.resyncedTimer = null;
    this.sentSize = null;     // the last size this page asked for ({cols, rows})
    this.sizeText = '';       // "120x30, set by alice"
    this.ctrlHeld = false;    // the key bar's sticky Ctrl
    this.makeTerminal();
  }

  makeTerminal() {
    const host = $('terminal');
    host.hidden = false;
    this.term = new window.Terminal({
      // The search addon's highlights are decorations, a proposed API.
      scrollback: 5000, cursorBlink: true, allowProposedApi: true,
      fontFamily: 'ui-monospace, "DejaVu Sans Mono", monospace',
      fontSize: fontSize(), theme: THEMES[themeName()],
    });
    this.fit = new window.FitAddon.FitAddon();
    this.term.loadAddon(this.fit);
    this.search = new window.SearchAddon.SearchAddon();
    this.term.loadAddon(this.search);
    // A link opens in a new tab that cannot reach back into this one.
    this.term.loadAddon(new window.WebLinksAddon.WebLinksAddon((ev, uri) => {
      window.open(uri, '_blank', 'noopener,noreferrer');
    }));
    this.term.open(host);
    this.guardResetScroll(host);
    this.fit.fit();
    this.term.onData((d) => this.typed(d));
    this.term.onBinary((d) => this.sendInput(inputBytes(d, true)));
    // Ctrl+Shift+C copies the selection (Ctrl+C stays ^C); pasting is the
    // browser's paste event, which xterm.js wraps in bracketed paste
    // markers when the program turned that mode on.
    this.term.attachCustomKeyEventHandler((ev) => {
      if (ev.type === 'keydown' && ev.ctrlKey && ev.shiftKey && ev.code === 'KeyC') {
        const sel = this.term.getSelection();
        if (sel && navigator.clipboard) navigator.clipboard.writeText(sel).catch(() => {});
        ev.preventDefault();
        return false;
      }
      if (ev.type === 'keydown' && ev.ctrlKey && ev.shiftKey && ev.code === 'KeyF') {
        ev.preventDefault();
        openSearch();
        return false;
      }
      return true;
    });
    window.addEventListener('resize', () => this.scheduleResize());
    window.ptygate = this; // for tests and the curious: state, never the token
  }

  // A reset (RIS: every Keyframe, most snapshots, a program's "reset")
  // makes xterm.js 5.5 forget its row height until the viewport's next
  // animation frames re-measure it; a scroll event of the viewport in
  // between (the browser clamping the shrunk scroll area, more likely the
  // more loaded the machine) divides scrollTop 0 by that 0 and leaves the
  // view NaN rows down for good: a blank screen. Scroll events are kept
  // from xterm.js until those frames have run (a reset leaves the view at
  // the bottom anyway, and the viewport sets its own scrollTop again).
  guardResetScroll(host) {
    let resets = 0;
    this.term.parser.registerEscHandler({ final: 'c' }, () => {
      resets++;
      afterFrames(RESET_SETTLE_FRAMES, () => { resets--; });
      return false; // xterm.js's own RIS follows
    });
    host.addEventListener('scroll', (ev) => {
      if (resets > 0 && ev.target.classList.contains('xterm-viewport')) ev.stopImmediatePropagation();
    }, true);
  }

  // ---- connection ----

  url() {
    return attachUrl(location, this.prefix, this.instance, this.session);
  }

  connect() {
    clearInterval(this.countdown);
    this.joined = false;
    this.helloSeq = 0;
    this.gotHello = false;
    this.connects++;
    setStatus(this.attempt ? 'reconnecting...' : 'connecting...', this.attempt ? 'warn' : '');
    const ws = new WebSocket(this.url(), [SUBPROTOCOL, bearerProtocol(this.token)]);
    this.ws = ws;
    ws.onmessage = (ev) => { if (this.ws === ws) this.onText(ev.data); };
    ws.onclose = (ev) => { if (this.ws === ws) this.onClose(ev); };
  }

  send(frame) {
    if (this.ws && this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(frame));
  }

  onText(text) {
    let f;
    try { f = JSON.parse(text); } catch { return; }
    switch (f.op) {
      case 'binding_hello': return this.onHello(f);
      case 'pty.session_frame': return this.onFrame(f);
      case 'Error': return this.onError(f.payload || {});
      case 'binding_goodbye': return this.onGoodbye(f.payload || {});
      case 'ptygate.control_requests': return this.onControl(f.payload || {});
      case 'ptygate.control_decided': return this.renderControl();
      default: return undefined;
    }
  }

  onHello(f) {
    this.gotHello = true;
    this.helloSeq = f.payload.session.current_sequence;
    const dims = this.fit.proposeDimensions() || { cols: this.term.cols, rows: this.term.rows };
    this.needKeyframe = true;
    const cols = clampSize(dims.cols), rows = clampSize(dims.rows);
    // A controller's join size is applied when it is the first one.
    if (this.wantRole === 'controller') this.sentSize = { cols, rows };
    this.send(joinFrame({
      role: this.wantRole, cols, rows, label: this.label, replayFrom: this.lastSeq,
    }));
  }

  onClose(ev) {
    this.ws = null;
    this.joined = false;
    this.pending = [];
    this.renderControl();
    this.renderRole();
    if (FINAL_CLOSE[ev.code]) this.ended = true;
    if (this.ended) {
      if (FINAL_CLOSE[ev.code]) setStatus(`disconnected: ${FINAL_CLOSE[ev.code]} (${ev.code})`, 'bad');
      return;
    }
    if (this.gotHello) this.scheduleReconnect();
    else this.diagnose();
  }

  // A browser is not shown why an upgrade was refused: the same request
  // as REST says whether trying again can help (401, 403, 404 cannot).
  async diagnose() {
    let status = 0;
    try {
      const r = await fetch(sessionPath(this.prefix, this.instance, this.session),
        { headers: { Authorization: 'Bearer ' + this.token }, cache: 'no-store' });
      status = r.status;
    } catch { /* the gateway is away: retry */ }
    const why = { 401: 'the token is invalid or expired', 403: 'the token does not allow this session',
      404: 'no such session' }[status];
    if (!why) { this.scheduleReconnect(); return; }
    this.ended = true;
    if (status === 401) sessionStorage.removeItem(TOKEN_KEY);
    setStatus(`cannot attach: ${why} (HTTP ${status})${status === 401 ? '; reload to enter a new token' : ''}`, 'bad');
  }

  scheduleReconnect() {
    const due = Date.now() + backoffMs(this.attempt);
    this.attempt++;
    const tick = () => {
      const left = Math.max(0, Math.ceil((due - Date.now()) / 1000));
      setStatus(`disconnected; reconnecting in ${left} s`, 'warn');
      if (Date.now() >= due) this.connect();
    };
    tick();
    this.countdown = setInterval(tick, 250);
  }

  onGoodbye(p) {
    if (p.reason === 'principal_revoked') {
      this.ended = true;
      sessionStorage.removeItem(TOKEN_KEY);
      setStatus('the token expired or was revoked: reload the page and enter a new one', 'bad');
    } else if (p.reason === 'session_closed') {
      this.ended = true;
      if (!/ended/.test($('status').textContent)) setStatus('left the session (it keeps running)');
    }
    // server_shutdown, rate_limited, other: the close follows; reconnect.
  }

  onError(p) {
    if (p.code === 'REPLAY_OUT_OF_RANGE') {
      this.note('some history was no longer kept; the screen is repainted from a snapshot');
      return;
    }
    setStatus(`error: ${p.code}: ${p.message}`, 'warn');
  }

  // ---- session frames ----

  onFrame(f) {
    const p = f.payload || {};
    const how = classify(this, f);
    // The last frames seen, for whoever debugs the page (and its tests).
    this.recent.push(`${f.sequence}:${p.kind}:${how}`);
    if (this.recent.length > 64) this.recent.shift();
    if (how === 'drop') return;
    if (how !== 'private' && typeof f.sequence === 'number') this.lastSeq = f.sequence;
    switch (p.kind) {
      case 'Output': this.write(base64ToBytes(p.data), how === 'replay'); break;
      case 'Keyframe': if (how !== 'skip') this.applyKeyframe(p); break;
      case 'Resize':
        this.noteSize(p.cols, p.rows);
        this.term.write(EMPTY, () => this.followResize(p.cols, p.rows));
        break;
      case 'RoleAssigned': this.onRole(p); break;
      case 'MembershipChanged':
        this.members = p;
        this.renderMembers();
        if (!this.sizeText) this.noteSize(this.term.cols, this.term.rows);
        break;
      case 'Closed': this.onClosed(p); break;
      case 'Error': this.onSessionError(p); break;
      default: break;
    }
  }

  // Replayed history may hold queries (DA, DSR/CPR, window reports) the
  // program asked long ago: xterm.js would answer them now, into the
  // session. Such writes are counted until xterm.js has parsed them
  // (the write callback) and sendInput drops everything in between.
  write(bytes, replayed) {
    if (!replayed) { this.term.write(bytes); return; }
    this.suppress++;
    this.term.write(bytes, () => { this.suppress--; });
  }

  // Size, reset and snapshot are queued at once, in this order, behind the
  // Output xterm.js may still be parsing and ahead of any that follows:
  // the resize runs in the callback of an empty write (callbacks run as
  // their chunk is parsed), the reset is RIS in the stream. (A write made
  // from inside a callback would join the end of the queue instead.)
  applyKeyframe(p) {
    if (!this.sizeText || this.term.cols !== p.snapshot_cols || this.term.rows !== p.snapshot_rows)
      this.noteSize(p.snapshot_cols, p.snapshot_rows);
    this.suppress++;
    this.term.write(EMPTY, () => this.followResize(p.snapshot_cols, p.snapshot_rows));
    this.term.write(RIS);
    this.term.write(base64ToBytes(p.snapshot), () => { this.suppress--; });
    const wasLagged = this.needKeyframe === 'lagged';
    this.needKeyframe = false;
    if (wasLagged) this.note('lagged and resynced');
    else if (!this.joined) this.onLive();
  }

  onLive() {
    this.joined = true;
    this.attempt = 0;
    this.renderRole();
    this.renderControl();
    if (!/ended/.test($('status').textContent)) setStatus('connected');
    if (this.role === 'controller') this.scheduleResize();
  }

  onRole(p) {
    const was = this.role;
    this.role = p.role;
    this.clientId = p.client_id;
    if (p.downgraded) this.note(`joined as ${p.role}: ${p.reason || 'downgraded'}`);
    else if (was && was !== p.role) this.note(`now ${p.role}`);
    // Rejoin after a drop with the role we hold, not the one first asked.
    this.wantRole = p.role;
    this.renderRole();
    this.renderMembers();
    this.renderControl();
    if (p.role === 'controller' && this.joined) this.scheduleResize();
  }

  onClosed(p) {
    this.ended = true;
    const code = p.exit_code === null || p.exit_code === undefined ? '?' : p.exit_code;
    setStatus(`session ended with exit code ${code} (${p.reason}${p.detail ? ': ' + p.detail : ''})`,
      p.exit_code === 0 ? '' : 'warn');
  }

  onSessionError(p) {
    if (p.code === 'PTY_OUTPUT_LAGGED') {
      this.needKeyframe = 'lagged';
      setStatus('lagged behind the session; resyncing...', 'warn');
    } else if (p.code === 'KEYFRAME_UNAVAILABLE' && this.needKeyframe) {
      // The screen is too large for a snapshot: carry on live without one
      // (what is already on the page stays; new output follows).
      this.needKeyframe = false;
      if (!this.joined) this.onLive();
      this.note('no snapshot of this screen is available; showing new output only');
    } else {
      setStatus(`session error: ${p.code}: ${p.message}`, 'warn');
    }
  }

  note(text) {
    setStatus(text, 'warn');
    clearTimeout(this.resyncedTimer);
    this.resyncedTimer = setTimeout(() => {
      if (this.joined && !this.ended && $('status').textContent === text) setStatus('connected');
    }, RESYNCED_NOTE_MS);
  }

  // ---- input, size, roles ----

  // Input exists only for the live connection it was typed on: typed while
  // away it is dropped, never queued and re-sent after a reconnect.
  // Everything typed, on the keyboard or the key bar: a held key bar Ctrl
  // applies to the next key and is let go.
  typed(data) {
    if (this.ctrlHeld && data.length === 1) {
      data = withCtrl(data);
      this.holdCtrl(false);
    }
    this.sendInput(inputBytes(data, false));
  }

  keyBar(key) {
    if (key === 'ctrl') { this.holdCtrl(!this.ctrlHeld); return; }
    const appCursor = this.term.modes.applicationCursorKeysMode;
    const data = keyBarBytes(key, { ctrl: this.ctrlHeld, appCursor });
    this.holdCtrl(false);
    this.sendInput(inputBytes(data, false));
  }

  holdCtrl(on) {
    this.ctrlHeld = on;
    const b = document.querySelector('#keybar [data-key="ctrl"]');
    b.setAttribute('aria-pressed', String(on));
  }

  sendInput(bytes) {
    if (this.suppress > 0 || !this.joined || this.role !== 'controller') return;
    for (let i = 0; i < bytes.length; i += 65536)
      this.send(envelope('pty.session_input', { data: bytesToBase64(bytes.subarray(i, i + 65536)) }));
  }

  followResize(cols, rows) {
    if (this.term.cols !== cols || this.term.rows !== rows) this.term.resize(cols, rows);
  }

  scheduleResize() {
    clearTimeout(this.resizeTimer);
    this.resizeTimer = setTimeout(() => this.sendResize(), RESIZE_DEBOUNCE_MS);
  }

  sendResize() {
    if (this.role !== 'controller' || !this.joined) return;
    const d = this.fit.proposeDimensions();
    if (!d || !d.cols || !d.rows) return;
    const cols = clampSize(d.cols), rows = clampSize(d.rows);
    if (cols === this.term.cols && rows === this.term.rows) return;
    this.term.resize(cols, rows);
    this.sentSize = { cols, rows };
    this.send(envelope('pty.session_resize', { cols, rows }));
  }

  // The session's size and who most likely set it (no frame names the
  // sender of a Resize: see sizeNote), and whether this window could show
  // more columns than the session has (what is printed now wraps there,
  // for everyone, and stays wrapped in the history).
  noteSize(cols, rows) {
    let text = sizeNote({ cols, rows }, this.members, this.clientId, this.sentSize);
    const d = this.fit.proposeDimensions();
    if (d && d.cols > cols + 1) text += ` · narrower than this window: lines wrap at ${cols}`;
    this.sizeText = text;
    $('size').textContent = text;
  }

  setFontSize(n) {
    n = Math.max(FONT_MIN, Math.min(FONT_MAX, n));
    store(FONT_KEY, n);
    this.term.options.fontSize = n;
    $('font-size').textContent = `${n}px`;
    this.refit();
  }

  setTheme(name) {
    store(THEME_KEY, name);
    this.term.options.theme = THEMES[name];
    applyPageTheme(name);
  }

  // A controller's window sets the session's size; an observer's terminal
  // keeps the session's size whatever its cells measure.
  refit() {
    if (this.role === 'controller') this.scheduleResize();
    else if (this.sizeText) this.noteSize(this.term.cols, this.term.rows);
  }

  requestRole(role) {
    this.wantRole = role;
    this.send(envelope('pty.request_role', { role }));
  }

  renderRole() {
    const badge = $('role');
    badge.hidden = !this.role;
    badge.textContent = this.joined ? this.role : `${this.role} (away)`;
    badge.className = 'badge ' + (this.role || '');
    $('request-control').hidden = !this.joined || this.ended || this.role === 'controller';
    $('release-control').hidden = !this.joined || this.ended || this.role !== 'controller';
  }

  // ---- control approval ----

  // The whole list of waiting requests, and the change that made it.
  onControl(p) {
    this.pending = Array.isArray(p.pending) ? p.pending : [];
    const said = controlEventText(p.event);
    if (said) this.note(said);
    this.renderControl();
  }

  decideControl(clientId, approve) {
    this.send(envelope('ptygate.decide_control', { client_id: clientId, approve }));
  }

  // A banner everyone sees while someone waits; a controller's has the
  // buttons that answer.
  renderControl() {
    const box = $('control-banner');
    box.replaceChildren();
    box.hidden = !this.pending.length;
    for (const r of this.pending) {
      const row = document.createElement('div');
      row.className = 'control-request';
      row.dataset.clientId = r.client_id;
      const text = document.createElement('span');
      text.textContent = controlAsker(r, this.clientId);
      row.append(text);
      if (this.role === 'controller' && this.joined) {
        for (const [cls, label, yes] of [['approve', 'Approve', true], ['deny', 'Deny', false]]) {
          const b = document.createElement('button');
          b.type = 'button';
          b.className = cls;
          b.textContent = label;
          b.addEventListener('click', () => this.decideControl(r.client_id, yes));
          row.append(b);
        }
      }
      box.append(row);
    }
  }

  renderMembers() {
    const name = (m) => (m.label || m.client_id) + (m.client_id === this.clientId ? ' (you)' : '');
    const c = this.members.controllers || [], o = this.members.observers || [];
    $('members').textContent =
      `controlling: ${c.map(name).join(', ') || 'nobody'} · watching: ${o.map(name).join(', ') || 'nobody'}`;
  }
}

// Runs fn once n animation frames have begun after this one.
function afterFrames(n, fn) {
  if (n <= 0) fn();
  else requestAnimationFrame(() => afterFrames(n - 1, fn));
}

function clampSize(n) {
  return Math.max(1, Math.min(1024, Math.floor(n)));
}

// ---- the page's controls: search, font size, theme, key bar ----

let attachment = null;

function openSearch() {
  $('search-box').hidden = false;
  $('search-input').focus();
  $('search-input').select();
}

function closeSearch() {
  $('search-box').hidden = true;
  $('search-count').textContent = '';
  attachment.search.clearDecorations();
  attachment.term.clearSelection();
  attachment.term.focus();
}

function find(backwards, incremental = false) {
  const q = $('search-input').value;
  if (!q) { attachment.search.clearDecorations(); $('search-count').textContent = ''; return; }
  const opts = { decorations: SEARCH_DECORATIONS, incremental };
  const found = backwards ? attachment.search.findPrevious(q, opts) : attachment.search.findNext(q, opts);
  if (!found) $('search-count').textContent = 'not found';
}

function wireSearch(a) {
  a.search.onDidChangeResults(({ resultIndex, resultCount }) => {
    $('search-count').textContent = resultCount === 0 ? 'not found'
      : resultIndex < 0 ? `${resultCount}+ matches` : `${resultIndex + 1} of ${resultCount}`;
  });
  $('search-toggle').addEventListener('click', () => ($('search-box').hidden ? openSearch() : closeSearch()));
  $('search-input').addEventListener('input', () => find(false, true));
  $('search-input').addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter') { ev.preventDefault(); find(ev.shiftKey); }
    else if (ev.key === 'Escape') { ev.preventDefault(); closeSearch(); }
  });
  $('search-next').addEventListener('click', () => find(false));
  $('search-prev').addEventListener('click', () => find(true));
  $('search-close').addEventListener('click', closeSearch);
}

function wireView(a) {
  $('font-size').textContent = `${a.term.options.fontSize}px`;
  $('font-smaller').addEventListener('click', () => a.setFontSize(a.term.options.fontSize - 1));
  $('font-bigger').addEventListener('click', () => a.setFontSize(a.term.options.fontSize + 1));
  $('theme-select').addEventListener('change', () => { a.setTheme($('theme-select').value); a.term.focus(); });
  // The key bar shows by itself on narrow or touch screens (style.css);
  // "Keys" shows or hides it anywhere.
  $('keys-toggle').addEventListener('click', () => {
    const bar = $('keybar');
    bar.dataset.shown = bar.dataset.shown === 'yes' ? 'no'
      : bar.dataset.shown === 'no' ? 'yes' : (getComputedStyle(bar).display === 'none' ? 'yes' : 'no');
    a.refit();
  });
  for (const b of $('keybar').querySelectorAll('button')) {
    // Pressing a key must not take the focus (and a phone's keyboard) away
    // from the terminal.
    b.addEventListener('pointerdown', (ev) => ev.preventDefault());
    b.addEventListener('mousedown', (ev) => ev.preventDefault());
    b.addEventListener('click', () => { a.keyBar(b.dataset.key); a.term.focus(); });
  }
}

// ---- the recording player ("?play") ----

const PLAY_TICK_MS = 50;
const SEEK_STEP_S = 5;

// Plays a session's recording (GET .../recording, asciicast v2) into an
// xterm.js terminal: play/pause, a seek bar, speed and the time. What is
// on the terminal is always events[0..shown) written in order; a seek
// back starts the terminal over (RIS) and writes up to the new point in
// one go. Time comes from this.clock (milliseconds), which a test may
// replace (useClock) to step playback by its own clock.
class Player {
  constructor({ prefix, instance, session, token }) {
    Object.assign(this, { prefix, instance, session, token });
    this.cast = null;
    this.head = null;
    this.shown = 0;       // events written to the terminal
    this.parsed = 0;      // events xterm.js has parsed (write callbacks)
    this.loads = 0;
    this.dragging = false; // the seek bar held by the pointer
    this.clock = () => performance.now();
    this.timer = null;
    const host = $('terminal');
    host.hidden = false;
    this.term = new window.Terminal({
      scrollback: 5000, cursorBlink: false, disableStdin: true,
      fontFamily: 'ui-monospace, "DejaVu Sans Mono", monospace',
      fontSize: fontSize(), theme: THEMES[themeName()],
    });
    this.term.open(host);
    window.ptygate = this; // for tests: state, never the token
  }

  url() {
    return sessionPath(this.prefix, this.instance, this.session) + '/recording';
  }

  // Fetches the recording (so far, for a live session) and keeps the
  // position: a reload of a live session shows what was recorded since.
  async load() {
    setStatus(this.cast ? 'reloading the recording...' : 'loading the recording...');
    let r, text;
    try {
      r = await fetch(this.url(), { headers: { Authorization: 'Bearer ' + this.token }, cache: 'no-store' });
      text = await r.text();
    } catch (e) {
      setStatus('the gateway did not answer: ' + e.message, 'bad');
      return false;
    }
    if (!r.ok) {
      let body = {};
      try { body = JSON.parse(text); } catch { /* not JSON */ }
      const why = { 401: 'the token is invalid or expired', 403: 'the token does not allow this session',
        404: 'no such session', 413: 'the recording is too large for the browser: export it instead' }[r.status];
      setStatus(`cannot load the recording: ${why || body.message || r.statusText} (HTTP ${r.status})`, 'bad');
      return false;
    }
    let cast;
    try { cast = parseCast(text); } catch (e) {
      setStatus('the recording cannot be read: ' + e.message, 'bad');
      return false;
    }
    this.adopt(cast);
    this.loads++;
    setStatus(`recording: ${cast.events.length} events, ${formatTime(cast.duration)} `
      + `(loaded ${new Date().toLocaleTimeString()}; Reload adds what was recorded since)`);
    return true;
  }

  adopt(cast) {
    const now = this.clock();
    this.cast = cast;
    if (!this.head) {
      this.head = new Playhead(cast.duration);
      this.shown = 0;
      this.parsed = 0;
      this.startOver(0);
    } else {
      // Written again from the start at the same position: retention may
      // have dropped the oldest events, so those shown are not a prefix.
      this.head.setDuration(cast.duration, now);
      this.startOver(countAt(cast.events, this.head.position(now)));
    }
    $('seek').max = String(cast.duration);
    this.render();
  }

  // ---- playback ----

  play() { this.head.play(this.clock()); this.render(); this.run(); }
  pause() { this.head.pause(this.clock()); this.stop(); this.render(); }
  toggle() { if (this.head.playing && !this.head.ended(this.clock())) this.pause(); else this.play(); }
  setSpeed(s) { this.head.setSpeed(s, this.clock()); this.render(); }

  seek(t) {
    this.head.seek(t, this.clock());
    this.show(this.head.pos);
    this.render();
  }

  // A test's clock: playback goes on from where it is by the new one.
  useClock(fn) {
    const pos = this.head.position(this.clock());
    this.clock = fn;
    this.head.seek(pos, fn());
  }

  run() {
    if (this.timer) return;
    this.timer = setInterval(() => this.tick(), PLAY_TICK_MS);
  }

  stop() {
    clearInterval(this.timer);
    this.timer = null;
  }

  tick() {
    const now = this.clock();
    this.show(this.head.position(now));
    if (this.head.playing && this.head.ended(now)) {
      this.head.pause(now);
      this.stop();
    }
    this.render();
  }

  // Makes the terminal show the recording at time t.
  show(t) {
    const plan = seekPlan(this.cast.events, this.shown, t);
    if (plan.reset) this.startOver(plan.to);
    else this.writeEvents(plan.from, plan.to);
  }

  startOver(to) {
    const { cols, rows } = sizeAfter(this.cast, 0);
    this.term.write(RIS);
    this.term.write(EMPTY, () => this.fitTo(cols, rows));
    this.shown = 0;
    this.parsed = 0;
    this.writeEvents(0, to);
  }

  writeEvents(from, to) {
    if (to <= from) return;
    for (const b of batches(this.cast.events, from, to)) {
      if (b.text !== undefined) this.term.write(b.text);
      else this.term.write(EMPTY, () => this.fitTo(b.cols, b.rows));
    }
    this.shown = to;
    this.term.write(EMPTY, () => { if (this.shown === to) this.parsed = to; });
  }

  fitTo(cols, rows) {
    if (this.term.cols !== cols || this.term.rows !== rows) this.term.resize(cols, rows);
    $('size').textContent = `${cols}x${rows}`;
  }

  // What the controls show, and what tests read.
  state() {
    const now = this.clock();
    return {
      position: this.head ? this.head.position(now) : 0,
      duration: this.cast ? this.cast.duration : 0,
      playing: !!this.head && this.head.playing && !this.head.ended(now),
      speed: this.head ? this.head.speed : 1,
      shown: this.shown, parsed: this.parsed,
      events: this.cast ? this.cast.events.length : 0, loads: this.loads,
    };
  }

  render() {
    if (!this.head) return;
    const s = this.state();
    $('play-toggle').textContent = s.playing ? 'Pause' : 'Play';
    $('play-toggle').setAttribute('aria-pressed', String(s.playing));
    // Not while the bar is being dragged, which would jump under the pointer.
    if (!this.dragging) $('seek').value = String(s.position);
    $('speed').value = String(s.speed);
    $('play-time').textContent = `${formatTime(s.position)} / ${formatTime(s.duration)}`;
  }
}

function wirePlayer(p) {
  $('player').hidden = false;
  document.body.classList.add('playing');
  for (const s of SPEEDS) {
    const o = document.createElement('option');
    o.value = String(s);
    o.textContent = `${s}x`;
    $('speed').appendChild(o);
  }
  $('play-toggle').addEventListener('click', () => p.toggle());
  $('seek').addEventListener('input', () => p.seek(Number($('seek').value)));
  $('seek').addEventListener('pointerdown', () => { p.dragging = true; });
  for (const ev of ['pointerup', 'pointercancel', 'change'])
    $('seek').addEventListener(ev, () => { p.dragging = false; p.render(); });
  $('speed').addEventListener('change', () => p.setSpeed(Number($('speed').value)));
  $('play-reload').addEventListener('click', () => p.load());
  $('play-live').href = location.pathname;
  // Space plays or pauses, the arrows step 5 s, wherever the focus is but
  // on a control (where Space is the control's own).
  window.addEventListener('keydown', (ev) => {
    if (!p.head || ev.ctrlKey || ev.altKey || ev.metaKey
      || /^(INPUT|SELECT|BUTTON|A)$/.test(ev.target.tagName || '') && !ev.target.closest('#terminal')) return;
    const step = { ArrowLeft: -SEEK_STEP_S, ArrowRight: SEEK_STEP_S }[ev.key];
    if (ev.key === ' ') p.toggle();
    else if (step) p.seek(p.head.position(p.clock()) + step);
    else return;
    ev.preventDefault();
    ev.stopPropagation();
  }, true);
}

async function playRecording(loc, token) {
  $('where').textContent = `${loc.instance} / ${loc.session} · recording`;
  document.title = `recording · ${loc.session.slice(0, 12)} · ptygate`;
  const p = new Player({ prefix: loc.prefix, instance: loc.instance, session: loc.session, token });
  wirePlayer(p);
  if (await p.load()) p.render();
}

async function main() {
  const loc = parseLocation(location.pathname, location.search, location.hash);
  applyPageTheme(themeName());
  const token = takeTokenFromFragment(loc) || await askToken();
  if (!loc.session) { showPicker(loc.prefix, token); return; }
  if (new URLSearchParams(location.search).has('play')) { playRecording(loc, token); return; }
  const claims = tokenClaims(token);
  const who = principalOf(claims);
  $('where').textContent = `${loc.instance} / ${loc.session}`;
  document.title = `${who ? who + ' · ' : ''}${loc.session.slice(0, 12)} · ptygate`;
  const role = loc.role || (/\bpty:control\b/.test(claims.scope || '') ? 'controller' : 'observer');
  const a = new Attachment({
    prefix: loc.prefix, instance: loc.instance, session: loc.session, token, role,
    label: loc.label || who || 'web',
  });
  attachment = a;
  $('tools').hidden = false;
  $('recording-link').href = '?play';
  wireSearch(a);
  wireView(a);
  $('request-control').addEventListener('click', () => a.requestRole('controller'));
  $('release-control').addEventListener('click', () => a.requestRole('observer'));
  a.connect();
  a.term.focus();
}

main();
