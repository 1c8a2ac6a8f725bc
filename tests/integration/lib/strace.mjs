// Reading strace's output (strace -f -y): the durability tests check the order of a
// process's system calls with it.
import { spawnSync } from 'node:child_process';

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
