// A moto_server (S3 + IAM + STS) on 127.0.0.1 with signature checks on, set up
// for credential-vending tests. Until tests/integration/lib/moto.mjs (branch s3io)
// is merged this is the vending suite's own starter; it is stopped at exit.
//
// Setup (aws.py setup): the first three calls are unauthenticated
// (INITIAL_NO_AUTH_ACTION_COUNT=3) and create the user whose keys Floe holds, with
// an allow-all user policy; everything after is signed. The role Floe assumes
// gets a role policy limited to ROLE_PREFIX: moto enforces role policies but not
// session policies, so the role is what makes "refused outside" observable here.
import { spawn, spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, waitFor } from '../lib/harness.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const python = process.env.FLOE_TEST_MOTO_PYTHON || 'python3'; // the image's pyenv Python has boto3

export function motoAvailable() {
  const r = spawnSync('sh', ['-c', 'command -v moto_server'], { encoding: 'utf8' });
  if (r.status !== 0) return false;
  return spawnSync(python, ['-c', 'import boto3'], { encoding: 'utf8' }).status === 0;
}

export function aws(args) {
  const r = spawnSync(python, [path.join(here, 'aws.py'), ...args], { encoding: 'utf8', timeout: 60000 });
  if (r.status !== 0) throw new Error(`aws.py ${args[0]} failed (${r.status}): ${r.stderr}\n${r.stdout}`);
  return JSON.parse(r.stdout);
}

export async function startMoto({ rolePrefixes }) {
  const port = await freePort();
  const proc = spawn('moto_server', ['-H', '127.0.0.1', '-p', String(port)], {
    env: { ...process.env, INITIAL_NO_AUTH_ACTION_COUNT: '3' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let logs = '';
  proc.stdout.on('data', (d) => (logs += d));
  proc.stderr.on('data', (d) => (logs += d));
  process.on('exit', () => proc.kill('SIGKILL'));
  const endpoint = `http://127.0.0.1:${port}`;
  await waitFor(
    async () => {
      try {
        // GET / on moto is unauthenticated-free only for /moto-api; it does not count.
        const r = await fetch(`${endpoint}/moto-api/`);
        return r.status < 500;
      } catch {
        return false;
      }
    },
    { what: 'moto_server up', timeoutMs: 30000 },
  );
  const keys = aws(['setup', endpoint, JSON.stringify(rolePrefixes)]);
  return {
    endpoint,
    keys, // {AccessKeyId, SecretAccessKey, RoleArn}
    logs: () => logs,
    stop: () => proc.kill('SIGTERM'),
  };
}
