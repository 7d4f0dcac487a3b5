// proxy: the page behind real nginx (tests/e2e/test_web_proxy.py starts
// it with deploy/nginx/ptygate-fleet.conf, and a location derived from it
// that serves the gateway under a path prefix). Every file the page loads
// must come back 200, and the page must attach and echo through the proxy:
// the fleet's session page, and the prefix's picker, listing and session.
//
// Environment: PTG_WEB_FLEET_PAGE (a session page through the fleet
// location), PTG_WEB_PREFIX_ROOT (the picker under the prefix, ending in
// "/"), PTG_WEB_SESSION, PTG_WEB_TOKEN (pty:control sessions, the
// instance), PTG_WEB_SHOTS, PTG_CHROMIUM.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  env, log, check, withBrowser, shows, until, joined, prompt, typeLine, image, inkPixels,
} from './pagekit.mjs';

const SHOTS = env('PTG_WEB_SHOTS');

// Every response the page gets, to show that no file was missed.
function watch(page) {
  const bad = [], problems = [];
  page.on('response', (r) => { if (r.status() >= 400) bad.push(`${r.status()} ${r.url()}`); });
  page.on('requestfailed', (r) => bad.push(`failed ${r.url()}`));
  page.on('console', (m) => { if (m.type() === 'error') problems.push(m.text()); });
  page.on('pageerror', (e) => problems.push(String(e)));
  return { bad, problems };
}

async function echoes(page, name, word) {
  await prompt(page);
  await typeLine(page, `echo ${word}-$((6*7))`);
  await shows(page, new RegExp(`^${word}-42$`));
  const shot = image(await page.locator('#terminal').screenshot());
  writeFileSync(join(SHOTS, `${name}.png`), await page.locator('#terminal').screenshot());
  check(shot.width > 300 && inkPixels(shot, [0x1e, 0x1e, 0x1e]) > 100,
    `${name}: the screenshot shows the terminal's text (${shot.width}x${shot.height})`);
}

async function fleetPage(ctx) {
  const page = await ctx.newPage();
  const w = watch(page);
  const url = env('PTG_WEB_FLEET_PAGE');
  const resp = await page.goto(`${url}#token=${env('PTG_WEB_TOKEN')}`);
  check(resp.status() === 200, `fleet: the session page loads through nginx (${url})`);
  await joined(page);
  await echoes(page, 'fleet', 'through-fleet');
  check(w.bad.length === 0 && w.problems.length === 0,
    `fleet: every file loaded, no errors ${JSON.stringify([...w.bad, ...w.problems])}`);
  await page.close();
}

async function prefixPages(ctx) {
  const page = await ctx.newPage();
  const w = watch(page);
  const root = env('PTG_WEB_PREFIX_ROOT');
  const resp = await page.goto(`${root}#token=${env('PTG_WEB_TOKEN')}`);
  check(resp.status() === 200, `prefix: the picker loads at ${root}`);
  const link = page.locator(`#session-table a:text-is("${env('PTG_WEB_SESSION')}")`);
  await until(page, 'the session list', () => link.isVisible());
  const href = await link.getAttribute('href');
  check(href.startsWith(new URL(root).pathname + 'agents/'), `prefix: the listed session links under the prefix (${href})`);
  await link.click();
  await until(page, 'the session page', async () => page.url().startsWith(root + 'agents/'));
  await joined(page);
  await echoes(page, 'prefix', 'under-prefix');
  check(w.bad.length === 0 && w.problems.length === 0,
    `prefix: every file and call went through, no errors ${JSON.stringify([...w.bad, ...w.problems])}`);
  await page.close();
}

async function run(ctx) {
  await fleetPage(ctx);
  await prefixPages(ctx);
}

withBrowser(run).then(() => { log('PASS'); process.exit(0); },
  (e) => { log('FAIL: ' + (e.stack || e)); process.exit(1); });
