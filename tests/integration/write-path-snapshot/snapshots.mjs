// Runs tests/unit/storage_snapshot/write_snapshots (the C snapshot builder in
// storage/iceberg/snapshot.c driving the Parquet, manifest and manifest-list
// writers) into a fresh directory and returns what it reports: the table
// location, its schema, the three Snapshot JSONs of three appends (the third
// built first on a stale parent, then retried), the rows written and the
// manifests.  The readers that check its files live in the tests beside it.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { repoRoot } from '../lib/paths.mjs';

export const buildDir = path.resolve(repoRoot, process.env.FLOE_BUILD_DIR ?? 'build');
export const writerBin = path.join(buildDir, 'tests', 'unit', 'storage_snapshot', 'write_snapshots');

// version: 2 or 3; codec: 'null' or 'deflate'.
export function writeTable(version, codec) {
  if (!existsSync(writerBin)) {
    throw new Error(`${writerBin} is missing: build it (meson compile -C ${buildDir}) or set FLOE_BUILD_DIR`);
  }
  const dir = mkdtempSync(path.join(tmpdir(), 'floe-snapshots-'));
  const out = execFileSync(writerBin, [dir, String(version), codec], { stdio: ['ignore', 'pipe', 'inherit'] });
  const table = JSON.parse(out.toString('utf8'));
  return { dir, table, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

// A file:// URI of the table as a local path.
export const localPath = (uri) => new URL(uri).pathname;

// Rows and files per batch, as write_snapshots writes them.
export const batchRows = [65, 30, 35];
export const batchFiles = [2, 1, 2];
