// A strict parser for the Prometheus text exposition format (version 0.0.4): every
// line must be a comment, a HELP/TYPE line or a well-formed sample, or parse() throws
// naming the line.
const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;

function parseLabels(s, lineNo) {
  const labels = {};
  let i = 0;
  while (i < s.length) {
    const m = /^\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"/.exec(s.slice(i));
    if (!m) throw new Error(`line ${lineNo}: bad label near "${s.slice(i)}"`);
    i += m[0].length;
    let v = '';
    for (;;) {
      if (i >= s.length) throw new Error(`line ${lineNo}: unterminated label value`);
      const c = s[i++];
      if (c === '"') break;
      if (c === '\\') {
        const n = s[i++];
        if (n === 'n') v += '\n';
        else if (n === '\\' || n === '"') v += n;
        else throw new Error(`line ${lineNo}: bad escape \\${n}`);
      } else v += c;
    }
    if (m[1] in labels) throw new Error(`line ${lineNo}: duplicate label ${m[1]}`);
    labels[m[1]] = v;
    const rest = /^\s*,?\s*/.exec(s.slice(i));
    i += rest[0].length;
  }
  return labels;
}

function parseValue(v, lineNo) {
  if (v === '+Inf') return Infinity;
  if (v === '-Inf') return -Infinity;
  if (v === 'NaN') return NaN;
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(v)) throw new Error(`line ${lineNo}: bad value "${v}"`);
  return Number(v);
}

export function parse(text) {
  const samples = [];
  const types = {};
  const help = {};
  text.split('\n').forEach((line, idx) => {
    const lineNo = idx + 1;
    if (line === '') return;
    if (line.startsWith('#')) {
      const m = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line);
      if (!m) return; // plain comment
      if (!NAME.test(m[2])) throw new Error(`line ${lineNo}: bad metric name ${m[2]}`);
      if (m[1] === 'TYPE') {
        if (!['counter', 'gauge', 'histogram', 'summary', 'untyped'].includes(m[3])) {
          throw new Error(`line ${lineNo}: bad type ${m[3]}`);
        }
        if (types[m[2]]) throw new Error(`line ${lineNo}: second TYPE for ${m[2]}`);
        types[m[2]] = m[3];
      } else help[m[2]] = m[3];
      return;
    }
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?[ \t]+(\S+)(?:[ \t]+(-?\d+))?$/.exec(line);
    if (!m) throw new Error(`line ${lineNo}: not a sample: ${JSON.stringify(line)}`);
    samples.push({ name: m[1], labels: m[2] ? parseLabels(m[2], lineNo) : {}, value: parseValue(m[3], lineNo) });
  });
  return { samples, types, help };
}

export function find(parsed, name, labels = {}) {
  return parsed.samples.filter(
    (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
}

export function sum(parsed, name, labels = {}) {
  return find(parsed, name, labels).reduce((a, s) => a + s.value, 0);
}
