// The maintenance endpoint under token auth: a principal that may only read
// the table can GET its outcomes but not POST a run (403 ForbiddenException);
// one with table-write on exactly that table may (202); no token is a 401.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { request } from '../lib/harness.mjs';
import { expectError } from '../lib/checks.mjs';
import {
  ADMIN_ID, ADMIN_SECRET, bearer, createRole, principal, startAuthFloe, tokenFor,
} from '../auth/lib.mjs';

let env;
const tokens = {};
const path = '/management/v1/warehouses/default/namespaces/m/tables/t/maintenance';

before(async () => {
  env = await startAuthFloe({ tag: 'maint_authz', args: ['--maintenance-workers', '0'] });
  const { base } = env;
  tokens.admin = await tokenFor(base, ADMIN_ID, ADMIN_SECRET);
  const h = bearer(tokens.admin);
  let res = await request(base, 'POST', '/v1/namespaces', { headers: h, body: { namespace: ['m'] } });
  assert.equal(res.status, 200, res.text);
  for (const name of ['t', 'u']) {
    res = await request(base, 'POST', '/v1/namespaces/m/tables', {
      headers: h,
      body: { name, schema: { type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 'a', type: 'long', required: false }] } },
    });
    assert.equal(res.status, 200, res.text);
  }
  await createRole(env.base, tokens.admin, 'tcare', [
    { privilege: 'read', warehouse: 'default', namespace: ['m'] },
    { privilege: 'table-write', warehouse: 'default', namespace: ['m'], table: 't' },
  ]);
  tokens.reader = (await principal(base, tokens.admin, 'r1', ['reader'])).token;
  tokens.carer = (await principal(base, tokens.admin, 'c1', ['tcare'])).token;
});

after(async () => {
  await env?.floe.stop();
});

test('maintenance endpoint: read-only gets 403 on POST, table-write gets 202, no token 401', async () => {
  const { base } = env;
  const body = { actions: ['expire'] };
  expectError(await request(base, 'POST', path, { headers: bearer(tokens.reader), body }), 403, 'ForbiddenException', 'lacks privilege');
  const got = await request(base, 'GET', path, { headers: bearer(tokens.reader) });
  assert.equal(got.status, 200, got.text);
  assert.deepEqual(got.json.outcomes, []);
  const other = path.replace('/tables/t/', '/tables/u/');
  expectError(await request(base, 'POST', other, { headers: bearer(tokens.carer), body }), 403, 'ForbiddenException', 'lacks privilege');
  const ok = await request(base, 'POST', path, { headers: bearer(tokens.carer), body });
  assert.equal(ok.status, 202, ok.text);
  // No worker on this replica: the job stays queued, and a second request is a conflict.
  expectError(await request(base, 'POST', path, { headers: bearer(tokens.carer), body }), 409, 'ConflictException', `job ${ok.json['job-id']} is already queued`);
  const st = await request(base, 'GET', path, { headers: bearer(tokens.carer) });
  assert.equal(st.json.jobs[0].state, 'queued');
  assert.equal(st.json.jobs[0]['requested-by'], 'c1');
  expectError(await request(base, 'POST', path, { body }), 401, 'NotAuthorizedException', 'authentication required');
});
