// player.test: node's test runner on web/src/player.js (run by
// tests/e2e/test_web_player.py, so CTest runs it).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  parseCast, parseSize, countAt, seekPlan, sizeAfter, batches, Playhead, formatTime, SPEEDS,
} from '../src/player.js';

const HEADER = JSON.stringify({ version: 2, width: 80, height: 24, timestamp: 1700000000 });
const cast = (...events) => [HEADER, ...events.map((e) => JSON.stringify(e))].join('\n') + '\n';

test('parse: header, output and resize events; other codes skipped', () => {
  const c = parseCast(cast([0.1, 'o', 'a'], [0.2, 'i', 'typed'], [0.3, 'r', '100x30'], [1.5, 'o', 'é']));
  assert.equal(c.width, 80);
  assert.equal(c.height, 24);
  assert.equal(c.timestamp, 1700000000);
  assert.equal(c.duration, 1.5);
  assert.deepEqual(c.events, [
    { t: 0.1, code: 'o', data: 'a' },
    { t: 0.3, code: 'r', data: '100x30', cols: 100, rows: 30 },
    { t: 1.5, code: 'o', data: 'é' },
  ]);
});

test('parse: errors name the line; a cut last line is dropped', () => {
  assert.throws(() => parseCast(''), /empty/);
  assert.throws(() => parseCast('{"version":1,"width":8,"height":8}\n'), /line 1: not an asciicast v2/);
  assert.throws(() => parseCast('nope\n'), /line 1: the header is not JSON/);
  assert.throws(() => parseCast('{"version":2,"width":0,"height":8}\n'), /width and height/);
  assert.throws(() => parseCast(cast([0.1, 'o', 'a']) + '[0.2,"o"\n[0.3,"o","b"]\n'), /line 3: not JSON/);
  assert.throws(() => parseCast(cast(['x', 'o', 'a'])), /line 2: not a \[time, code, data\]/);
  assert.throws(() => parseCast(cast([-1, 'o', 'a'])), /line 2/);
  const cut = parseCast(cast([0.1, 'o', 'a']) + '[0.2,"o","b');
  assert.deepEqual(cut.events.map((e) => e.data), ['a']);
  assert.equal(parseCast(HEADER).events.length, 0);
});

test('parse: at most maxEvents shown events (skipped codes not counted)', () => {
  const three = cast([0.1, 'o', 'a'], [0.2, 'i', 'x'], [0.3, 'o', 'b'], [0.4, 'r', '9x9']);
  assert.equal(parseCast(three, { maxEvents: 3 }).events.length, 3);
  assert.throws(() => parseCast(three, { maxEvents: 2 }), /more than 2 events/);
});

test('parse: times that go back are played in order; bad resizes skipped', () => {
  const c = parseCast(cast([1, 'o', 'a'], [0.5, 'o', 'b'], [2, 'r', '0x5'], [2, 'r', 'wide']));
  assert.deepEqual(c.events.map((e) => e.t), [1, 1]);
  assert.equal(parseSize('1025x10'), null);
  assert.deepEqual(parseSize('1024x1'), { cols: 1024, rows: 1 });
});

test('countAt: events due at a time, boundaries included', () => {
  const { events } = parseCast(cast([0.5, 'o', 'a'], [1, 'o', 'b'], [1, 'o', 'c'], [2, 'o', 'd']));
  assert.equal(countAt(events, 0), 0);
  assert.equal(countAt(events, 0.5), 1);
  assert.equal(countAt(events, 0.99), 1);
  assert.equal(countAt(events, 1), 3);
  assert.equal(countAt(events, 99), 4);
  assert.equal(countAt([], 5), 0);
});

test('seek: forward writes what is between, backward resets and writes from the start', () => {
  const { events } = parseCast(cast([0.5, 'o', 'a'], [1, 'o', 'b'], [2, 'o', 'c']));
  assert.deepEqual(seekPlan(events, 1, 1.5), { reset: false, from: 1, to: 2 });
  assert.deepEqual(seekPlan(events, 3, 0.7), { reset: true, from: 0, to: 1 });
  assert.deepEqual(seekPlan(events, 2, 1), { reset: false, from: 2, to: 2 });
  assert.deepEqual(seekPlan(events, 0, 10), { reset: false, from: 0, to: 3 });
});

test('batches join output runs and keep resizes in order; the size after n events', () => {
  const c = parseCast(cast([0.1, 'o', 'a'], [0.2, 'o', 'b'], [0.3, 'r', '90x20'], [0.4, 'o', 'c']));
  assert.deepEqual(batches(c.events, 0, 4), [{ text: 'ab' }, { cols: 90, rows: 20 }, { text: 'c' }]);
  assert.deepEqual(batches(c.events, 3, 4), [{ text: 'c' }]);
  assert.deepEqual(sizeAfter(c, 2), { cols: 80, rows: 24 });
  assert.deepEqual(sizeAfter(c, 4), { cols: 90, rows: 20 });
});

test('playhead: advances by the speed per clock second, stops at the end and when paused', () => {
  const p = new Playhead(10);
  assert.equal(p.position(5000), 0);
  p.play(1000);
  assert.equal(p.position(2000), 1);
  p.setSpeed(4, 2000);
  assert.equal(p.position(2500), 3);
  p.pause(2500);
  assert.equal(p.position(99999), 3);
  p.setSpeed(0.5, 3000);
  p.play(4000);
  assert.equal(p.position(6000), 4);
  assert.equal(p.position(1e9), 10);
  assert.ok(p.ended(1e9));
  p.pause(1e9);
  p.play(1e9 + 1); // at the end: from the start
  assert.equal(p.position(1e9 + 1), 0);
  p.seek(-3, 0);
  assert.equal(p.pos, 0);
  p.seek(42, 0);
  assert.equal(p.pos, 10);
  assert.throws(() => p.setSpeed(3, 0), /speed 3/);
  assert.deepEqual(SPEEDS, [0.5, 1, 2, 4]);
});

test('playhead: a longer live recording keeps the position', () => {
  const p = new Playhead(2);
  p.play(0);
  p.setDuration(5, 1000);
  assert.equal(p.position(1000), 1);
  assert.equal(p.position(3000), 3);
});

test('time format', () => {
  assert.equal(formatTime(0), '0:00.0');
  assert.equal(formatTime(1.25), '0:01.2');
  assert.equal(formatTime(65.3), '1:05.3');
  assert.equal(formatTime(-1), '0:00.0');
});
