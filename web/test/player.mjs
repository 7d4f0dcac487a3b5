// player: the recording player ("?play") in Debian's chromium against a
// real gateway and sidecar that tests/e2e/test_web_player.py started,
// with the recordings of known programs: an exited one (printf lines with
// sleeps, one on a red background) and a live one that prints its second
// line only once this driver creates a file. Playback time is checked by
// the player's own clock, replaced by a counter the driver steps (never a
// wall-clock threshold); the terminal's text is read from xterm.js's
// buffer, and a screenshot's pixels are counted.
//
// Environment: PTG_WEB_BASE, PTG_WEB_INSTANCE, PTG_WEB_EXITED and
// PTG_WEB_EXITED_TOKEN (pty:observe for it), PTG_WEB_LIVE and
// PTG_WEB_LIVE_TOKEN (pty:observe for it), PTG_WEB_GATE (the file the live
// program waits for), PTG_WEB_SHOTS, PTG_CHROMIUM.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  env, log, check, withBrowser, screen, until, openPage, image, countColour, inkPixels, joined,
} from './pagekit.mjs';

const BASE = env('PTG_WEB_BASE');
const pageOf = (sid) => `${BASE}/agents/${env('PTG_WEB_INSTANCE')}/sessions/${sid}/`;
const EXITED = env('PTG_WEB_EXITED'), LIVE = env('PTG_WEB_LIVE');
const LINES = ['play line one', 'play line two', 'play line three'];
const RED = [0xcd, 0x00, 0x00]; // xterm.js's default ANSI red (the dark theme keeps it): the third line's background
const DARK_BG = [0x1e, 0x1e, 0x1e];
const STEP = 100; // ms of the injected clock per step
const near = (a, b) => Math.abs(a - b) < 1e-9;

const state = (page) => page.evaluate(() => window.ptygate.state());
const text = (page, sel) => page.locator(sel).textContent();
const settled = (page) => until(page, 'xterm.js to parse what was written', async () => {
  const s = await state(page);
  return s.parsed === s.shown;
});
const seek = async (page, t) => {
  await page.evaluate((v) => {
    const el = document.getElementById('seek');
    el.value = String(v);
    el.dispatchEvent(new Event('input'));
  }, t);
  await settled(page);
};
const rowsWith = async (page) => (await screen(page)).filter((l) => LINES.includes(l.trim()))
  .map((l) => l.trim());
// Steps the injected clock by STEP ms and runs one tick.
const step = (page) => page.evaluate((ms) => { window.fakeNow += ms; window.ptygate.tick(); }, STEP);

async function loaded(page) {
  await until(page, 'the recording to load', async () => (await state(page)).loads > 0);
  return state(page);
}

async function seekEndAndBack(page) {
  const s = await state(page);
  check(s.position === 0 && (await rowsWith(page)).length === 0, 'the player opens at 0:00 with nothing shown');
  await seek(page, s.duration);
  check(JSON.stringify(await rowsWith(page)) === JSON.stringify(LINES),
    `seeking to the end shows the three lines: ${JSON.stringify(await screen(page))}`);
  const t = await text(page, '#play-time');
  check(/^(\d+:\d\d\.\d) \/ \1$/.test(t), `the time shows the end: ${t}`);
  // Back to just after the first line: the terminal starts over.
  const first = await page.evaluate(() => window.ptygate.cast.events.find((e) => /one/.test(e.data)).t);
  await seek(page, first);
  check(JSON.stringify(await rowsWith(page)) === JSON.stringify(LINES.slice(0, 1)),
    'seeking back to the first line shows only it');
}

// The terminal's part of a screenshot, at 0:00 and at the end.
async function screenshot(page) {
  const clip = await page.locator('#terminal').boundingBox();
  await seek(page, 0);
  const empty = image(await page.screenshot({ clip }));
  await seek(page, (await state(page)).duration);
  const png = await page.screenshot({ clip });
  writeFileSync(join(env('PTG_WEB_SHOTS'), 'player-end.png'), png);
  const img = image(png);
  const red = countColour(img, RED, 12);
  const ink = inkPixels(img, DARK_BG), ink0 = inkPixels(empty, DARK_BG);
  check(countColour(empty, RED, 12) === 0 && red > 200,
    `the screenshot at the end shows the red line's background (${red} red pixels, none at 0:00)`);
  check(ink > ink0 + 1000, `the screenshot at the end shows text (${ink} inked pixels, ${ink0} at 0:00)`);
}

// Plays from 0 at a speed, one injected-clock step at a time, to the end.
async function playThrough(page, speed) {
  await seek(page, 0);
  await page.selectOption('#speed', String(speed));
  await page.evaluate(() => window.ptygate.play());
  let steps = 0;
  const positions = [];
  while ((await state(page)).playing) {
    await step(page);
    positions.push((await state(page)).position);
    if (++steps > 10000) throw new Error('playback never ended');
  }
  await settled(page);
  check(JSON.stringify(await rowsWith(page)) === JSON.stringify(LINES), `${speed}x plays every line`);
  return { steps, positions };
}

async function clockChecks(page) {
  await page.evaluate(() => { window.fakeNow = 0; window.ptygate.useClock(() => window.fakeNow); });
  const { duration } = await state(page);
  const one = await playThrough(page, 1);
  const four = await playThrough(page, 4);
  check(near(one.positions[0], STEP / 1000) && near(four.positions[0], 4 * STEP / 1000),
    `a step of ${STEP} ms advances 1x by ${one.positions[0]} s and 4x by ${four.positions[0]} s`);
  // Steps to the end: duration / (step x speed), rounded up (1 of slack
  // for the rounding of times in float).
  const due = (speed) => duration / (speed * STEP / 1000);
  check(Math.abs(four.steps - Math.ceil(due(4))) <= 1 && Math.abs(one.steps - Math.ceil(due(1))) <= 1
    && four.steps < one.steps && Math.abs(4 * four.steps - one.steps) <= 4,
  `4x ends in ${four.steps} steps, 1x in ${one.steps} (recording ${duration} s)`);

  // A click on the seek bar seeks, and the bar, focused, still follows
  // playback.
  await page.selectOption('#speed', '1');
  const bar = await page.locator('#seek').boundingBox();
  await page.mouse.click(bar.x + bar.width / 2, bar.y + bar.height / 2);
  await settled(page);
  const mid = (await state(page)).position;
  check(mid > duration * 0.3 && mid < duration * 0.7, `a click mid-bar seeks to the middle (${mid} s)`);
  await seek(page, 0);
  await page.evaluate(() => window.ptygate.play());
  await step(page);
  check(await page.evaluate(() => document.activeElement.id) === 'seek', 'the seek bar has the focus');
  const barAt = Number(await page.locator('#seek').inputValue());
  await page.evaluate(() => window.ptygate.pause());
  check(near(barAt, STEP / 1000), `the clicked bar follows playback (${barAt} s)`);

  // Space plays and pauses; the arrows step 5 s.
  await seek(page, 0);
  await page.locator('#terminal').click();
  await page.keyboard.press('Space');
  check((await state(page)).playing, 'Space plays');
  await page.keyboard.press('Space');
  check(!(await state(page)).playing, 'Space pauses');
  await page.keyboard.press('ArrowRight');
  check((await state(page)).position === duration, 'the right arrow steps 5 s (here: to the end)');
  await page.keyboard.press('ArrowLeft');
  check((await state(page)).position === 0, 'the left arrow steps back 5 s (here: to the start)');

  // Pause: the position and the time shown stay while the clock runs on.
  await seek(page, 0);
  await page.selectOption('#speed', '1');
  await page.evaluate(() => window.ptygate.play());
  for (let i = 0; i < 2; i++) await step(page);
  await page.click('#play-toggle');
  const paused = await state(page);
  const shown = await text(page, '#play-time');
  for (let i = 0; i < 50; i++) await step(page);
  const later = await state(page);
  check(!paused.playing && near(paused.position, 2 * STEP / 1000) && later.position === paused.position && await text(page, '#play-time') === shown
    && await text(page, '#play-toggle') === 'Play',
  `paused at ${paused.position} s, it stays there for 5 s of the clock (${shown})`);
}

// The real clock and the Play button: played at 4x to its end.
async function realClock(page) {
  await page.evaluate(() => window.ptygate.useClock(() => performance.now()));
  await seek(page, 0);
  await page.selectOption('#speed', '4');
  await page.click('#play-toggle');
  // The clock says the end has come before the player's next tick has
  // written the last events (a loaded machine delays that tick): wait
  // for both.
  await until(page, 'playback to end', async () => {
    const s = await state(page);
    return !s.playing && s.position === s.duration && s.shown === s.events;
  }, 60000);
  await settled(page);
  check(JSON.stringify(await rowsWith(page)) === JSON.stringify(LINES), 'Play at 4x by the real clock plays to the end');
}

async function exited(ctx) {
  const urls = [];
  const { page, problems } = await openPage(ctx,
    `${pageOf(EXITED)}?play#token=${env('PTG_WEB_EXITED_TOKEN')}`, 'exited player', { join: false });
  page.on('request', (r) => { if (/\/recording/.test(r.url())) urls.push([r.url(), r.headers().authorization]); });
  await loaded(page);
  await seekEndAndBack(page);
  await screenshot(page);
  await clockChecks(page);
  await realClock(page);
  await page.click('#play-reload');
  await until(page, 'a reload', async () => (await state(page)).loads > 1);
  check(urls.length > 0 && urls.every(([u, a]) => !/token|eyJ/.test(u) && /^Bearer /.test(a || '')),
    'the recording is fetched with an Authorization header, no token in the URL');
  check(problems.length === 0, 'no errors on the page: ' + problems.join('; '));
  await page.close();
}

async function live(ctx) {
  // From the session's page, "Recording" opens the player.
  const { page, problems } = await openPage(ctx,
    `${pageOf(LIVE)}?role=observer#token=${env('PTG_WEB_LIVE_TOKEN')}`, 'live session');
  await joined(page);
  await Promise.all([page.waitForURL(/\?play$/), page.click('#recording-link')]);
  await loaded(page);
  await seek(page, (await state(page)).duration);
  check((await screen(page)).some((l) => l.trim() === 'live one')
    && !(await screen(page)).some((l) => l.trim() === 'live two'), 'the live recording so far shows its first line');
  writeFileSync(env('PTG_WEB_GATE'), '');
  await until(page, 'Reload to bring the second line', async () => {
    const before = (await state(page)).loads;
    await page.click('#play-reload');
    await until(page, 'the reload', async () => (await state(page)).loads > before);
    return page.evaluate(() => window.ptygate.cast.events.some((e) => /live two/.test(e.data)));
  }, 60000);
  await seek(page, (await state(page)).duration);
  check((await screen(page)).some((l) => l.trim() === 'live two'), 'after Reload the new line plays');
  check(problems.length === 0, 'no errors on the page: ' + problems.join('; '));
  await page.close();
}

async function refused(ctx) {
  // A token for the other session: the player says why it cannot play.
  const { page } = await openPage(ctx,
    `${pageOf(LIVE)}?play#token=${env('PTG_WEB_EXITED_TOKEN')}`, 'refused player', { join: false });
  await until(page, 'the refusal', async () => /HTTP 403/.test(await text(page, '#status')));
  check(true, 'a token for another session: ' + await text(page, '#status'));
  await page.close();
}

withBrowser(async (ctx) => {
  await exited(ctx);
  await live(ctx);
  await refused(ctx);
}).then(() => { log('PASS'); process.exit(0); },
  (e) => { log('FAIL: ' + (e.stack || e)); process.exit(1); });
