// approve: control approval in Debian's chromium against a real gateway
// and sidecar that tests/e2e/test_web_approve.py started, on a session
// whose control policy is approve: an observer's "Request control" puts a
// banner on every page, the controller's with Approve and Deny; Deny
// leaves the roles as they were, Approve hands control (the observer's
// keys then reach the shell). The banner is checked in a screenshot.
//
// Environment: PTG_WEB_BASE, PTG_WEB_INSTANCE, PTG_WEB_SESSION,
// PTG_WEB_TOKEN (sub alice), PTG_WEB_ASKER_TOKEN (sub bob), both
// pty:control; PTG_WEB_SHOTS, PTG_CHROMIUM.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  env, log, check, withBrowser, until, shows, prompt, openPage, typeLine, image, countColour,
} from './pagekit.mjs';

const PAGE = `${env('PTG_WEB_BASE')}/agents/${env('PTG_WEB_INSTANCE')}/sessions/${env('PTG_WEB_SESSION')}/`;
const BANNER = [0x5a, 0x4a, 0x1d];
const APPROVE = [0x2e, 0x6b, 0x30];

const role = (page) => page.evaluate(() => window.ptygate.role);
const banner = (page) => page.locator('#control-banner');

async function ask(bob, alice) {
  await bob.locator('#request-control').click();
  await until(bob, 'the banner on the asker\'s page', async () =>
    /bob \(you\) asks for control/.test(await banner(bob).textContent()));
  check(await role(bob) === 'observer', 'the asker is still an observer while it waits');
  check(await bob.locator('#control-banner button').count() === 0, 'an observer is offered no answer');
  await until(alice, 'the banner on the controller\'s page', async () =>
    await banner(alice).isVisible() && /bob asks for control/.test(await banner(alice).textContent()));
}

async function run(ctx) {
  const a = await openPage(ctx, `${PAGE}#token=${env('PTG_WEB_TOKEN')}`, 'controller');
  const alice = a.page;
  await prompt(alice);
  check(await role(alice) === 'controller', 'alice controls');
  check(!(await banner(alice).isVisible()), 'no banner while nobody asks');
  const b = await openPage(ctx, `${PAGE}?role=observer#token=${env('PTG_WEB_ASKER_TOKEN')}`, 'asker');
  const bob = b.page;

  await ask(bob, alice);
  await alice.locator('#control-banner button.deny').click();
  await until(bob, 'the denial', async () => /alice denied control to bob/.test(
    await bob.locator('#status').textContent()));
  check(await role(bob) === 'observer', 'denied: bob is still an observer');
  await until(alice, 'the banner to go', async () => !(await banner(alice).isVisible()));

  await ask(bob, alice);
  const shot = image(await alice.screenshot());
  writeFileSync(join(env('PTG_WEB_SHOTS'), 'approve-prompt.png'), await alice.screenshot());
  check(countColour(shot, BANNER, 6) > 2000, 'the screenshot shows the banner');
  check(countColour(shot, APPROVE, 6) > 200, 'the screenshot shows the Approve button');
  await alice.locator('#control-banner button.approve').click();
  await until(bob, 'control', async () => await role(bob) === 'controller');
  check(true, 'approved: bob controls');
  await until(alice, 'the banner to go', async () => !(await banner(alice).isVisible()));
  check(/alice \(you\), bob/.test(await alice.locator('#members').textContent()),
    'both control: ' + await alice.locator('#members').textContent());
  await typeLine(bob, 'echo bob-$((6*7))');
  await shows(alice, /^bob-42$/);
  check(true, 'bob\'s keys reach the shell');
  for (const [name, p] of [['controller', a.problems], ['asker', b.problems]])
    check(p.length === 0, `no console errors on the ${name} page ${p.length ? JSON.stringify(p) : ''}`);
}

withBrowser(run).then(() => { log('PASS'); process.exit(0); },
  (e) => { log('FAIL: ' + (e.stack || e)); process.exit(1); });
