// Test harness: real PostgreSQL clusters, fresh databases and real floe processes.
//
// Invariants:
// - Every child process started here (floe, postgres via pg_ctl) is recorded and is
//   stopped when the test file's process exits, even if a test failed or threw.
// - One PostgreSQL cluster serves a test file: the runner's (env FLOE_TEST_PG_URL, a
//   URL like postgresql://postgres@127.0.0.1:PORT/postgres) or, if absent, a private
//   throwaway cluster started here with initdb (clients-and-harness.md §2).
// - Each test file gets its own uniquely named database (freshDatabase()), so files
//   never see each other's state.
// - Child floe processes get no FLOE_* variables from the environment unless a test
//   passes them, so a developer's shell settings cannot change what is tested.
// - When a test file is done (its event loop is empty: every floe it started has
//   exited), no embedded PostgreSQL of a data directory it used may still run -- the
//   last floe using it must stop it (server/embedded_pg.c) -- or the file fails. At
//   exit, no postmaster of any cluster started here may survive the cleanup either.
import { spawn, execFileSync, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { floeBin } from './paths.mjs';

const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
const live = new Set(); // { killSync(): void } run synchronously at process exit

const tmpDirs = []; // removed at exit, after every process using them is stopped
const embeddedDataDirs = new Set(); // data dirs a floe used with its embedded PostgreSQL

// Where floe keeps the embedded cluster of dataDir (server/embedded_pg.c: inside it,
// or under /var/lib/floe/pg-<sha256 prefix> when postgres cannot reach it).
function embeddedClusterDirs(dataDir) {
  let abs = dataDir;
  try {
    abs = fs.realpathSync(dataDir);
  } catch {
    /* removed already: the plain path is all there is */
  }
  const h = crypto.createHash('sha256').update(abs).digest('hex').slice(0, 12);
  return [path.join(dataDir, 'pg'), path.join(abs, 'pg'), `/var/lib/floe/pg-${h}/pg`];
}

// Running postmasters whose data directory (-D) is one of dirs or lies under one.
// A postmaster removes its pid file (which `pg_ctl stop -w` waits for) just before it
// exits, so one still listed is looked for again for up to graceMs.
export function postmastersUnder(dirs, { graceMs = 2000 } = {}) {
  if (dirs.length === 0) return [];
  const deadline = Date.now() + graceMs;
  for (;;) {
    const out = execFileSync('ps', ['-eo', 'pid,args'], { encoding: 'utf8' });
    const left = out.split('\n').filter((l) => {
      const m = l.match(/^\s*\d+\s+\S*\/(?:postgres|postmaster)\s.*?-D\s+(\S+)/);
      return m && dirs.some((d) => m[1] === d || m[1].startsWith(`${d}/`));
    });
    if (left.length === 0 || Date.now() >= deadline) return left;
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 100); // also usable at exit
  }
}

// Records that dataDir is used with the embedded PostgreSQL (startFloe does it for the
// servers it starts), so the after-file check covers it.
export function trackEmbeddedDataDir(dataDir) {
  embeddedDataDirs.add(dataDir);
}

// 'beforeExit' rather than a node:test `after` hook: this module may be imported inside
// a test or hook, where `after` would attach to that test instead of the file. A file
// whose exit code is not 0 fails in `node --test`.
let checkedEmbedded = false;
process.on('beforeExit', () => {
  if (checkedEmbedded) return;
  checkedEmbedded = true;
  const left = postmastersUnder([...embeddedDataDirs].flatMap(embeddedClusterDirs));
  if (left.length) {
    process.stderr.write(
      `harness: FAIL: an embedded PostgreSQL still runs after every floe using it exited (orphaned cluster):\n${left.join('\n')}\n`,
    );
    process.exitCode = 1;
  }
});

process.on('exit', () => {
  for (const item of live) {
    try {
      item.killSync();
    } catch {
      /* best effort at exit */
    }
  }
  const left = postmastersUnder([...tmpDirs, ...[...embeddedDataDirs].flatMap(embeddedClusterDirs)]);
  if (left.length) {
    process.stderr.write(`harness: FAIL: postmasters started by this test file survived its cleanup:\n${left.join('\n')}\n`);
    process.exitCode = 1;
    // Their data directories may be gone (pg_ctl cannot stop them then): an immediate
    // shutdown by pid, so a failed run leaks nothing.
    for (const l of left) {
      try {
        process.kill(Number(l.trim().split(/\s+/)[0]), 'SIGQUIT');
      } catch {
        /* already gone */
      }
    }
  }
  if (process.env.FLOE_TEST_KEEP_TMP) return;
  for (const d of tmpDirs) {
    try {
      fs.rmSync(d, { recursive: true, force: true });
    } catch {
      /* best effort at exit */
    }
  }
});
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.once(sig, () => process.exit(130));
}

let binDir = null;
export function pgBinDir() {
  if (binDir) return binDir;
  if (process.env.FLOE_PG_BIN_DIR) binDir = process.env.FLOE_PG_BIN_DIR;
  else {
    try {
      binDir = execFileSync('pg_config', ['--bindir']).toString().trim();
    } catch {
      binDir = '/usr/lib/postgresql/15/bin';
    }
  }
  return binDir;
}

// psql itself, not Debian's /usr/bin/psql: that is pg_wrapper, a Perl script that costs
// ~30 ms of CPU before psql starts, and the suite runs psql some 450 times a pass.
export function psqlBin() {
  const own = path.join(pgBinDir(), 'psql');
  return fs.existsSync(own) ? own : 'psql';
}

export async function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.unref();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

export function tmpDir(tag) {
  // 0755 so the postgres user (embedded or throwaway clusters run as postgres when we
  // are root) can traverse it.
  // Removed at process exit (set FLOE_TEST_KEEP_TMP=1 to keep them for debugging).
  const d = fs.mkdtempSync(path.join('/tmp', `floe-it-${tag}-`));
  fs.chmodSync(d, 0o755);
  tmpDirs.push(d);
  return d;
}

export function asPostgres(cmd, args, opts = {}) {
  if (isRoot) return spawnSync('runuser', ['-u', 'postgres', '--', cmd, ...args], opts);
  return spawnSync(cmd, args, opts);
}

// A private PostgreSQL cluster on 127.0.0.1. stop()/start() keep the data and port,
// so a test can simulate an outage; destroy() removes everything.
export async function startPgCluster({ tag = 'pg' } = {}) {
  const bin = pgBinDir();
  const dir = tmpDir(tag);
  const data = path.join(dir, 'data');
  if (isRoot) execFileSync('chown', ['postgres:postgres', dir]);
  const port = await freePort();
  const init = asPostgres(
    path.join(bin, 'initdb'),
    ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C.UTF-8', '--no-sync'],
    { encoding: 'utf8' },
  );
  if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr}${init.stdout}`);
  let running = false;
  const cluster = {
    port,
    dir,
    dataDir: data,
    url: `postgresql://postgres@127.0.0.1:${port}/postgres`,
    start() {
      const r = asPostgres(
        path.join(bin, 'pg_ctl'),
        [
          '-D', data, '-l', path.join(dir, 'pg.log'), '-w', '-t', '30',
          '-o', `-c listen_addresses=127.0.0.1 -p ${port} -k ${dir} -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200`,
          'start',
        ],
        { encoding: 'utf8' },
      );
      if (r.status !== 0) {
        const log = fs.existsSync(path.join(dir, 'pg.log')) ? fs.readFileSync(path.join(dir, 'pg.log'), 'utf8') : '';
        throw new Error(`pg_ctl start failed: ${r.stderr}${r.stdout}\n${log}`);
      }
      running = true;
    },
    stop(mode = 'fast') {
      if (!running) return;
      const r = asPostgres(path.join(bin, 'pg_ctl'), ['-D', data, '-m', mode, '-w', '-t', '30', 'stop'], {
        encoding: 'utf8',
      });
      if (r.status !== 0) throw new Error(`pg_ctl stop failed: ${r.stderr}${r.stdout}`);
      running = false;
    },
    destroy() {
      try {
        cluster.stop('immediate');
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
        live.delete(handle);
      }
    },
  };
  const handle = {
    killSync() {
      if (running) asPostgres(path.join(bin, 'pg_ctl'), ['-D', data, '-m', 'immediate', '-w', 'stop']);
      running = false;
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
  live.add(handle);
  cluster.start();
  return cluster;
}

let sharedPg; // promise of { url } for this process
// The cluster the runner provides (FLOE_TEST_PG_URL) or a private one for this file.
export function startPostgres() {
  if (!sharedPg) {
    sharedPg = process.env.FLOE_TEST_PG_URL
      ? Promise.resolve({ url: process.env.FLOE_TEST_PG_URL, external: true })
      : startPgCluster({ tag: 'shared-pg' }).then((c) => ({ url: c.url, external: false, cluster: c }));
  }
  return sharedPg;
}

export function withDatabase(url, db) {
  const u = new URL(url);
  u.pathname = `/${encodeURIComponent(db)}`;
  return u.toString();
}

export function psql(url, sql) {
  const r = spawnSync(psqlBin(), [url, '-v', 'ON_ERROR_STOP=1', '-X', '-q', '-A', '-t', '-c', sql], {
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`psql failed (${sql}): ${r.stderr}`);
  return r.stdout.trim();
}

// A new, empty database on the shared cluster; dropped again at process exit.
export async function freshDatabase(tag = 'db') {
  const { url } = await startPostgres();
  const safe = tag.toLowerCase().replace(/[^a-z0-9_]/g, '_').slice(0, 20);
  const name = `floe_it_${safe}_${crypto.randomBytes(4).toString('hex')}`;
  psql(url, `CREATE DATABASE ${name}`);
  const handle = {
    killSync() {
      spawnSync(psqlBin(), [url, '-X', '-q', '-c', `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`]);
    },
  };
  live.add(handle);
  return { name, url: withDatabase(url, name), drop: () => { handle.killSync(); live.delete(handle); } };
}

// A floe child sees none of this process's FLOE_* settings, except those
// given as FLOE_TEST_CHILD_<NAME>, which it gets as FLOE_<NAME> (a whole
// suite run under one setting: tests/run.sh's ThreadSanitizer pass runs its files
// with FLOE_TEST_CHILD_METADATA_INLINE_MAX_BYTES=0); a test's own env wins.
function childEnv(extra) {
  const env = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (k.startsWith('FLOE_TEST_CHILD_')) env[`FLOE_${k.slice('FLOE_TEST_CHILD_'.length)}`] = v;
    else if (!k.startsWith('FLOE_')) env[k] = v;
  }
  return { ...env, ...extra };
}

// Runs `floe <args>` to completion (for migrate, version, bad flags).
export function runFloe(args, { env = {}, timeoutMs = 60000 } = {}) {
  const r = spawnSync(floeBin, args, { env: childEnv(env), encoding: 'utf8', timeout: timeoutMs });
  if (r.error) throw r.error;
  return { code: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr };
}

// Starts `floe serve` and resolves once it logs `listening on http://HOST:PORT`.
// databaseUrl: a URL, or null for the embedded default (no --database-url at all).
export async function startFloe({
  databaseUrl,
  dataDir,
  args = [],
  env = {},
  timeoutMs = 60000,
} = {}) {
  if (!fs.existsSync(floeBin)) throw new Error(`floe binary not found at ${floeBin}; set FLOE_BIN`);
  let ownRoot = null; // a data dir we made is removed at exit
  if (!dataDir) {
    ownRoot = tmpDir('data');
    dataDir = path.join(ownRoot, 'floe');
  }
  const argv = ['serve', '--host', '127.0.0.1', '--port', '0', '--data-dir', dataDir];
  if (!databaseUrl && !env.FLOE_DATABASE_URL && !args.includes('--database-url')) trackEmbeddedDataDir(dataDir);
  if (databaseUrl) argv.push('--database-url', databaseUrl);
  argv.push(...args);
  const proc = spawn(floeBin, argv, { env: childEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  let logs = '';
  const onData = (d) => {
    logs += d.toString();
  };
  proc.stdout.on('data', onData);
  proc.stderr.on('data', onData);
  const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
  let stopping = false;
  let up = false;
  // A daemon that dies by itself (a sanitizer report exits 1; a crash is a signal) says why
  // in the test's output, which otherwise only shows the requests that then failed.
  exited.then(({ code, signal }) => {
    const crashed = signal ? ['SIGSEGV', 'SIGABRT', 'SIGBUS', 'SIGILL', 'SIGFPE'].includes(signal) : code !== 0;
    if (up && !stopping && crashed) {
      process.stderr.write(`harness: floe serve exited by itself (code ${code}, signal ${signal}); its last output:\n` +
        `${logs.slice(-16000)}\n`);
    }
  });
  const handle = {
    killSync() {
      stopping = true;
      if (proc.exitCode === null && proc.signalCode === null) {
        try {
          proc.kill('SIGKILL');
        } catch {
          /* already gone */
        }
      }
      // A SIGKILLed floe leaves its embedded PostgreSQL running: stop it.
      const pgData = path.join(dataDir, 'pg');
      if (fs.existsSync(path.join(pgData, 'postmaster.pid'))) {
        asPostgres(path.join(pgBinDir(), 'pg_ctl'), ['-D', pgData, '-m', 'immediate', '-w', 'stop']);
      }
      if (ownRoot) fs.rmSync(ownRoot, { recursive: true, force: true });
    },
  };
  live.add(handle);

  const baseUrl = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(new Error(`floe did not log "listening on" within ${timeoutMs} ms\n--- logs ---\n${logs}`));
    }, timeoutMs);
    const check = () => {
      const m = logs.match(/listening on (http:\/\/[^\s"]+)/);
      if (m) {
        clearTimeout(timer);
        up = true;
        resolve(m[1].replace(/\/$/, ''));
      }
    };
    proc.stdout.on('data', check);
    proc.stderr.on('data', check);
    exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`floe exited early (code ${code}, signal ${signal})\n--- logs ---\n${logs}`));
    });
  });

  return {
    baseUrl,
    port: Number(new URL(baseUrl).port),
    proc,
    dataDir,
    exited,
    logs: () => logs,
    // Sends `signal` and waits for exit; SIGKILL after killAfterMs. Returns {code, signal}.
    async stop(signal = 'SIGTERM', killAfterMs = 30000) {
      stopping = true;
      if (proc.exitCode !== null || proc.signalCode !== null) return exited;
      proc.kill(signal);
      const t = setTimeout(() => proc.kill('SIGKILL'), killAfterMs);
      const r = await exited;
      clearTimeout(t);
      if (process.env.FLOE_TEST_SHOW_LOGS) process.stderr.write(`--- floe ${baseUrl} logs ---\n${logs}\n`);
      return r;
    },
  };
}

// One HTTP request with full control of the bytes (node:http: no URL normalisation,
// no automatic encoding). Resolves {status, headers, text, json}; json is undefined
// when the body is not JSON. A response that arrives before the server has read the
// whole request body (e.g. 413) is still returned.
export function request(baseUrl, method, rawPath, { headers = {}, body, timeoutMs = 20000 } = {}) {
  const u = new URL(baseUrl);
  let payload;
  if (body !== undefined) {
    payload = Buffer.isBuffer(body) ? body : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
  }
  const hdrs = { ...headers };
  if (payload && !Object.keys(hdrs).some((k) => k.toLowerCase() === 'content-type')) {
    hdrs['Content-Type'] = 'application/json';
  }
  if (payload && !Object.keys(hdrs).some((k) => k.toLowerCase() === 'transfer-encoding')) {
    hdrs['Content-Length'] = String(payload.length);
  }
  return new Promise((resolve, reject) => {
    let settled = false;
    const req = http.request(
      { host: u.hostname, port: u.port, method, path: rawPath, headers: hdrs, agent: false },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => {
          settled = true;
          resolve({ ...toResult(res, Buffer.concat(chunks)), method, path: rawPath });
          req.destroy(); // no lingering keep-alive sockets
        });
        res.on('error', (e) => {
          if (!settled) {
            settled = true;
            reject(e);
          }
        });
      },
    );
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`timeout after ${timeoutMs} ms: ${method} ${rawPath}`)));
    req.on('error', (e) => {
      if (!settled) {
        settled = true;
        reject(e);
      }
    });
    if (payload) {
      req.write(payload, () => {});
    }
    req.end();
  });
}

// A body sent with Content-Encoding, decoded as an HTTP client (requests, fetch) does:
// gzip by node's zlib, zstd by the zstd program (node 20 has no zstd). rawBody keeps the
// bytes as sent.
export function decodeBody(coding, buf) {
  if (!coding || coding === 'identity' || buf.length === 0) return buf; // HEAD: headers only
  if (coding === 'gzip') return zlib.gunzipSync(buf);
  if (coding === 'zstd') return execFileSync('zstd', ['-dcq'], { input: buf, maxBuffer: 1 << 30 });
  throw new Error(`Content-Encoding ${coding}: no decoder here`);
}

function toResult(res, raw) {
  const buf = decodeBody(res.headers['content-encoding'], raw);
  const text = buf.toString('utf8');
  let json;
  const ct = res.headers['content-type'] || '';
  if (ct.includes('json') && text.length) {
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
  }
  return { status: res.statusCode, headers: res.headers, text, json, rawHeaders: res.rawHeaders, rawBody: raw };
}

// Writes raw bytes to a fresh TCP connection and returns the raw response text
// (for requests node:http refuses to produce, e.g. malformed request lines).
export function rawExchange(baseUrl, bytes, { timeoutMs = 10000 } = {}) {
  const u = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const s = net.connect(Number(u.port), u.hostname);
    const chunks = [];
    const t = setTimeout(() => {
      s.destroy();
      resolve(Buffer.concat(chunks).toString('utf8'));
    }, timeoutMs);
    s.on('data', (c) => chunks.push(c));
    s.on('end', () => {
      clearTimeout(t);
      resolve(Buffer.concat(chunks).toString('utf8'));
    });
    s.on('error', (e) => {
      clearTimeout(t);
      if (chunks.length) resolve(Buffer.concat(chunks).toString('utf8'));
      else reject(e);
    });
    s.write(bytes);
  });
}

export const encodeNs = (levels) => levels.map(encodeURIComponent).join('%1F');

export function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}

export async function waitFor(fn, { timeoutMs = 15000, intervalMs = 100, what = 'condition' } = {}) {
  const deadline = Date.now() + timeoutMs;
  let last;
  while (Date.now() < deadline) {
    try {
      last = await fn();
      if (last) return last;
    } catch (e) {
      last = e;
    }
    await sleep(intervalMs);
  }
  throw new Error(`timed out waiting for ${what}; last: ${last instanceof Error ? last.message : JSON.stringify(last)}`);
}

export { floeBin, isRoot, os };
