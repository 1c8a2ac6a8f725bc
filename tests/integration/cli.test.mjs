// The floe program's commands: `floe help` lists every command the dispatch
// knows, and each command's --help (and `floe help COMMAND`) shows its usage
// line and an example.  The list of dispatched commands is read from
// server/main.c's `commands` table, so a command added there without a help
// entry, or dispatched some other way, fails here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { runFloe } from './lib/harness.mjs';
import { repoRoot } from './lib/paths.mjs';

const mainC = fs.readFileSync(path.join(repoRoot, 'server', 'main.c'), 'utf8');

// The command names of `static const struct command commands[] = { ... };`.
function dispatchedCommands() {
  const m = /static const struct command commands\[\] = \{([\s\S]*?)\n\};/.exec(mainC);
  assert.ok(m, 'server/main.c has the commands table');
  return [...m[1].matchAll(/^\s*\{\s*"([a-z][a-z0-9-]*)"/gm)].map((x) => x[1]);
}

test('the dispatch is the commands table and nothing else', () => {
  const names = dispatchedCommands();
  for (const c of ['serve', 'migrate', 'ingest', 'version', 'help']) assert.ok(names.includes(c), `${c} is in the table`);
  // main() looks commands up in the table; the only other names it knows are the
  // conventional aliases of help and version.
  const literals = [...mainC.matchAll(/strcmp\(name, "([^"]+)"\)/g)].map((x) => x[1]);
  assert.deepEqual(literals.sort(), ['--help', '--version', '-h'].sort(), 'no command is dispatched outside the table');
});

test('floe help lists every dispatched command', () => {
  const r = runFloe(['help']);
  assert.equal(r.code, 0, r.stderr);
  for (const name of dispatchedCommands()) {
    assert.match(r.stdout, new RegExp(`^  floe ${name}(\\s|$)`, 'm'), `floe help lists ${name}:\n${r.stdout}`);
  }
  for (const args of [[], ['--help'], ['-h']]) {
    assert.equal(runFloe(args).stdout, r.stdout, `floe ${args.join(' ')} is floe help`);
  }
});

test('every command has --help with its usage and an example', () => {
  for (const name of dispatchedCommands()) {
    for (const args of [[name, '--help'], ['help', name]]) {
      const r = runFloe(args);
      assert.equal(r.code, 0, `floe ${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stdout, new RegExp(`^usage: floe ${name}\\b`), `floe ${args.join(' ')}`);
      assert.match(r.stdout, new RegExp(`\\nexample:\\n  floe ${name}\\b[^\\n]*\\n`), `floe ${args.join(' ')} shows an example`);
    }
  }
  // Options come with the commands that have them.
  assert.match(runFloe(['serve', '--help']).stdout, /--port=N/);
  assert.match(runFloe(['ingest', '--help']).stdout, /--table=TEXT/);
  assert.match(runFloe(['ingest', '--table', 'a.b', '--help']).stdout, /^usage: floe ingest /, '--help after other options');
});

test('an unknown command fails with the list of commands', () => {
  for (const args of [['frobnicate'], ['help', 'frobnicate']]) {
    const r = runFloe(args);
    assert.equal(r.code, 2, `floe ${args.join(' ')}`);
    assert.match(r.stderr, /unknown command 'frobnicate'/);
    for (const name of dispatchedCommands()) assert.match(r.stderr, new RegExp(`  floe ${name}\\b`));
  }
});

// libpq's parse errors quote the text they stumble on: a database URL it cannot
// parse must not reach it, and no part of its password may reach the log.
test('a database URL that does not parse is refused without quoting its password', () => {
  const urls = [
    'postgresql://floe:Sek%r3tPw@127.0.0.1:1/db', // a bare % in the password
    'postgresql://floe:Sek@r3tPw@127.0.0.1:1/db', // a bare @ in the password
    'postgresql://floe:Sekr3tPw@[::1]x/db', // junk after the host
    'host=127.0.0.1 port=1 password=Sekr3t Pw', // a space in a keyword=value password
  ];
  for (const url of urls) {
    for (const args of [['migrate', `--database-url=${url}`], ['serve', '--port=0', `--database-url=${url}`]]) {
      const r = runFloe(args, { timeoutMs: 20000 });
      const out = r.stdout + r.stderr;
      assert.notEqual(r.code, 0, `floe ${args[0]} with ${url}: ${out}`);
      assert.match(out, /the database URL is not a valid PostgreSQL URL or connection string/, out);
      for (const piece of ['Sek', 'r3t', 'Pw']) assert.ok(!out.includes(piece), `'${piece}' of the password in: ${out}`);
    }
  }
});

test('a refused setting or argument is not quoted past its "=" (it may hold a secret)', () => {
  for (const args of [
    ['serve', '--port', '--database-url=postgresql://floe:Sekr3tPw@127.0.0.1/db'],
    ['serve', '--auth', '--bootstrap-client-secret=Sekr3tPw'],
    ['serve', 'stray=Sekr3tPw'],
  ]) {
    const r = runFloe(args, { timeoutMs: 20000 });
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.ok(!(r.stdout + r.stderr).includes('Sekr3t'), r.stderr);
  }
});
