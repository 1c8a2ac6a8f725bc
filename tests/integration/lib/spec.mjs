// Response-schema checks against the upstream Iceberg REST OpenAPI document.
//
// The YAML is converted at import time with PyYAML (Debian python3-yaml via
// /usr/bin/python3) because js-yaml cannot parse it. `validate(name, body)`
// compiles components/schemas/<name> with Ajv 2020 and throws an Error listing
// Ajv's errors and the body when the body does not match.
//
// One adjustment: the spec is OpenAPI 3.1 but still uses the 3.0 keyword
// `nullable: true` in a few places (PageToken among them, whose own text says
// "the server must return `null` value for the next-page-token in the last
// response"). JSON Schema 2020 ignores `nullable`, which would reject the very
// null the spec demands, so `type: T, nullable: true` is rewritten to
// `type: [T, "null"]` before compiling. Nothing else is changed.
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { sharedDir, systemPython } from './paths.mjs';

const converter = path.join(path.dirname(fileURLToPath(import.meta.url)), 'spec-to-json.py');

export function yamlToJson(fileOrText, { isText = false } = {}) {
  try {
    const out = execFileSync(systemPython, [converter, isText ? '-' : fileOrText], {
      input: isText ? fileOrText : undefined,
      maxBuffer: 64 * 1024 * 1024,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    return JSON.parse(out.toString('utf8'));
  } catch (e) {
    const stderr = e.stderr ? e.stderr.toString() : '';
    if (/No module named .?yaml/.test(stderr)) {
      throw new Error(`${systemPython} lacks PyYAML: install the Debian package python3-yaml`);
    }
    throw new Error(`YAML conversion failed: ${e.message}\n${stderr}`);
  }
}

export const specPath = path.join(sharedDir, 'iceberg-spec', 'rest-catalog-open-api.yaml');
if (!fs.existsSync(specPath)) {
  throw new Error(`upstream REST spec not found at ${specPath}; set FLOE_SHARED_DIR`);
}
// Converted once per machine, not once per test file that imports this module (~0.3 s of
// CPU each): the JSON is kept in the temporary directory under a name made of the hash of
// the YAML and of the converter, and written under a temporary name, then renamed.
function convertedSpec() {
  const hash = crypto.createHash('sha256').update(fs.readFileSync(specPath)).update(fs.readFileSync(converter))
    .digest('hex').slice(0, 32);
  const cached = path.join(os.tmpdir(), `floe-iceberg-rest-spec-${hash}.json`);
  try {
    return JSON.parse(fs.readFileSync(cached, 'utf8'));
  } catch {
    // absent, or cut short by a full disk: convert again
  }
  const doc = yamlToJson(specPath);
  const tmp = `${cached}.${process.pid}.tmp`;
  try {
    fs.writeFileSync(tmp, JSON.stringify(doc));
    fs.renameSync(tmp, cached);
  } catch {
    fs.rmSync(tmp, { force: true }); // the next file converts again
  }
  return doc;
}
export const spec = convertedSpec();

function fixNullable(node) {
  if (Array.isArray(node)) return node.map(fixNullable);
  if (node && typeof node === 'object') {
    const out = {};
    for (const [k, v] of Object.entries(node)) out[k] = fixNullable(v);
    if (out.nullable === true && typeof out.type === 'string') out.type = [out.type, 'null'];
    return out;
  }
  return node;
}

const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addSchema({ $id: 'iceberg-rest', components: fixNullable(spec.components) });

const cache = new Map();
function validatorFor(name) {
  let v = cache.get(name);
  if (!v) {
    if (!spec.components.schemas[name]) throw new Error(`no schema ${name} in the upstream spec`);
    v = ajv.getSchema(`iceberg-rest#/components/schemas/${name}`);
    cache.set(name, v);
  }
  return v;
}

// Throws unless `body` matches components/schemas/<name>. Returns body.
export function validate(name, body) {
  const v = validatorFor(name);
  if (!v(body)) {
    const errs = v.errors.map((e) => `${e.instancePath || '/'} ${e.message} ${JSON.stringify(e.params)}`);
    const err = new Error(
      `response does not match ${name}:\n  ${errs.join('\n  ')}\nbody: ${JSON.stringify(body).slice(0, 2000)}`,
    );
    err.ajvErrors = v.errors;
    throw err;
  }
  return body;
}

// The spec's path templates (e.g. "/v1/{prefix}/namespaces") with their methods.
export function specOperations() {
  const ops = [];
  for (const [p, item] of Object.entries(spec.paths)) {
    for (const m of ['get', 'put', 'post', 'delete', 'head', 'patch']) {
      if (item[m]) ops.push(`${m.toUpperCase()} ${p}`);
    }
  }
  return ops;
}
