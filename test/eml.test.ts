import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { client, makeApp, makeItem, makeProduct, makeUser, readEml, tempDir } from './helpers.js';
import { waitFor } from './processes.js';

test('temporary mail files left by a crash are removed at start; messages are renamed into place whole', async () => {
  const dataDir = tempDir('shiplog-eml-test-');
  const mailDir = path.join(dataDir, 'mail');
  fs.mkdirSync(mailDir);
  // What a process killed while writing leaves behind, next to files that are not its to remove.
  const leftovers = ['00000001.eml.0badcafe.tmp', '00000042.eml.1234abcd.tmp'];
  const kept = ['99999999.eml', 'README.txt', 'notes.tmp'];
  for (const name of [...leftovers, ...kept]) fs.writeFileSync(path.join(mailDir, name), 'partial');

  const t = await makeApp({ env: { DATA_DIR: dataDir } });
  try {
    await waitFor(
      'the leftovers to be removed',
      () => leftovers.every((name) => !fs.existsSync(path.join(mailDir, name))),
      5_000,
    );
    for (const name of kept) assert.ok(fs.existsSync(path.join(mailDir, name)), `${name} was removed`);

    const owner = await makeUser(t.db);
    const follower = await makeUser(t.db);
    const productId = (await makeProduct(t.db, owner, [follower])).id;
    const item = await makeItem(t.app, follower, productId, { title: 'Mailed' });
    const deploy = await client(t.app, owner).post(`/api/products/${productId}/deploys.json`, {
      environment: 'prod',
      numbers: String(item.number),
    });
    assert.equal(deploy.statusCode, 200, deploy.body);
    await t.app.outbox.deliverDue();

    const names = fs.readdirSync(mailDir);
    assert.deepEqual(
      names.filter((n) => n.endsWith('.tmp') && !kept.includes(n)),
      [],
      'a temporary file was left behind',
    );
    const written = names.filter((n) => /^\d{8}\.eml$/.test(n) && !kept.includes(n));
    assert.equal(written.length, 1, names.join(', '));
    const mail = await readEml(fs.readFileSync(path.join(mailDir, written[0])));
    assert.equal(mail.headers.get('to'), `${follower.user.first_name} ${follower.user.last_name} <${follower.email}>`);
    assert.match(mail.text, /Mailed/);
  } finally {
    await t.close();
  }
});
