// pagekit: what the page's browser drivers share (features.mjs,
// proxy.mjs): Debian's chromium through playwright-core, bounded waits on
// the page's own state (never fixed sleeps), and the terminal's screen.
import { chromium } from 'playwright-core';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodePng } from './png.mjs';

export const STEP_MS = 20000; // every wait is bounded; generous for a loaded machine

export const env = (k) => {
  if (!process.env[k]) throw new Error(`${k} is not set`);
  return process.env[k];
};
export const log = (s) => process.stdout.write(`browser: ${s}\n`);
export function check(ok, what) {
  if (!ok) throw new Error('check failed: ' + what);
  log('ok: ' + what);
}

// A fresh profile each run; ignoreHTTPSErrors for a test's self-signed
// proxy certificate.
export async function withBrowser(fn, { viewport = { width: 900, height: 500 } } = {}) {
  const profile = mkdtempSync(join(tmpdir(), 'ptg-chromium-'));
  const ctx = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.PTG_CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport, ignoreHTTPSErrors: true, timeout: 60000,
  });
  try {
    await fn(ctx);
  } finally {
    await ctx.close().catch(() => {});
    rmSync(profile, { recursive: true, force: true });
  }
}

// The visible screen of a page's terminal, one string per row.
export const screen = (page) => page.evaluate(() => {
  const b = window.ptygate.term.buffer.active;
  const rows = [];
  for (let i = 0; i < window.ptygate.term.rows; i++)
    rows.push((b.getLine(b.viewportY + i)?.translateToString(true)) ?? '');
  return rows;
});

export async function until(page, what, fn, ms = STEP_MS) {
  const end = Date.now() + ms;
  let last;
  while (Date.now() < end) {
    last = await fn();
    if (last) return last;
    await page.waitForTimeout(100);
  }
  throw new Error(`timed out waiting for ${what}; screen:\n`
    + `${(await screen(page).catch(() => [])).join('\n')}\nstatus: `
    + `${await page.locator('#status').textContent().catch(() => '?')}`);
}
export const joined = (page) => until(page, 'the join',
  () => page.evaluate(() => !!(window.ptygate && window.ptygate.joined)));
export const shows = (page, re) => until(page, `the screen to show ${re}`,
  async () => (await screen(page)).some((l) => re.test(l)));
// The shell prompt is back on the last non-empty row.
export const prompt = (page) => until(page, 'the prompt', async () => {
  const rows = (await screen(page)).filter((l) => l.trim());
  return rows.length && /^\$ ?$/.test(rows[rows.length - 1]);
});

// Console errors and page errors, for a final "no errors" check.
export async function openPage(ctx, url, label, { join = true } = {}) {
  const page = await ctx.newPage();
  const problems = [];
  page.on('console', (m) => { if (m.type() === 'error') problems.push(m.text()); });
  page.on('pageerror', (e) => problems.push(String(e)));
  const resp = await page.goto(url);
  check(resp.status() === 200, `${label}: the page loads (HTTP ${resp.status()})`);
  if (join) await joined(page);
  return { page, problems };
}

export async function typeLine(page, text) {
  await page.locator('#terminal textarea').focus();
  await page.keyboard.type(text + '\n');
}

// ---- screenshots ----

export function image(png) {
  const img = decodePng(png);
  img.at = (x, y) => {
    const o = (y * img.width + x) * img.channels;
    return [img.data[o], img.data[o + 1], img.data[o + 2]];
  };
  return img;
}

// How many pixels are within tol of rgb.
export function countColour(img, [r, g, b], tol = 8) {
  let n = 0;
  for (let i = 0; i < img.width * img.height; i++) {
    const o = i * img.channels;
    if (Math.abs(img.data[o] - r) <= tol && Math.abs(img.data[o + 1] - g) <= tol
      && Math.abs(img.data[o + 2] - b) <= tol) n++;
  }
  return n;
}

// Pixels that differ from the background colour bg by more than tol.
export function inkPixels(img, bg, tol = 60) {
  let n = 0;
  for (let i = 0; i < img.width * img.height; i++) {
    const o = i * img.channels;
    const d = Math.abs(img.data[o] - bg[0]) + Math.abs(img.data[o + 1] - bg[1])
      + Math.abs(img.data[o + 2] - bg[2]);
    if (d > tol) n++;
  }
  return n;
}

// The terminal's cell geometry in page pixels, for pointing at a cell.
export const cellBox = (page) => page.evaluate(() => {
  const r = document.querySelector('#terminal .xterm-screen').getBoundingClientRect();
  const t = window.ptygate.term;
  return { x: r.left, y: r.top, w: r.width / t.cols, h: r.height / t.rows };
});
