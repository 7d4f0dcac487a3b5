// features: the page's own controls in Debian's chromium against a real
// gateway and sidecar that tests/e2e/test_web_features.py started, each
// checked by what it does and by a screenshot read back pixel by pixel:
// the tab title and labels (the principal), the size line ("120x30, set
// by you"), clickable links, the scrollback search, font size, theme, and
// the key bar on a phone-sized window (bytes echoed back by od -c).
//
// Environment: PTG_WEB_BASE, PTG_WEB_INSTANCE, PTG_WEB_SESSION,
// PTG_WEB_TOKEN (sub alice, pty:control), PTG_WEB_OBSERVER_TOKEN (sub bob,
// pty:observe), PTG_WEB_SHOTS (where screenshots go), PTG_CHROMIUM.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  env, log, check, withBrowser, screen, until, shows, prompt, openPage, typeLine,
  image, countColour, inkPixels, cellBox, STEP_MS,
} from './pagekit.mjs';

const PAGE = `${env('PTG_WEB_BASE')}/agents/${env('PTG_WEB_INSTANCE')}/sessions/${env('PTG_WEB_SESSION')}/`;
const SHOTS = env('PTG_WEB_SHOTS');
const DARK_BG = [0x1e, 0x1e, 0x1e];
const LIGHT_BG = [0xff, 0xff, 0xff];
const ACTIVE_MATCH = [0xff, 0x8c, 0x00];
const OTHER_MATCH = [0x7a, 0x5c, 0x00];
const PRESSED = [0x2e, 0x6b, 0x30];
const LINK = 'http://link.test/ptygate?x=1';

const save = (name, png) => { writeFileSync(join(SHOTS, name), png); return image(png); };
const text = (page, sel) => page.locator(sel).textContent();
const rowOf = async (page, want) => (await screen(page)).indexOf(want);

// The widest run of ink along one pixel row inside a band of the page,
// as a fraction of the band's width: an underline is a row inked across.
function inkedRowFraction(img, x0, x1, y0, y1, bg) {
  let best = 0;
  for (let y = Math.max(0, Math.round(y0)); y < Math.min(img.height, Math.round(y1)); y++) {
    let n = 0;
    for (let x = Math.round(x0); x < Math.round(x1); x++) {
      const [r, g, b] = img.at(x, y);
      if (Math.abs(r - bg[0]) + Math.abs(g - bg[1]) + Math.abs(b - bg[2]) > 60) n++;
    }
    best = Math.max(best, n / Math.max(1, Math.round(x1) - Math.round(x0)));
  }
  return best;
}

// The horizontal extent of the ink in one row of cells.
function inkWidth(img, box, row, bg) {
  let lo = Infinity, hi = -Infinity;
  for (let y = Math.round(box.y + row * box.h); y < Math.round(box.y + (row + 1) * box.h); y++)
    for (let x = Math.round(box.x); x < img.width; x++) {
      const [r, g, b] = img.at(x, y);
      if (Math.abs(r - bg[0]) + Math.abs(g - bg[1]) + Math.abs(b - bg[2]) > 60) {
        lo = Math.min(lo, x); hi = Math.max(hi, x);
      }
    }
  return hi >= lo ? hi - lo + 1 : 0;
}

async function titleAndSize(ctl) {
  check(/^alice · /.test(await ctl.title()), `the tab is titled by the principal: "${await ctl.title()}"`);
  await until(ctl, 'the members', async () => /alice \(you\)/.test(await text(ctl, '#members')));
  check(true, 'the member list names the principal: ' + await text(ctl, '#members'));
  await until(ctl, 'the size line', async () => /^\d+x\d+, set by you$/.test(await text(ctl, '#size')));
  const t = await ctl.evaluate(() => `${window.ptygate.term.cols}x${window.ptygate.term.rows}`);
  check((await text(ctl, '#size')).startsWith(t + ','), `the size line shows the session's size: ${await text(ctl, '#size')}`);
}

async function links(ctx, ctl) {
  await ctx.route('http://link.test/**', (route) => route.fulfill({
    status: 200, contentType: 'text/html', body: '<title>linked</title><p>linked</p>' }));
  await typeLine(ctl, `clear; echo ${LINK}`);
  await shows(ctl, new RegExp(`^${LINK.replace(/[?.]/g, '\\$&')}$`));
  const row = await rowOf(ctl, LINK);
  const box = await cellBox(ctl);
  const band = [box.x, box.x + LINK.length * box.w, box.y + row * box.h, box.y + (row + 1) * box.h];
  const before = inkedRowFraction(image(await ctl.screenshot()), ...band, DARK_BG);
  await ctl.mouse.move(box.x + 6.5 * box.w, box.y + (row + 0.5) * box.h);
  await until(ctl, 'the link to be hovered', () => ctl.evaluate(() =>
    document.querySelector('#terminal .xterm-screen').classList.contains('xterm-cursor-pointer')));
  const hovered = save('link-hover.png', await ctl.screenshot());
  const after = inkedRowFraction(hovered, ...band, DARK_BG);
  check(before < 0.9 && after >= 0.9,
    `the hovered link is underlined in the screenshot (inked row ${before.toFixed(2)} -> ${after.toFixed(2)})`);
  const popup = ctx.waitForEvent('page', { timeout: STEP_MS });
  await ctl.mouse.click(box.x + 6.5 * box.w, box.y + (row + 0.5) * box.h);
  const opened = await popup;
  await until(opened, 'the link to load', async () => opened.url() === LINK);
  check(true, `a click opens the link in a new tab: ${opened.url()}`);
  await opened.close();
}

async function search(ctl) {
  await typeLine(ctl, "clear; printf 'NEEDLE-%s\\n' 7; seq 1 10; printf 'NEEDLE-%s\\n' 7; seq 1 200");
  await shows(ctl, /^200$/);
  check(!(await screen(ctl)).includes('NEEDLE-7'), 'the needle is in the scrollback, off the screen');
  check(countColour(image(await ctl.screenshot()), ACTIVE_MATCH) === 0, 'no highlight before searching');
  await ctl.locator('#search-toggle').click();
  await ctl.locator('#search-input').fill('NEEDLE-7');
  await ctl.locator('#search-input').press('Enter');
  await until(ctl, 'the match count', async () => /^\d of 2$/.test(await text(ctl, '#search-count')));
  check(true, 'the search counts the matches: ' + await text(ctl, '#search-count'));
  check(await ctl.evaluate(() => window.ptygate.term.getSelection()) === 'NEEDLE-7', 'a match is selected');
  check((await screen(ctl)).filter((l) => l === 'NEEDLE-7').length === 2, 'the view scrolled back to the matches');
  const first = await text(ctl, '#search-count');
  await ctl.locator('#search-prev').click();
  await until(ctl, 'the previous match', async () => (await text(ctl, '#search-count')) !== first);
  check(true, `previous moves between matches: ${first} -> ${await text(ctl, '#search-count')}`);
  const shot = save('search.png', await ctl.screenshot());
  const active = countColour(shot, ACTIVE_MATCH), other = countColour(shot, OTHER_MATCH);
  check(active > 20 && other > 20,
    `the screenshot shows the highlights (${active} px active match, ${other} px other match)`);
  await ctl.locator('#search-input').press('Escape');
  check(await ctl.locator('#search-box').isHidden(), 'Escape closes the search');
  await until(ctl, 'the highlights to go', async () =>
    countColour(image(await ctl.screenshot()), OTHER_MATCH) === 0);
  check(true, 'closing the search clears the highlights');
}

async function fontSize(ctl) {
  const rowHeight = () => ctl.evaluate(() =>
    document.querySelector('#terminal .xterm-rows > div').getBoundingClientRect().height);
  await typeLine(ctl, "clear; printf '%s\\n' MMMMMMMMMMMMMMMMMMMM");
  await shows(ctl, /^M{20}$/);
  const h0 = await rowHeight(), cols0 = await ctl.evaluate(() => window.ptygate.term.cols);
  const w0 = inkWidth(image(await ctl.screenshot()), await cellBox(ctl), 0, DARK_BG);
  const size0 = Number((await text(ctl, '#font-size')).replace('px', ''));
  for (let i = 0; i < 4; i++) await ctl.locator('#font-bigger').click();
  await until(ctl, 'the larger font', async () => (await rowHeight()) > h0);
  check(await ctl.evaluate(() => localStorage.getItem('ptygate.fontSize')) === String(size0 + 4),
    `the font size is kept in localStorage (${size0} -> ${size0 + 4})`);
  await until(ctl, 'the session to follow the new cell size', async () =>
    (await ctl.evaluate(() => window.ptygate.term.cols)) < cols0
    && /, set by you$/.test(await text(ctl, '#size')));
  check(true, `a controller's session follows its cells: ${cols0} -> ${await text(ctl, '#size')}`);
  await shows(ctl, /^M{20}$/);
  const w1 = inkWidth(save('font.png', await ctl.screenshot()), await cellBox(ctl), 0, DARK_BG);
  check(w0 > 50 && w1 > w0 * 1.15, `the screenshot's text is wider (${w0} -> ${w1} px), rows ${h0} -> ${await rowHeight()} px`);
}

async function theme(ctl) {
  const termShot = async () => image(await ctl.locator('#terminal').screenshot());
  const corner = (img) => img.at(img.width - 6, img.height - 6);
  check(JSON.stringify(corner(await termShot())) === JSON.stringify(DARK_BG), 'dark by default');
  await ctl.locator('#theme-select').selectOption('light');
  await until(ctl, 'the light theme', async () => JSON.stringify(corner(await termShot())) === JSON.stringify(LIGHT_BG));
  const light = save('theme-light.png', await ctl.screenshot());
  check(countColour(light, LIGHT_BG, 2) > light.width * light.height / 2,
    'the light theme\'s screenshot is mostly white');
  check(inkPixels(light, LIGHT_BG) > 200, 'with dark text on it');
  await ctl.reload();
  await until(ctl, 'the join after a reload', () => ctl.evaluate(() => !!(window.ptygate && window.ptygate.joined)));
  check(await ctl.locator('#theme-select').inputValue() === 'light', 'the theme is kept across a reload');
  check(JSON.stringify(corner(await termShot())) === JSON.stringify(LIGHT_BG), 'and drawn after it');
  check((await text(ctl, '#font-size')) === '18px', 'so is the font size');
  await ctl.locator('#theme-select').selectOption('dark');
  await until(ctl, 'the dark theme', async () => JSON.stringify(corner(await termShot())) === JSON.stringify(DARK_BG));
  check(true, 'back to dark');
}

// The key bar's keys reach a real program: od -c prints the bytes.
async function keyBar(ctl) {
  for (let i = 0; i < 4; i++) await ctl.locator('#font-smaller').click(); // od's lines fit a phone
  check(!(await ctl.locator('#keybar').isVisible()), 'no key bar on a wide desktop window');
  await ctl.setViewportSize({ width: 400, height: 700 });
  await until(ctl, 'the key bar on a phone-sized window', () => ctl.locator('#keybar').isVisible());
  check(true, 'a phone-sized window shows the key bar');
  const key = (k) => ctl.locator(`#keybar [data-key="${k}"]`).click();
  await typeLine(ctl, 'clear; echo od-next; od -c');
  await shows(ctl, /^od-next$/);
  for (const k of ['esc', 'tab', 'up', '|', '~']) await key(k);
  await ctl.keyboard.press('Enter');
  await key('ctrl');
  check(await ctl.locator('#keybar [data-key="ctrl"]').getAttribute('aria-pressed') === 'true', 'Ctrl is held');
  const bar = save('keybar.png', await ctl.locator('#keybar').screenshot());
  check(countColour(bar, PRESSED) > 100, 'the screenshot shows Ctrl held');
  // Ctrl held, then d on the keyboard: ^D, the end of od's input (od
  // prints whole 16-byte lines until then).
  await ctl.keyboard.press('d');
  await shows(ctl, /^0000000 +033 +\\t +033 +\[ +A +\| +~ +\\n$/);
  check(true, 'Esc, Tab, Up, | and ~ send ESC, TAB, ESC [ A, | and ~');
  await shows(ctl, /^0000010$/);
  await prompt(ctl);
  check(await ctl.locator('#keybar [data-key="ctrl"]').getAttribute('aria-pressed') === 'false',
    'Ctrl+D ended od, and Ctrl is let go');
  // In application cursor mode (DECCKM) the arrows are ESC O A.
  await typeLine(ctl, "clear; printf '\\033[?1h'; od -c");
  await until(ctl, 'application cursor mode', () =>
    ctl.evaluate(() => window.ptygate.term.modes.applicationCursorKeysMode));
  await key('up');
  await key('left');
  await ctl.keyboard.press('Enter');
  await key('ctrl');
  await ctl.keyboard.press('d');
  await shows(ctl, /^0000000 +033 +O +A +033 +O +D +\\n$/);
  check(true, 'with DECCKM set the arrows send ESC O A and ESC O D');
  await prompt(ctl);
  await typeLine(ctl, "printf '\\033[?1l'; clear; echo cat-next; cat");
  await shows(ctl, /^cat-next$/);
  await key('ctrl');
  await ctl.keyboard.press('c');
  await prompt(ctl);
  check(true, 'Ctrl (held) + c interrupted cat');
}

// A desktop observer sees the phone's size and who set it.
async function observerSees(ctx) {
  const o = await openPage(ctx, `${PAGE}?role=observer#token=${env('PTG_WEB_OBSERVER_TOKEN')}`, 'observer');
  const obs = o.page;
  check(/^bob · /.test(await obs.title()), `the observer's tab: "${await obs.title()}"`);
  await until(obs, 'the size line', async () =>
    /^\d+x\d+, set by alice · narrower than this window: lines wrap at \d+$/.test(await text(obs, '#size')));
  check(true, 'the observer sees the size and who set it: ' + await text(obs, '#size'));
  check(/alice/.test(await text(obs, '#members')) && /bob \(you\)/.test(await text(obs, '#members')),
    'members are named by their principals: ' + await text(obs, '#members'));
  const line = save('size-line.png', await obs.locator('#statusbar').screenshot());
  check(line.width > 300 && inkPixels(line, [0x2d, 0x2d, 0x2d]) > 300, 'the screenshot of the status line has text');
  return o;
}

async function run(ctx) {
  const a = await openPage(ctx, `${PAGE}#token=${env('PTG_WEB_TOKEN')}`, 'controller');
  const ctl = a.page;
  await prompt(ctl);
  await titleAndSize(ctl);
  await links(ctx, ctl);
  await search(ctl);
  await fontSize(ctl);
  await theme(ctl);
  await keyBar(ctl);
  const o = await observerSees(ctx);
  for (const [name, p] of [['controller', a.problems], ['observer', o.problems]])
    check(p.length === 0, `no console errors on the ${name} page ${p.length ? JSON.stringify(p) : ''}`);
}

withBrowser(run).then(() => { log('PASS'); process.exit(0); },
  (e) => { log('FAIL: ' + (e.stack || e)); process.exit(1); });
