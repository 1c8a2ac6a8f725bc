// Debian's python3-avro as an Avro reader that stays up: one /usr/bin/python3 per test
// process reads every file the process asks for (../write-path/read_avro.py --serve),
// instead of one interpreter per file (~0.1 s of CPU to start, and a suite run reads
// ~1,000 manifests and manifest lists). What it answers is what `read_avro.py FILE`
// prints: {meta, records}, integers as decimal strings, bytes as upper-case hex.
//
// Calls stay synchronous, like the execFileSync they replace: requests and answers go
// through two named pipes, and fs.readSync blocks on a pipe until the answer is there.
// The reader is started at the first call. When this process exits it closes the request
// pipe and waits for the end of the answer pipe, which comes with the reader's exit, so that
// no reader outlives its test process. A reader that died is reported, and the next call
// starts a new one.
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { systemPython } from './paths.mjs';

const readAvroPy = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'write-path', 'read_avro.py');

let reader = null; // { req, resp }: the pipes' descriptors

// Closes the pipes: the reader sees the end of its requests and exits. With `wait`, returns
// once it has (the end of the answer pipe comes with its exit).
function stop(wait = false) {
  if (!reader) return;
  const { req, resp } = reader;
  reader = null;
  fs.closeSync(req);
  if (wait) {
    try {
      fs.readSync(resp, Buffer.alloc(1), 0, 1, null);
    } catch {
      // it had died already
    }
  }
  fs.closeSync(resp);
}
process.on('exit', () => stop(true));

function start() {
  fs.accessSync(systemPython, fs.constants.X_OK); // else the opens below would wait forever
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'floe-pyavro-'));
  try {
    const reqPath = path.join(dir, 'req');
    const respPath = path.join(dir, 'resp');
    execFileSync('mkfifo', [reqPath, respPath]);
    const proc = spawn(systemPython, [readAvroPy, '--serve', reqPath, respPath], { stdio: ['ignore', 'ignore', 'inherit'] });
    proc.unref();
    // Same order as the reader's: each open returns once the other side has opened too.
    const req = fs.openSync(reqPath, 'w');
    const resp = fs.openSync(respPath, 'r');
    return { req, resp };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true }); // open pipes outlive their names
  }
}

// Reads exactly n bytes; null if the reader closed its end first.
function readExactly(fd, n) {
  const buf = Buffer.alloc(n);
  let off = 0;
  while (off < n) {
    const got = fs.readSync(fd, buf, off, n - off, null);
    if (got === 0) return null;
    off += got;
  }
  return buf;
}

function readLine(fd) {
  const one = Buffer.alloc(1);
  let line = '';
  for (;;) {
    if (fs.readSync(fd, one, 0, 1, null) === 0) return null;
    if (one[0] === 0x0a) return line;
    line += String.fromCharCode(one[0]);
  }
}

// {meta, records} of the Avro container file at `file`, as python3-avro reads it.
export function readAvroPython(file) {
  if (!reader) reader = start();
  let body;
  try {
    fs.writeSync(reader.req, `${JSON.stringify(String(file))}\n`);
    const len = readLine(reader.resp);
    body = len === null ? null : readExactly(reader.resp, Number(len));
  } catch (e) {
    stop();
    throw new Error(`python3-avro reader: ${e.message} (reading ${file})`);
  }
  if (body === null) {
    stop();
    throw new Error(`python3-avro reader exited while reading ${file} (its stderr is above)`);
  }
  const out = JSON.parse(body.toString('utf8'));
  if (out.error !== undefined) throw new Error(`python3-avro could not read ${file}: ${out.error}`);
  return out;
}
