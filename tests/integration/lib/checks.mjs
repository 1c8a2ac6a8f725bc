// Assertions shared by the test files: the Iceberg error model, JSON bodies
// validated against the upstream spec, and the headers every response carries.
import assert from 'node:assert/strict';
import { validate } from './spec.mjs';
import { schemaFor } from './clients.mjs';

function describe(res) {
  return `HTTP ${res.status} ${res.headers['content-type'] || ''} ${res.text.slice(0, 500)}`;
}

// Every Floe response carries a non-empty X-Request-Id.
export function assertRequestId(res) {
  const id = res.headers['x-request-id'];
  assert.ok(typeof id === 'string' && id.length > 0, `missing X-Request-Id on ${describe(res)}`);
  return id;
}

// A successful JSON response of `status` whose body matches spec schema `schema`
// (by default the schema of the REST route the request went to, if it is one).
export function expectJson(res, status, schema) {
  if (schema === undefined && res.method && res.status === status) {
    schema = schemaFor(res.method, res.path.split('?')[0], res.status) ?? undefined;
  }
  assert.equal(res.status, status, `expected ${status}, got ${describe(res)}`);
  assert.match(res.headers['content-type'] || '', /^application\/json/, `content-type on ${describe(res)}`);
  assert.ok(res.json !== undefined, `body is not JSON: ${describe(res)}`);
  if (schema) validate(schema, res.json);
  assertRequestId(res);
  return res.json;
}

// An error in the Iceberg error model: status, Content-Type application/json, body
// valid against IcebergErrorResponse, error.code == status, the expected type and a
// message matching `word` (a RegExp or a string searched case-insensitively).
export function expectError(res, status, type, word) {
  assert.equal(res.status, status, `expected ${status} ${type ?? ''}, got ${describe(res)}`);
  assert.match(res.headers['content-type'] || '', /^application\/json/, `error content-type on ${describe(res)}`);
  assert.ok(res.json !== undefined, `error body is not JSON: ${describe(res)}`);
  validate('IcebergErrorResponse', res.json);
  const e = res.json.error;
  assert.equal(e.code, status, `error.code != HTTP status: ${describe(res)}`);
  if (type) assert.equal(e.type, type, `error.type: ${describe(res)}`);
  if (word) {
    const re = word instanceof RegExp ? word : new RegExp(word.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'i');
    assert.match(e.message, re, `error message should name the problem: ${describe(res)}`);
  }
  assertRequestId(res);
  return e;
}

// 204 with no body.
export function expectNoContent(res) {
  assert.equal(res.status, 204, `expected 204, got ${describe(res)}`);
  assert.equal(res.text, '', 'a 204 has no body');
  assertRequestId(res);
}

export { describe };
