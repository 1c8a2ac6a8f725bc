// Every operation of Floe's object-IO handle (storage/io/io.h) against the real
// stores: moto_server with signature checks (s3) and the local disk (file), run by
// tests/unit/storage/io_check (built with the unit tests).  It covers what the
// catalog and ingest suites reach only indirectly: create-only writes losing to an
// existing object, bounded and ranged reads, stat, listings longer than one page,
// batch deletes past 1000 keys, keys with spaces and '+', streaming writers (one PUT,
// several parts, aborted) and delete_tree.  Paging and the second delete batch (1005
// objects, the slow part: one signed PUT each) are checked once, path-style with the
// profile's keys; the runs that vary the keys or the addressing repeat every operation
// on a few objects (IO_CHECK_OBJECTS), since neither changes how pages or batches are
// built.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { NO_S3, startMoto } from '../lib/moto.mjs';
import { buildDir } from '../write-path/samples.mjs';
import { AK_ENV, SK_ENV, s3Profile, tmpDir } from './lib.mjs';

const bin = path.join(buildDir, 'tests', 'unit', 'storage', 'io_check');
let s3 = null;
let dir;

before(async () => {
  s3 = await startMoto({ tag: 'io' });
  if (s3) await s3.createBucket('iocheck');
  dir = tmpDir('iocheck');
});
after(async () => {
  if (s3) await s3.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

function run(profile, root, env = {}) {
  return new Promise((resolve) => {
    const p = spawn(bin, [JSON.stringify(profile), root], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.on('data', (d) => { out += d; });
    p.stderr.on('data', (d) => { out += d; });
    p.on('close', (code) => resolve({ code, out }));
  });
}

test('io.h on S3 (moto, signature checks on)', async (t) => {
  if (!s3) {
    t.skip(NO_S3);
    return;
  }
  const r = await run(s3Profile(s3, 'iocheck', 'root'), 's3://iocheck/root/scratch',
    { [AK_ENV]: s3.accessKeyId, [SK_ENV]: s3.secretAccessKey });
  assert.equal(r.code, 0, r.out);
  assert.match(r.out, /ok write_new refuses an existing object/);
  assert.match(r.out, /ok list follows continuation tokens/);
  assert.match(r.out, /ok delete_many of 1005 objects \(two batches\)/);
  assert.match(r.out, /ok pending syncs/);
  assert.match(r.out, /0 failure\(s\)/);
  assert.deepEqual(await s3.list('iocheck', ''), [], 'the scratch objects are gone');
  assert.deepEqual(await s3.uploads('iocheck', ''), [], 'the aborted writer aborted its upload');
});

test('io.h on S3 with keys handed to the handle (st_io_open_creds), not from the profile', async (t) => {
  if (!s3) {
    t.skip(NO_S3);
    return;
  }
  const profile = s3Profile(s3, 'iocheck', 'root', { 'access-key-id-env': 'IO_CHECK_UNSET_A', 'secret-access-key-env': 'IO_CHECK_UNSET_B' });
  const r = await run(profile, 's3://iocheck/root/scratch2',
    { IO_CHECK_KEYS: `${s3.accessKeyId}:${s3.secretAccessKey}`, IO_CHECK_OBJECTS: '3' });
  assert.equal(r.code, 0, r.out);
  assert.match(r.out, /ok delete_many of 3 objects/);
  assert.match(r.out, /0 failure\(s\)/);
  const bad = await run(profile, 's3://iocheck/root/scratch3', { IO_CHECK_KEYS: `${s3.accessKeyId}:wrong`, IO_CHECK_OBJECTS: '3' });
  assert.notEqual(bad.code, 0);
  assert.match(bad.out, /SignatureDoesNotMatch/);
});

test('io.h on S3 with virtual-host addressing (bucket.localhost)', async (t) => {
  if (!s3) {
    t.skip(NO_S3);
    return;
  }
  // libcurl resolves *.localhost to the loopback address; moto reads the bucket from
  // the Host header, which Floe signs.
  const profile = s3Profile(s3, 'iocheck', 'root', { endpoint: `http://localhost:${s3.port}`, 'path-style-access': false });
  const r = await run(profile, 's3://iocheck/root/vhost',
    { [AK_ENV]: s3.accessKeyId, [SK_ENV]: s3.secretAccessKey, IO_CHECK_OBJECTS: '3' });
  assert.equal(r.code, 0, r.out);
  assert.match(r.out, /ok writer: a 20 MiB object in parts/);
  assert.match(r.out, /0 failure\(s\)/);
  assert.match(s3.logs(), /"PUT \/root\/vhost\//, 'the bucket was not in the path');
});

test('io.h on the local disk', async () => {
  const root = path.join(dir, 'wh');
  const r = await run({ type: 'file', location: `file://${root}` }, `file://${root}/scratch`);
  assert.equal(r.code, 0, r.out);
  assert.match(r.out, /ok list follows continuation tokens/);
  assert.match(r.out, /ok write_new with a pending set refuses an existing object/);
  assert.match(r.out, /ok pending syncs/);
  assert.match(r.out, /0 failure\(s\)/);
});
