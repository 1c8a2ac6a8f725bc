// deploy/: what can run without a container engine. The entry point runs as the image
// runs it, with the environment the Kubernetes manifests and docker-compose give it
// (their paths and ports replaced by the test's), against a real PostgreSQL: the init
// container's migrate, then serve with its probes, token auth and public metrics, and a
// SIGTERM that reaches floe itself. The settings those files name must be settings floe
// knows, and the paths they share must agree.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { floeBin, freePort, freshDatabase, request, tmpDir } from './lib/harness.mjs';
import { yamlToJson } from './lib/spec.mjs';
import { makeRsaKey, pyicebergTokenRequest } from './auth/lib.mjs';

const deploy = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../deploy');
const entrypoint = path.join(deploy, 'entrypoint.sh');
const yaml = (f) => yamlToJson(path.join(deploy, f));
const yamlDocs = (f) =>
  fs.readFileSync(path.join(deploy, f), 'utf8').split(/^---$/m).filter((d) => /\S/.test(d.replace(/#.*$/gm, '')))
    .map((d) => yamlToJson(d, { isText: true }));
const SECRET = 'deploy-test-bootstrap-secret';

// The Dockerfile's ENV (FLOE_HOST=0.0.0.0 \ FLOE_PORT=8181 \ FLOE_DATA_DIR=...).
function dockerfileEnv() {
  const text = fs.readFileSync(path.join(deploy, 'Dockerfile'), 'utf8').replace(/\\\n/g, ' ');
  const env = {};
  for (const line of text.split('\n').filter((l) => /^ENV\s/.test(l))) {
    for (const [, k, v] of line.matchAll(/([A-Z_][A-Z0-9_]*)=(\S+)/g)) env[k] = v;
  }
  return env;
}

// The k8s object of kind (and name) in deploy/k8s/FILE.
function k8s(file, kind, name) {
  const doc = yamlDocs(`k8s/${file}`).find((d) => d.kind === kind && (!name || d.metadata.name === name));
  assert.ok(doc, `deploy/k8s/${file} has no ${kind} ${name ?? ''}`);
  return doc;
}

// The settings `floe help` names.
function knownSettings() {
  const r = spawnSync(floeBin, ['help'], { encoding: 'utf8' });
  const names = new Set((r.stdout + r.stderr).match(/FLOE_[A-Z0-9_]+/g));
  assert.ok(names.has('FLOE_DATABASE_URL') && names.size > 20, `floe help lists the settings: ${[...names]}`);
  return names;
}

// The environment of a child as the harness gives floe: this process's without FLOE_*,
// and FLOE_TEST_CHILD_X as FLOE_X.
function baseEnv(extra) {
  const env = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (k.startsWith('FLOE_TEST_CHILD_')) env[`FLOE_${k.slice('FLOE_TEST_CHILD_'.length)}`] = v;
    else if (!k.startsWith('FLOE_')) env[k] = v;
  }
  return { ...env, FLOE_BIN: floeBin, ...extra };
}

// Runs the entry point as the image does; resolves once floe listens.
async function startEntrypoint(args, env) {
  const proc = spawn('sh', [entrypoint, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let logs = '';
  proc.stdout.on('data', (d) => (logs += d));
  proc.stderr.on('data', (d) => (logs += d));
  const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
  const port = await new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`no "listening on" within 60 s:\n${logs}`)), 60000);
    const check = () => {
      const m = logs.match(/listening on http:\/\/[^:\s]+:(\d+)/);
      if (m) {
        clearTimeout(t);
        resolve(Number(m[1]));
      }
    };
    proc.stdout.on('data', check);
    proc.stderr.on('data', check);
    exited.then((r) => {
      clearTimeout(t);
      reject(new Error(`the entry point exited (${JSON.stringify(r)}):\n${logs}`));
    });
  }).catch((e) => {
    proc.kill('SIGKILL');
    throw e;
  });
  return { proc, exited, base: `http://127.0.0.1:${port}`, logs: () => logs };
}

// SIGTERM to the entry point's process, which must be floe itself by then (exec).
async function stopAsContainer(s) {
  let exe = null;
  try {
    exe = fs.realpathSync(`/proc/${s.proc.pid}/exe`);
  } catch {
    /* gone already: the exit below says how */
  }
  s.proc.kill('SIGTERM');
  const t = setTimeout(() => s.proc.kill('SIGKILL'), 30000);
  const r = await s.exited;
  clearTimeout(t);
  assert.equal(exe, fs.realpathSync(floeBin), 'the entry point execs floe');
  assert.deepEqual(r, { code: 0, signal: null }, `floe drains and exits 0 on SIGTERM:\n${s.logs().slice(-2000)}`);
}

async function token(base, id, secret) {
  const r = await pyicebergTokenRequest(base, id, secret);
  assert.equal(r.status, 200, r.text);
  return r.json.access_token;
}

test('the settings the deploy files name are settings floe knows, and their paths agree', () => {
  const known = knownSettings();
  const entrypointOwn = new Set(['FLOE_BIN', 'FLOE_ENTRYPOINT_MIGRATE', 'FLOE_ENTRYPOINT_DB_WAIT']);
  const check = (where, names) => {
    for (const n of names.filter((x) => x.startsWith('FLOE_'))) {
      if (entrypointOwn.has(n)) continue;
      const base = n.endsWith('_FILE') ? n.slice(0, -'_FILE'.length) : n; // read by the entry point
      assert.ok(known.has(base), `${where} sets ${n}, which floe does not know`);
    }
  };
  const cm = k8s('configmap.yaml', 'ConfigMap');
  check('deploy/k8s/configmap.yaml', Object.keys(cm.data));
  const compose = yaml('docker-compose.yml');
  check('deploy/docker-compose.yml', Object.keys(compose.services.floe.environment));
  check('deploy/Dockerfile', Object.keys(dockerfileEnv()));
  const unit = fs.readFileSync(path.join(deploy, 'floe.service'), 'utf8');
  check('deploy/floe.service', [...unit.matchAll(/^Environment=([A-Z_0-9]+)=/gm)].map((m) => m[1]));
  for (const [file, name] of [['secret.yaml', 'floe-database'], ['auth-secret.yaml', 'floe-bootstrap']]) {
    check(`deploy/k8s/${file}`, Object.keys(k8s(file, 'Secret', name).stringData));
  }
  const script = fs.readFileSync(entrypoint, 'utf8');
  for (const n of entrypointOwn) if (n !== 'FLOE_BIN') assert.match(script, new RegExp(n), `the entry point reads ${n}`);

  // The signing key the ConfigMap names is where the Deployment mounts the Secret's key.
  const pod = k8s('deployment.yaml', 'Deployment').spec.template.spec;
  const floe = pod.containers.find((x) => x.name === 'floe');
  const keySecret = k8s('auth-secret.yaml', 'Secret', 'floe-signing-key');
  const volume = pod.volumes.find((v) => v.secret?.secretName === 'floe-signing-key');
  assert.ok(volume, 'the Deployment mounts the floe-signing-key Secret');
  const mount = floe.volumeMounts.find((m) => m.name === volume.name);
  const keyFile = Object.keys(keySecret.stringData)[0];
  assert.equal(cm.data.FLOE_TOKEN_SIGNING_KEY, path.posix.join(mount.mountPath, keyFile));
  // The Secrets the pod reads exist, and the probes and the port are floe's.
  const secrets = ['secret.yaml', 'auth-secret.yaml'].flatMap((f) => yamlDocs(`k8s/${f}`)).map((d) => d.metadata.name);
  for (const c of [...pod.initContainers, floe]) {
    for (const ref of c.envFrom.filter((e) => e.secretRef)) assert.ok(secrets.includes(ref.secretRef.name), `Secret ${ref.secretRef.name}`);
  }
  assert.equal(floe.ports[0].containerPort, Number(cm.data.FLOE_PORT));
  assert.deepEqual([floe.readinessProbe.httpGet.path, floe.livenessProbe.httpGet.path], ['/readyz', '/healthz']);
  assert.deepEqual(pod.initContainers.map((c) => c.args), [['migrate']]);
  assert.equal(cm.data.FLOE_ENTRYPOINT_MIGRATE, '0', 'the serving container leaves migrations to the init container');
  // compose: the bootstrap secret file is one of the service's secrets; the unit and the
  // image run the same entry point.
  const env = compose.services.floe.environment;
  assert.ok(compose.services.floe.secrets.some((s) => env.FLOE_BOOTSTRAP_CLIENT_SECRET_FILE === `/run/secrets/${s}`));
  assert.ok(compose.services.floe.secrets.some((s) => env.FLOE_TOKEN_SIGNING_KEY === `/run/secrets/${s}`));
  assert.match(unit, /^ExecStart=\/usr\/local\/bin\/floe-entrypoint serve$/m);
  assert.match(fs.readFileSync(path.join(deploy, 'Dockerfile'), 'utf8'), /deploy\/entrypoint\.sh \/out\/usr\/local\/bin\/floe-entrypoint/);
});

test('the Kubernetes pod: the init container migrates, floe serves with the ConfigMap and Secrets, SIGTERM drains', async (t) => {
  const db = await freshDatabase('deploy_k8s');
  const dir = tmpDir('deploy-k8s');
  const bootstrap = k8s('auth-secret.yaml', 'Secret', 'floe-bootstrap').stringData;
  const pod = k8s('deployment.yaml', 'Deployment').spec.template.spec;
  // What a container's envFrom gives it (the ConfigMap, the Secrets it names).
  const envFrom = (c) =>
    Object.assign({}, ...c.envFrom.map((e) =>
      e.configMapRef ? k8s('configmap.yaml', 'ConfigMap', e.configMapRef.name).data
        : k8s(e.secretRef.name === 'floe-database' ? 'secret.yaml' : 'auth-secret.yaml', 'Secret', e.secretRef.name).stringData));
  // The serving container: what the image and its envFrom give; the test's own database,
  // bootstrap secret, port, key and disk.
  const env = baseEnv({
    ...dockerfileEnv(),
    ...envFrom(pod.containers.find((c) => c.name === 'floe')),
    FLOE_DATABASE_URL: db.url,
    FLOE_BOOTSTRAP_CLIENT_SECRET: SECRET,
    FLOE_TOKEN_SIGNING_KEY: makeRsaKey(dir).priv,
    FLOE_PORT: String(await freePort()),
    FLOE_DATA_DIR: path.join(dir, 'data'),
  });
  // The init container: its own envFrom only (no bootstrap secret, no signing key mounted),
  // a read-only root file system and no volume, so FLOE_DATA_DIR is the image's directory,
  // read-only (a bind mount here, when this process may make one).
  const initEnv = baseEnv({ ...dockerfileEnv(), ...envFrom(pod.initContainers[0]), FLOE_DATABASE_URL: db.url });
  const ro = path.join(dir, 'image-data-dir');
  fs.mkdirSync(ro);
  const bound = spawnSync('mount', ['--bind', ro, ro]).status === 0;
  const readOnly = bound && spawnSync('mount', ['-o', 'remount,ro,bind', ro]).status === 0;
  let init;
  try {
    if (readOnly) assert.throws(() => fs.writeFileSync(path.join(ro, 'probe'), 'x'), /EROFS/);
    else t.diagnostic('no read-only bind mount could be made: the init container ran on a writable data directory');
    init = spawnSync('sh', [entrypoint, 'migrate'], { env: { ...initEnv, FLOE_DATA_DIR: ro }, encoding: 'utf8', timeout: 60000 });
  } finally {
    if (bound) assert.equal(spawnSync('umount', [ro]).status, 0, `umount ${ro}`);
  }
  assert.equal(init.status, 0, `init container${readOnly ? ' (read-only data directory)' : ''}: ${init.stdout}${init.stderr}`);
  const s = await startEntrypoint(['serve'], env);
  try {
    assert.doesNotMatch(s.logs(), /applying migrations/, 'FLOE_ENTRYPOINT_MIGRATE=0: the serving container does not migrate');
    for (const probe of ['/healthz', '/readyz']) assert.equal((await request(s.base, 'GET', probe)).status, 200, probe);
    const metrics = await request(s.base, 'GET', '/metrics');
    assert.equal(metrics.status, 200, 'FLOE_METRICS_PUBLIC: Prometheus scrapes without a token');
    assert.equal((await request(s.base, 'GET', '/v1/config')).status, 401, 'FLOE_AUTH=token');
    const t = await token(s.base, bootstrap.FLOE_BOOTSTRAP_CLIENT_ID, SECRET);
    const cfg = await request(s.base, 'GET', '/v1/config', { headers: { Authorization: `Bearer ${t}` } });
    assert.equal(cfg.status, 200, cfg.text);
    const wh = await request(s.base, 'GET', '/management/v1/warehouses', { headers: { Authorization: `Bearer ${t}` } });
    assert.equal(wh.status, 200, wh.text);
    assert.deepEqual(wh.json.warehouses ?? [], [], 'FLOE_WAREHOUSE="": no local warehouse on a replica');
    assert.doesNotMatch(s.logs(), new RegExp(SECRET), 'the bootstrap secret is never logged');
  } finally {
    await stopAsContainer(s);
  }
});

test('docker compose: the entry point awaits and migrates the database, and reads the bootstrap secret from its file', async () => {
  const db = await freshDatabase('deploy_compose');
  const dir = tmpDir('deploy-compose');
  const svc = yaml('docker-compose.yml').services.floe;
  const secretFile = path.join(dir, 'bootstrap-secret');
  fs.writeFileSync(secretFile, SECRET, { mode: 0o600 });
  const env = baseEnv({
    ...dockerfileEnv(),
    ...svc.environment,
    FLOE_DATABASE_URL: db.url,
    FLOE_TOKEN_SIGNING_KEY: makeRsaKey(dir).priv,
    FLOE_BOOTSTRAP_CLIENT_SECRET_FILE: secretFile,
    FLOE_PORT: String(await freePort()),
    FLOE_DATA_DIR: path.join(dir, 'data'),
  });
  const s = await startEntrypoint([], env); // the image's CMD is ["serve"]; none given here
  try {
    assert.match(s.logs(), /floe-entrypoint: applying migrations/);
    const t = await token(s.base, svc.environment.FLOE_BOOTSTRAP_CLIENT_ID, SECRET);
    const cfg = await request(s.base, 'GET', `/v1/config?warehouse=${svc.environment.FLOE_WAREHOUSE}`, {
      headers: { Authorization: `Bearer ${t}` },
    });
    assert.equal(cfg.status, 200, `the warehouse FLOE_WAREHOUSE names exists: ${cfg.text}`);
    assert.doesNotMatch(s.logs(), new RegExp(SECRET));
  } finally {
    await stopAsContainer(s);
  }
});

const havePgIsready = spawnSync('sh', ['-c', 'command -v pg_isready'], { encoding: 'utf8' }).status === 0;

test('the entry point gives up on a database it cannot reach after FLOE_ENTRYPOINT_DB_WAIT, and never prints its URL', { skip: !havePgIsready && 'pg_isready is not installed' }, async () => {
  // A socket directory where no server listens (a TCP port could be taken meanwhile).
  const dir = tmpDir('deploy-nodb');
  const started = Date.now();
  const r = spawnSync('sh', [entrypoint], {
    env: baseEnv({
      FLOE_DATABASE_URL: `postgresql://floe:pw-not-to-print@/floe?host=${dir}`,
      FLOE_ENTRYPOINT_DB_WAIT: '2',
      FLOE_DATA_DIR: path.join(dir, 'data'),
    }),
    cwd: dir,
    encoding: 'utf8',
    timeout: 30000,
  });
  assert.equal(r.status, 1, r.stdout + r.stderr);
  assert.match(r.stderr, /waiting for the database \(up to 2s\)/);
  assert.match(r.stderr, /database not reachable after 2s; giving up/);
  assert.doesNotMatch(r.stdout + r.stderr, /pw-not-to-print/);
  assert.ok(Date.now() - started < 15000, `gave up in ${Date.now() - started} ms`);
});

test('the entry point runs any other floe command as it is (`version`)', () => {
  const direct = spawnSync(floeBin, ['version'], { encoding: 'utf8' });
  const viaEntrypoint = spawnSync('sh', [entrypoint, 'version'], { env: baseEnv({}), encoding: 'utf8' });
  assert.equal(viaEntrypoint.status, 0, viaEntrypoint.stderr);
  assert.equal(viaEntrypoint.stdout, direct.stdout);
  assert.match(direct.stdout, /\S/);
});
