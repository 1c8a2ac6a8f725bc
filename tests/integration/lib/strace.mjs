// Tracing a daemon with strace (-f -y or -yy) and reading its output: the durability and
// round-trip tests check the order of a process's system calls with it.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { sleep, tmpDir } from './harness.mjs';

export const haveStrace = spawnSync('strace', ['-V']).status === 0;

// strace's lines as calls: {pid, call, args, ret, start, end}, where start and
// end are the line numbers where the call began and returned (a call another
// thread interrupted is split in two lines: "<unfinished ...>", then
// "<... call resumed>").
export function parseStrace(text) {
  const lines = text.split('\n');
  const open = new Map();
  const calls = [];
  lines.forEach((line, i) => {
    let m = /^(\d+)\s+(.*)$/.exec(line);
    if (!m) return;
    const [, pid, rest] = m;
    if (rest.endsWith('<unfinished ...>')) {
      open.set(pid, { text: rest.slice(0, -'<unfinished ...>'.length), start: i });
      return;
    }
    let text = rest;
    let start = i;
    m = /^<\.\.\. \w+ resumed>(.*)$/.exec(rest);
    if (m) {
      const begun = open.get(pid);
      if (!begun) return;
      open.delete(pid);
      text = begun.text + m[1];
      start = begun.start;
    }
    m = /^(\w+)\((.*)\)\s+=\s+(.*)$/.exec(text);
    if (m) calls.push({ pid, call: m[1], args: m[2], ret: m[3], start, end: i });
  });
  return calls;
}

// "5</a/b>" -> {fd: 5, path: '/a/b'}; an unnamed file is "5</a/#123>(deleted)".
export function fdOf(text) {
  const m = /^(\d+)<(.*)>(?:\(deleted\))?$/.exec(text.trim());
  return m ? { fd: Number(m[1]), path: m[2] } : null;
}

// Attaches strace to pid, tracing `calls` (e.g. 'linkat,sendto,recvfrom') with file
// descriptors decoded (`decode`: '-y' paths, '-yy' also socket addresses) and strings up to
// `size` bytes. Returns once strace shows a traced call, which `poke` (an async function,
// called every 50 ms) makes the process perform. stop() detaches and returns the calls
// (parseStrace); kill() is for a finally block, a no-op once stopped.
export async function traceProcess(pid, { calls, decode = '-y', size = 400, poke }) {
  const trace = path.join(tmpDir('strace'), 'process.strace');
  const st = spawn('strace', ['-f', decode, '-qq', '-s', String(size), '-o', trace, '-e', `trace=${calls}`, '-p', String(pid)]);
  const exited = new Promise((resolve) => st.on('exit', resolve));
  try {
    for (let i = 0; i < 100 && !(fs.existsSync(trace) && fs.readFileSync(trace, 'utf8').length > 0); i++) {
      await poke();
      await sleep(50);
    }
  } catch (e) {
    st.kill('SIGKILL'); // never left attached to the process
    throw e;
  }
  return {
    async stop() {
      await sleep(200); // the traced calls of the last answer reach the file
      st.kill('SIGINT');
      await exited;
      return parseStrace(fs.readFileSync(trace, 'utf8'));
    },
    kill() {
      if (st.exitCode === null) st.kill('SIGKILL');
    },
  };
}
