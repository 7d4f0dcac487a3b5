// browser: drives the web page in Debian's chromium (playwright-core, no
// downloaded browser) against a real gateway and sidecar that
// tests/e2e/test_web.py started. Steps that need the daemons touched
// (kill the gateway, start it again) are asked of the driver on stdout as
// "@@ <step>" lines, answered with one line on stdin.
//
// Environment: PTG_WEB_BASE (http://127.0.0.1:PORT), PTG_WEB_INSTANCE,
// PTG_WEB_SESSION, PTG_WEB_TOKEN (pty:control), PTG_WEB_OBSERVER_TOKEN
// (pty:observe), PTG_WEB_FLAG (a file the session's shell waits for),
// PTG_WEB_SHOTS (where screenshots go), PTG_CHROMIUM (/usr/bin/chromium).
import { chromium } from 'playwright-core';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { decodePng } from './png.mjs';

const env = (k) => {
  if (!process.env[k]) throw new Error(`${k} is not set`);
  return process.env[k];
};
const BASE = env('PTG_WEB_BASE');
const PAGE = `${BASE}/agents/${env('PTG_WEB_INSTANCE')}/sessions/${env('PTG_WEB_SESSION')}/`;
const STEP_MS = 15000;
// Lines printed before the queries while the gateway is down: enough that
// xterm.js is still parsing the replay when the join's Keyframe arrives.
const HISTORY_LINES = 100000; // every wait is bounded; generous for a loaded machine

const stdin = createInterface({ input: process.stdin });
const answers = [];
let waiting = null;
stdin.on('line', (l) => { if (waiting) { const w = waiting; waiting = null; w(l); } else answers.push(l); });
function ask(step) {
  process.stdout.write(`@@ ${step}\n`);
  return new Promise((resolve, reject) => {
    if (answers.length) { resolve(answers.shift()); return; }
    const t = setTimeout(() => reject(new Error(`no answer to ${step}`)), 60000);
    waiting = (l) => { clearTimeout(t); resolve(l); };
  });
}
const log = (s) => process.stdout.write(`browser: ${s}\n`);
function check(ok, what) {
  if (!ok) throw new Error('check failed: ' + what);
  log('ok: ' + what);
}

// The visible screen of a page's terminal, one string per row.
const screen = (page) => page.evaluate(() => {
  const b = window.ptygate.term.buffer.active;
  const rows = [];
  for (let i = 0; i < window.ptygate.term.rows; i++)
    rows.push((b.getLine(b.viewportY + i)?.translateToString(true)) ?? '');
  return rows;
});
const state = (page) => page.evaluate(() => {
  const p = window.ptygate;
  return { joined: p.joined, role: p.role, lastSeq: p.lastSeq, connects: p.connects,
    status: document.getElementById('status').textContent };
});
const debugState = (page) => page.evaluate(() => {
  const p = window.ptygate;
  return { helloSeq: p.helloSeq, needKeyframe: p.needKeyframe, suppress: p.suppress,
    size: `${p.term.cols}x${p.term.rows}`, bufferLines: p.term.buffer.active.length,
    viewportY: p.term.buffer.active.viewportY, recent: p.recent.join(' ') };
});

async function until(page, what, fn, ms = STEP_MS) {
  const end = Date.now() + ms;
  let last;
  while (Date.now() < end) {
    last = await fn();
    if (last) return last;
    await page.waitForTimeout(100);
  }
  throw new Error(`timed out waiting for ${what}; screen:\n${(await screen(page).catch(() => [])).join('\n')}`
    + `\nstate: ${JSON.stringify(await state(page).catch(() => null))}`
    + `\ndebug: ${JSON.stringify(await debugState(page).catch(() => null))}`);
}
const joined = (page) => until(page, 'the join', async () => {
  const s = await page.evaluate(() => !!(window.ptygate && window.ptygate.joined));
  return s;
});
const shows = (page, re) => until(page, `the screen to show ${re}`,
  async () => (await screen(page)).some((l) => re.test(l)));

// A screenshot of the terminal is a real PNG with text drawn on it: more
// light pixels than the same terminal had before anything was typed.
function lightPixels(png) {
  const img = decodePng(png);
  let n = 0;
  for (let i = 0; i < img.width * img.height; i++) {
    const o = i * img.channels;
    if (img.data[o] + img.data[o + 1] + img.data[o + 2] > 3 * 160) n++;
  }
  return { ...img, light: n };
}

async function openPage(ctx, url, label) {
  // Pages of one context share cookies but each has its own
  // sessionStorage, as two browser tabs do.
  const page = await ctx.newPage();
  const problems = [];
  // Chromium logs every refused connection while the gateway is down or
  // coming back (its link to the sidecar not yet up: 503): the WebSocket,
  // and the REST call that asks why it was refused.
  const expected = new RegExp('^WebSocket connection to .* failed|^Failed to load resource: '
    + '(net::ERR_CONNECTION_REFUSED|the server responded with a status of 503 )');
  page.on('console', (m) => {
    if (m.type() === 'error' && !expected.test(m.text())) problems.push(m.text());
  });
  page.on('pageerror', (e) => problems.push(String(e)));
  const resp = await page.goto(url);
  check(resp.status() === 200, `${label}: the page loads (HTTP ${resp.status()})`);
  await joined(page);
  return { page, problems };
}

async function main() {
  const profile = mkdtempSync(join(tmpdir(), 'ptg-chromium-'));
  // A fresh profile directory (--user-data-dir) each run.
  const ctx = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.PTG_CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 900, height: 500 },
    timeout: 60000,
  });
  try {
    await run(ctx);
  } finally {
    await ctx.close().catch(() => {});
    rmSync(profile, { recursive: true, force: true });
  }
}

async function run(ctx) {
  const shots = env('PTG_WEB_SHOTS');
  // A refused upgrade is not retried forever: the page finds out why.
  const bad = await ctx.newPage();
  await bad.goto(`${PAGE}#token=not.a.jwt`);
  await until(bad, 'the refusal', async () =>
    /cannot attach: the token is invalid or expired \(HTTP 401\)/.test(
      await bad.locator('#status').textContent()));
  check(true, 'a bad token is reported: ' + await bad.locator('#status').textContent());
  check(await bad.evaluate(() => sessionStorage.getItem('ptygate.token')) === null,
    'the bad token is forgotten');
  await bad.close();

  const a = await openPage(ctx, `${PAGE}#token=${env('PTG_WEB_TOKEN')}&label=alice-web`, 'controller');
  const ctl = a.page;
  check(!ctl.url().includes('#') && !ctl.url().includes('token'), 'the token left the address bar');
  check(await ctl.evaluate(() => sessionStorage.getItem('ptygate.token')) === env('PTG_WEB_TOKEN'),
    'the token is kept in sessionStorage');
  check((await state(ctl)).role === 'controller', 'joined as controller');
  await shows(ctl, /^\$ ?$/);

  const term = ctl.locator('#terminal');
  const before = lightPixels(await term.screenshot());
  await term.click();
  await ctl.keyboard.type('echo hi\n');
  await shows(ctl, /^hi$/);
  const shot = await term.screenshot();
  writeFileSync(join(shots, 'controller.png'), shot);
  const after = lightPixels(shot);
  check(after.width > 100 && after.height > 100, `the screenshot is a ${after.width}x${after.height} PNG`);
  check(after.light > before.light + 20,
    `the screenshot shows the new text (${before.light} -> ${after.light} light pixels)`);

  // An observer in its own page (its own sessionStorage).
  const o = await openPage(ctx, `${PAGE}?role=observer#token=${env('PTG_WEB_OBSERVER_TOKEN')}&label=bob-web`,
    'observer');
  const obs = o.page;
  check((await state(obs)).role === 'observer', 'the observer joined as observer');
  await shows(obs, /^hi$/);
  check(JSON.stringify(await screen(obs)) === JSON.stringify(await screen(ctl)),
    'the observer shows the same screen');
  check(await obs.locator('#members').textContent().then((t) => /alice-web/.test(t) && /bob-web \(you\)/.test(t)),
    'the observer sees who controls and who watches');
  await shows(ctl, /^\$ ?$/);
  await obs.locator('#terminal').click();
  await obs.keyboard.type('echo observer-typed\n');
  await ctl.waitForTimeout(1000);
  check(!(await screen(ctl)).some((l) => l.includes('observer-typed')), 'the observer cannot type');
  writeFileSync(join(shots, 'observer.png'), await obs.locator('#terminal').screenshot());

  // History that holds terminal queries (device attributes, cursor
  // position, window size), printed while the gateway is down: the
  // reconnect replays it, and cat -v would show any answer as ^[.
  const flag = env('PTG_WEB_FLAG');
  await term.click();
  await ctl.keyboard.type(`while [ ! -e ${flag} ]; do sleep 0.1; done; seq 1 ${HISTORY_LINES}; printf 'MARK%s\\033[c\\033[6n\\033[18t\\033[>c\\n' -1 & cat -v\n`);
  await until(ctl, 'cat -v to start', async () => (await screen(ctl)).some((l) => l.includes('cat -v')));
  await ctl.waitForTimeout(500);
  const seqBefore = (await state(ctl)).lastSeq;
  const connectsBefore = (await state(ctl)).connects;

  await ask('kill-gateway'); // the driver also creates the flag file
  await until(ctl, 'the page to notice the drop', async () => /reconnecting/.test((await state(ctl)).status));
  check(true, `status while away: "${(await state(ctl)).status}"`);
  await ctl.keyboard.type('typed-while-away');
  await ctl.waitForTimeout(1500); // MARK is printed into the history meanwhile
  await ask('start-gateway');

  await until(ctl, 'the reconnect', async () => {
    const s = await state(ctl);
    return s.joined && s.connects > connectsBefore && s.status === 'connected';
  }, 45000);
  await joined(obs);
  const st = await state(ctl);
  check(st.lastSeq > seqBefore, `replay brought the sequence on (${seqBefore} -> ${st.lastSeq})`);
  await shows(ctl, /^MARK-1$/);
  await ctl.waitForTimeout(1500); // time for any answer to arrive and echo
  const rows = await screen(ctl);
  const mark = rows.indexOf('MARK-1');
  check(mark > 0 && rows[mark - 1] === String(HISTORY_LINES),
    'the screen is intact after the reconnect (the history printed while away, then MARK)');
  check(!rows.some((l) => l.includes('^[')), 'no answer to a replayed query was typed into the session');
  check(!rows.some((l) => l.includes('typed-while-away')), 'input typed while away was not re-sent');
  await shows(obs, /^MARK-1$/);
  check(JSON.stringify(await screen(obs)) === JSON.stringify(rows),
    'the observer shows the same screen after the reconnect');
  writeFileSync(join(shots, 'reconnected.png'), await term.screenshot());

  // Live queries still get answers (the hygiene is for history only).
  await ctl.keyboard.press('Control+C');
  await shows(ctl, /^\$ ?$/);
  await ctl.keyboard.type("printf 'LIVE%s\\033[c\\n' -2; cat -v\n");
  await shows(ctl, /^LIVE-2$/);
  await until(ctl, 'the answer to a live query', async () => (await screen(ctl)).some((l) => l === '^[[?1;2c'));

  // Bracketed paste passes through: the program turned the mode on, so
  // the paste arrives wrapped in its markers (cat -v shows them).
  await ctl.keyboard.press('Control+C');
  await shows(ctl, /^\$ ?$/);
  await ctl.keyboard.type("printf '\\033[?2004h'; cat -v\n");
  await ctl.waitForTimeout(500);
  await ctl.evaluate(() => {
    const dt = new DataTransfer();
    dt.setData('text/plain', 'PASTED');
    const ta = document.querySelector('#terminal textarea');
    ta.dispatchEvent(new ClipboardEvent('paste', { clipboardData: dt, bubbles: true, cancelable: true }));
  });
  await ctl.keyboard.press('Enter');
  await shows(ctl, /^\^\[\[200~PASTED\^\[\[201~$/);

  // Release control, and ask for it back, with the page's buttons.
  await ctl.locator('#release-control').click();
  await until(ctl, 'the release', async () => (await state(ctl)).role === 'observer');
  check(await ctl.locator('#request-control').isVisible(), 'an observer is offered "Request control"');
  await ctl.keyboard.type('ignored-as-observer');
  await ctl.locator('#request-control').click();
  await until(ctl, 'control again', async () => (await state(ctl)).role === 'controller');
  check(!(await screen(ctl)).some((l) => l.includes('ignored-as-observer')), 'an observer\'s keys are not sent');
  await term.click();

  // The end of the session reaches the status line with its exit code.
  await ctl.keyboard.press('Control+C');
  await shows(ctl, /^\$ ?$/);
  await ctl.keyboard.type('exit 3\n');
  await until(ctl, 'the session end', async () =>
    /session ended with exit code 3/.test((await state(ctl)).status));
  check(true, 'status: ' + (await state(ctl)).status);
  await until(obs, 'the observer to see the end', async () =>
    /session ended with exit code 3/.test((await state(obs)).status));

  // The order of a Keyframe against the frames around it, whatever
  // xterm.js still has to parse: frames handed to the (now idle) observer
  // page in one go, as a burst from the socket would be.
  await obs.evaluate(() => {
    const p = window.ptygate, s = p.lastSeq, b64 = (t) => btoa(t);
    const frame = (sequence, payload) => p.onFrame({ op: 'pty.session_frame', sequence, payload });
    frame(s + 1, { kind: 'Output', stream: 'stdout', data: b64('BEFORE-KEYFRAME\r\n'.repeat(500)) });
    frame(undefined, { kind: 'Error', code: 'PTY_OUTPUT_LAGGED', message: 'lagged' });
    frame(s + 2, { kind: 'Keyframe', snapshot: b64('\x1b[?1049l\x1bcKEYFRAME-SCREEN'),
      snapshot_format: 'vt100-screen-state-v1', snapshot_cols: p.term.cols,
      snapshot_rows: p.term.rows, anchor_sequence: s + 2 });
    frame(s + 3, { kind: 'Output', stream: 'stdout', data: b64('\r\nAFTER-KEYFRAME') });
  });
  await shows(obs, /^AFTER-KEYFRAME$/);
  const kf = await screen(obs);
  check(kf[0] === 'KEYFRAME-SCREEN' && kf[1] === 'AFTER-KEYFRAME' && !kf.some((l) => l.includes('BEFORE')),
    'a Keyframe applies after what came before it and before what follows');

  // A reset (RIS, which every Keyframe and most snapshots hold) forgets
  // xterm.js's row height until its next animation frame; a scroll event
  // of the viewport at scrollTop 0 in between (the browser clamping the
  // shrunk scroll area, as a loaded machine lets happen) made the view
  // NaN rows down for good: a blank screen whatever followed.
  await obs.evaluate(() => new Promise((resolve) => {
    const p = window.ptygate, s = p.lastSeq, b64 = (t) => btoa(t);
    const frame = (sequence, payload) => p.onFrame({ op: 'pty.session_frame', sequence, payload });
    const viewport = p.term.element.querySelector('.xterm-viewport');
    frame(undefined, { kind: 'Error', code: 'PTY_OUTPUT_LAGGED', message: 'lagged' });
    frame(s + 1, { kind: 'Keyframe', snapshot: b64('\x1bcSCROLLED-KEYFRAME'),
      snapshot_format: 'vt100-screen-state-v1', snapshot_cols: p.term.cols,
      snapshot_rows: p.term.rows, anchor_sequence: s + 1 });
    // Parsed with the Keyframe, before any animation frame.
    p.term.write('', () => {
      viewport.scrollTop = 0;
      viewport.dispatchEvent(new Event('scroll'));
      resolve();
    });
  }));
  await shows(obs, /^SCROLLED-KEYFRAME$/);
  const view = await debugState(obs);
  check(Number.isInteger(view.viewportY),
    `a scroll event right after a reset leaves the view on the screen (viewportY ${view.viewportY})`);

  for (const [name, p] of [['controller', a.problems], ['observer', o.problems]])
    check(p.length === 0, `no console errors on the ${name} page ${p.length ? JSON.stringify(p) : ''}`);
}

main().then(() => { log('PASS'); process.exit(0); },
  (e) => { log('FAIL: ' + (e.stack || e)); process.exit(1); });
