// app: ptygate's browser terminal. "/" picks an instance and a session;
// "/agents/I/sessions/S/" attaches to one with xterm.js over pty-ws/v1
// (SPEC 1 to 5): renders Output, applies Keyframes, follows Resize, shows
// membership and roles, and reconnects by itself with replay_from.
import {
  SUBPROTOCOL, base64ToBytes, bytesToBase64, bearerProtocol, inputBytes,
  envelope, joinFrame, parseLocation, tokenClaims, backoffMs, classify,
} from './protocol.js';

const TOKEN_KEY = 'ptygate.token';
const RESIZE_DEBOUNCE_MS = 200;
const RESYNCED_NOTE_MS = 5000;
const EMPTY = new Uint8Array(0);
const RIS = '\x1bc';
// Close codes after which trying again cannot help (SPEC 7).
const FINAL_CLOSE = { 4401: 'token expired', 4403: 'access revoked', 4404: 'session gone' };

const $ = (id) => document.getElementById(id);

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

function sessionHref(instance, session, role) {
  const path = `/agents/${encodeURIComponent(instance)}/sessions/${encodeURIComponent(session)}/`;
  return role === 'observer' ? path + '?role=observer' : path;
}

function cell(row, text) {
  const td = document.createElement('td');
  td.textContent = text;
  row.appendChild(td);
  return td;
}

async function listSessions(token) {
  const instance = $('instance-input').value.trim();
  const msg = $('picker-message');
  const table = $('session-table');
  if (!instance) return;
  msg.textContent = 'listing...';
  let r;
  try {
    r = await fetch(`/agents/${encodeURIComponent(instance)}/sessions`,
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
    a.href = sessionHref(instance, s.session_id, $('role-input').value);
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

function showPicker(token) {
  const claims = tokenClaims(token);
  $('picker').hidden = false;
  if (claims.instance_id && claims.instance_id !== '*') $('instance-input').value = claims.instance_id;
  if (claims.session_id && claims.session_id !== '*') $('session-input').value = claims.session_id;
  if (!/\bpty:control\b/.test(claims.scope || '')) $('role-input').value = 'observer';
  $('pick-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const session = $('session-input').value.trim();
    if (!session) { listSessions(token); return; }
    location.assign(sessionHref($('instance-input').value.trim(), session, $('role-input').value));
  });
  $('list-button').addEventListener('click', () => listSessions(token));
  $('forget-token').addEventListener('click', () => {
    sessionStorage.removeItem(TOKEN_KEY);
    location.reload();
  });
  setStatus('pick a session');
  if (/\bsessions\b/.test(claims.scope || '') && $('instance-input').value) listSessions(token);
}

// ---- one attachment ----

class Attachment {
  constructor({ instance, session, token, role, label }) {
    Object.assign(this, { instance, session, token, label });
    this.wantRole = role;     // asked for on every (re)join
    this.role = null;         // what the server granted
    this.clientId = null;
    this.members = { controllers: [], observers: [] };
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
    this.makeTerminal();
  }

  makeTerminal() {
    const host = $('terminal');
    host.hidden = false;
    this.term = new window.Terminal({
      scrollback: 5000, cursorBlink: true, allowProposedApi: false,
      fontFamily: 'ui-monospace, "DejaVu Sans Mono", monospace',
    });
    this.fit = new window.FitAddon.FitAddon();
    this.term.loadAddon(this.fit);
    this.term.open(host);
    this.fit.fit();
    this.term.onData((d) => this.sendInput(inputBytes(d, false)));
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
      return true;
    });
    window.addEventListener('resize', () => this.scheduleResize());
    window.ptygate = this; // for tests and the curious: state, never the token
  }

  // ---- connection ----

  url() {
    const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
    return `${scheme}//${location.host}/agents/${encodeURIComponent(this.instance)}` +
      `/sessions/${encodeURIComponent(this.session)}/attach`;
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
      default: return undefined;
    }
  }

  onHello(f) {
    this.gotHello = true;
    this.helloSeq = f.payload.session.current_sequence;
    const dims = this.fit.proposeDimensions() || { cols: this.term.cols, rows: this.term.rows };
    this.needKeyframe = true;
    this.send(joinFrame({
      role: this.wantRole, cols: clampSize(dims.cols), rows: clampSize(dims.rows),
      label: this.label, replayFrom: this.lastSeq,
    }));
  }

  onClose(ev) {
    this.ws = null;
    this.joined = false;
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
      const r = await fetch(`/agents/${encodeURIComponent(this.instance)}/sessions/` +
        encodeURIComponent(this.session), { headers: { Authorization: 'Bearer ' + this.token }, cache: 'no-store' });
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
      case 'Resize': this.term.write(EMPTY, () => this.followResize(p.cols, p.rows)); break;
      case 'RoleAssigned': this.onRole(p); break;
      case 'MembershipChanged': this.members = p; this.renderMembers(); break;
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
    this.send(envelope('pty.session_resize', { cols, rows }));
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

  renderMembers() {
    const name = (m) => (m.label || m.client_id) + (m.client_id === this.clientId ? ' (you)' : '');
    const c = this.members.controllers || [], o = this.members.observers || [];
    $('members').textContent =
      `controlling: ${c.map(name).join(', ') || 'nobody'} · watching: ${o.map(name).join(', ') || 'nobody'}`;
  }
}

function clampSize(n) {
  return Math.max(1, Math.min(1024, Math.floor(n)));
}

async function main() {
  const loc = parseLocation(location.pathname, location.search, location.hash);
  const token = takeTokenFromFragment(loc) || await askToken();
  if (!loc.session) { showPicker(token); return; }
  $('where').textContent = `${loc.instance} / ${loc.session}`;
  document.title = `ptygate ${loc.session.slice(0, 8)}`;
  const claims = tokenClaims(token);
  const role = loc.role || (/\bpty:control\b/.test(claims.scope || '') ? 'controller' : 'observer');
  const a = new Attachment({
    instance: loc.instance, session: loc.session, token, role, label: loc.label || 'web',
  });
  $('request-control').addEventListener('click', () => a.requestRole('controller'));
  $('release-control').addEventListener('click', () => a.requestRole('observer'));
  a.connect();
  a.term.focus();
}

main();
