// protocol.test: node's test runner on web/src/protocol.js (run by
// tests/e2e/test_web.py, so CTest runs it).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  bearerProtocol, bytesToBase64, base64ToBytes, inputBytes, joinFrame, parseLocation,
  backoffMs, classify, tokenClaims, EXTENSION_URI, BACKOFF_MAX_MS,
  CONTROL_URI, controlAsker, controlEventText,
  sessionsPath, sessionPath, attachUrl, keyBarBytes, withCtrl, sizeNote, principalOf,
} from '../src/protocol.js';

const frame = (sequence, kind) => ({ op: 'pty.session_frame', sequence, payload: { kind } });

test('bearer subprotocol is base64url without padding', () => {
  assert.equal(bearerProtocol('a.b?>'), 'bearer.' + Buffer.from('a.b?>').toString('base64url'));
  assert.doesNotMatch(bearerProtocol('xx'), /[=+/]/);
});

test('base64 round trip of every byte', () => {
  const all = Uint8Array.from({ length: 256 }, (_, i) => i);
  assert.deepEqual(base64ToBytes(bytesToBase64(all)), all);
});

test('input bytes: text as UTF-8, binary as byte values', () => {
  assert.deepEqual(inputBytes('é', false), Uint8Array.of(0xc3, 0xa9));
  assert.deepEqual(inputBytes('\x1b\xff', true), Uint8Array.of(0x1b, 0xff));
});

test('join: extension activated, replay_from only on a reconnect', () => {
  const fresh = joinFrame({ role: 'observer', cols: 80, rows: 24, label: 'x', replayFrom: null });
  assert.deepEqual(fresh.extensions, [EXTENSION_URI, CONTROL_URI]);
  assert.equal('replay_from' in fresh, false);
  assert.deepEqual(fresh.payload, { role: 'observer', cols: 80, rows: 24, client_label: 'x' });
  assert.equal(joinFrame({ role: 'controller', cols: 1, rows: 1, replayFrom: 0 }).replay_from, 0);
});

test('location: token only from the fragment', () => {
  const l = parseLocation('/agents/i-1/sessions/s%3A2/', '?token=q&role=observer', '#token=t&label=me');
  assert.deepEqual(l, { prefix: '/', instance: 'i-1', session: 's:2', token: 't', role: 'observer',
    label: 'me' });
  assert.equal(parseLocation('/', '?token=q', '').token, null);
  assert.equal(parseLocation('/', '', '').session, null);
  assert.equal(parseLocation('/', '?role=admin', '').role, null);
});

test('token claims are read for prefilling, garbage gives {}', () => {
  const body = Buffer.from(JSON.stringify({ instance_id: 'i' })).toString('base64url');
  assert.equal(tokenClaims(`h.${body}.s`).instance_id, 'i');
  assert.deepEqual(tokenClaims('nonsense'), {});
});

test('backoff doubles with jitter up to the cap', () => {
  assert.equal(backoffMs(0, () => 0.5), 500);
  assert.equal(backoffMs(3, () => 0.5), 4000);
  assert.equal(backoffMs(40, () => 0.5), BACKOFF_MAX_MS);
  assert.equal(backoffMs(0, () => 0), 400);
  assert.equal(backoffMs(0, () => 1), 600);
});

test('reconnect flow: RoleAssigned outnumbers the replay behind it and drops nothing', () => {
  // SPEC 5.2: RoleAssigned (numbered at the join) -> replayed 133, 134 -> Keyframe 136.
  const s = { lastSeq: 132, helloSeq: 134, needKeyframe: true };
  assert.equal(classify(s, frame(135, 'RoleAssigned')), 'private');
  assert.equal(classify(s, frame(133, 'MembershipChanged')), 'replay');
  assert.equal(classify(s, frame(134, 'Output')), 'replay');
  assert.equal(classify(s, frame(132, 'Output')), 'drop');
  assert.equal(classify(s, frame(136, 'Keyframe')), 'replay');
});

test('keyframes: a replayed one and periodic ones while in sync are skipped', () => {
  assert.equal(classify({ lastSeq: 10, helloSeq: 20, needKeyframe: true }, frame(15, 'Keyframe')), 'skip');
  assert.equal(classify({ lastSeq: 30, helloSeq: 20, needKeyframe: false }, frame(31, 'Keyframe')), 'skip');
  assert.equal(classify({ lastSeq: 30, helloSeq: 20, needKeyframe: 'lagged' }, frame(31, 'Keyframe')), 'replay');
  assert.equal(classify({ lastSeq: 30, helloSeq: 20, needKeyframe: false }, frame(31, 'Output')), 'live');
  assert.equal(classify({ lastSeq: null, helloSeq: 0, needKeyframe: true }, frame(1, 'Keyframe')), 'replay');
});

test('a frame without a sequence (PTY_OUTPUT_LAGGED) is applied and orders nothing', () => {
  const lag = { op: 'pty.session_frame', payload: { kind: 'Error', code: 'PTY_OUTPUT_LAGGED' } };
  assert.equal(classify({ lastSeq: 30, helloSeq: 20, needKeyframe: false }, lag), 'live');
});

test('location: whatever path prefix a proxy adds is kept for every URL', () => {
  const l = parseLocation('/team/pty/agents/i-1/sessions/s-2/', '', '');
  assert.equal(l.prefix, '/team/pty/');
  assert.equal(l.instance, 'i-1');
  assert.equal(sessionPath(l.prefix, 'i-1', 's:2'), '/team/pty/agents/i-1/sessions/s%3A2');
  assert.equal(sessionsPath('/', 'i 1'), '/agents/i%201/sessions');
  assert.equal(attachUrl({ protocol: 'https:', host: 'h:8443' }, l.prefix, 'i-1', 's-2'),
    'wss://h:8443/team/pty/agents/i-1/sessions/s-2/attach');
  assert.equal(attachUrl({ protocol: 'http:', host: 'h' }, '/', 'i', 's'), 'ws://h/agents/i/sessions/s/attach');
  // The picker: its own directory, with or without index.html.
  assert.equal(parseLocation('/team/pty/', '', '').prefix, '/team/pty/');
  assert.equal(parseLocation('/team/pty/index.html', '', '').prefix, '/team/pty/');
  assert.equal(parseLocation('/', '', '').prefix, '/');
  // A prefix that itself looks like a session page: the last one counts.
  assert.equal(parseLocation('/agents/a/sessions/b/agents/c/sessions/d/', '', '').prefix, '/agents/a/sessions/b/');
});

test('key bar: Esc, Tab, arrows by cursor key mode, Ctrl as a modifier', () => {
  assert.equal(keyBarBytes('esc'), '\x1b');
  assert.equal(keyBarBytes('tab'), '\t');
  assert.equal(keyBarBytes('up'), '\x1b[A');
  assert.equal(keyBarBytes('left', { appCursor: true }), '\x1bOD');
  assert.equal(keyBarBytes('right', { ctrl: true, appCursor: true }), '\x1b[1;5C');
  assert.equal(keyBarBytes('|'), '|');
  assert.equal(withCtrl('c'), '\x03');
  assert.equal(withCtrl('D'), '\x04');
  assert.equal(withCtrl('['), '\x1b');
  assert.equal(withCtrl('?'), '\x7f');
  assert.equal(withCtrl(' '), '\x00');
  assert.equal(withCtrl('1'), '1');
  assert.equal(withCtrl('ab'), 'ab');
});

test('size note: you, the one other controller, or the controllers', () => {
  const m = (...ids) => ({ controllers: ids.map((id) => ({ client_id: id, label: 'l-' + id })), observers: [] });
  assert.equal(sizeNote({ cols: 120, rows: 30 }, m('me'), 'me', { cols: 120, rows: 30 }), '120x30, set by you');
  assert.equal(sizeNote({ cols: 40, rows: 30 }, m('me', 'b'), 'me', { cols: 120, rows: 30 }), '40x30, set by l-b');
  assert.equal(sizeNote({ cols: 40, rows: 30 }, m('b', 'c'), 'me', null),
    '40x30, set by a controller (l-b, l-c)');
  assert.equal(sizeNote({ cols: 80, rows: 24 }, m(), 'me', null), '80x24, no controller');
});

test('the principal is the token\'s sub', () => {
  assert.equal(principalOf({ sub: 'alice' }), 'alice');
  assert.equal(principalOf({ sub: 'x'.repeat(300) }).length, 128);
  assert.equal(principalOf({}), null);
  assert.equal(principalOf({ sub: 7 }), null);
});

test('control approval: the banner line and what an event says', () => {
  assert.equal(controlAsker({ client_id: 'c-b', label: 'bob' }, 'c-a'), 'bob asks for control');
  assert.equal(controlAsker({ client_id: 'c-b', label: '' }, 'c-b'), 'c-b (you) asks for control');
  const by = { client_id: 'c-a', label: 'alice' };
  assert.equal(controlEventText({ kind: 'approved', client_id: 'c-b', label: 'bob', by }),
    'bob was given control by alice');
  assert.equal(controlEventText({ kind: 'approved', client_id: 'c-b', label: 'bob' }),
    'bob took control (no controller was left)');
  assert.equal(controlEventText({ kind: 'denied', client_id: 'c-b', label: 'bob', by }),
    'alice denied control to bob');
  assert.equal(controlEventText({ kind: 'expired', client_id: 'c-b', label: 'bob' }),
    'the request of bob expired');
  assert.equal(controlEventText({ kind: 'requested', client_id: 'c-b' }), '');
  assert.equal(controlEventText(undefined), '');
});
