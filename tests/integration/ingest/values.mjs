// Source values for ingest tests, per Iceberg primitive type: each is the
// text a CSV field holds (already quoted where it must be), the JSON text an
// NDJSON object holds, and the canonical value (../write-path/samples.mjs
// forms: numbers, BigInts, Buffers) the data files must give back.  Every
// canonical value is computed here from the spec and cast.h's documented
// rules, never from floe's output.
import { csvField, daysFromCivil, unscaled, decimalScale } from './lib.mjs';

export const PRIMITIVES = ['boolean', 'int', 'long', 'float', 'double', 'decimal(9, 2)', 'decimal(38, 10)', 'date',
  'time', 'timestamp', 'timestamptz', 'string', 'uuid', 'fixed[4]', 'binary'];

const v = (csv, json, want) => ({ csv, json, want });
const jstr = (s) => JSON.stringify(s);

const dateOf = (s) => {
  const [y, m, d] = s.split('-').map(Number);
  return daysFromCivil(y, m, d);
};
const US = 1000000n;
const timeOf = (s) => {
  const m = /^(\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?$/.exec(s);
  return (BigInt(m[1]) * 3600n + BigInt(m[2]) * 60n + BigInt(m[3])) * US + BigInt((m[4] ?? '').padEnd(6, '0'));
};
// "YYYY-MM-DD[Tt ]HH:MM:SS[.f]" [zone] -> microseconds since the epoch, UTC
const tsOf = (s) => {
  const m = /^(\d{4}-\d\d-\d\d)[Tt ](\d\d:\d\d:\d\d(?:\.\d+)?)(Z|z|[+-]\d\d:?\d\d)?$/.exec(s);
  let us = BigInt(dateOf(m[1])) * 86400n * US + timeOf(m[2]);
  if (m[3] && m[3].toLowerCase() !== 'z') {
    const z = /([+-])(\d\d):?(\d\d)/.exec(m[3]);
    const off = (BigInt(z[2]) * 3600n + BigInt(z[3]) * 60n) * US;
    us += z[1] === '+' ? -off : off;
  }
  return us;
};
const hex = (h) => Buffer.from(h, 'hex');

const same = (list, conv, json = jstr) => list.map((s) => v(csvField(s), json(s), conv(s)));

export function edgeValues(type) {
  switch (type) {
    case 'boolean':
      return [v('true', 'true', 1), v('FALSE', 'false', 0), v('1', 'true', 1), v('0', 'false', 0)];
    case 'int':
      return ['0', '-2147483648', '2147483647', '-1', '42'].map((s) => v(s, s, Number(s))).concat([v('+7', '7', 7)]);
    case 'long':
      return ['0', '-9223372036854775808', '9223372036854775807', '-1', '1234567890123']
        .map((s) => v(s, s, BigInt(s)));
    case 'float':
      return [
        v('0.0', '0.0', 0), v('-0.0', '-0.0', -0), v('NaN', '"NaN"', NaN), v('Infinity', '"Infinity"', Infinity),
        v('-Infinity', '"-Infinity"', -Infinity), v('3.4028234663852886e38', '3.4028234663852886e38', 3.4028234663852886e38),
        v('-3.4028234663852886e38', '-3.4028234663852886e38', -3.4028234663852886e38),
        v('1.401298464324817e-45', '1.401298464324817e-45', Math.fround(1.401298464324817e-45)),
        v('1.5', '1.5', 1.5), v('0.1', '0.1', Math.fround(0.1)), v('-inf', '"-Infinity"', -Infinity),
      ];
    case 'double':
      return [
        v('0', '0', 0), v('-0.0', '-0.0', -0), v('nan', '"NaN"', NaN), v('Infinity', '"Infinity"', Infinity),
        v('-Infinity', '"-Infinity"', -Infinity), v('1.7976931348623157e308', '1.7976931348623157e308', 1.7976931348623157e308),
        v('-1.7976931348623157e308', '-1.7976931348623157e308', -1.7976931348623157e308), v('5e-324', '5e-324', 5e-324),
        v('0.1', '0.1', 0.1), v('-2.5e-10', '-2.5e-10', -2.5e-10), v('3', '3', 3),
      ];
    case 'decimal(9, 2)':
      return [
        v('0', '"0"', 0n), v('9999999.99', '"9999999.99"', 999999999n), v('-9999999.99', '"-9999999.99"', -999999999n),
        v('1.5', '1.5', 150n), v('0.01', '"0.01"', 1n), v('-0.01', '-0.01', -1n), v('+12.30', '"12.30"', 1230n), v('12', '12', 1200n),
        v('1.25e2', '"1.25e2"', 12500n),
      ];
    case 'decimal(38, 10)': {
      const max = `${'9'.repeat(28)}.${'9'.repeat(10)}`;
      return [max, `-${max}`, '0.0000000001', '0', '12345678901234567890.0123456789', '-1.5']
        .map((s) => v(s, jstr(s), unscaled(s, decimalScale(type))));
    }
    case 'date':
      return same(['0001-01-01', '9999-12-31', '1970-01-01', '1969-12-31', '2000-02-29'], dateOf);
    case 'time':
      return same(['00:00:00', '23:59:59.999999', '12:34:56.5', '00:00:00.000001'], timeOf);
    case 'timestamp':
      return same(['0001-01-01T00:00:00', '9999-12-31T23:59:59.999999', '1970-01-01 00:00:00',
        '1969-12-31T23:59:59.999999', '2024-02-29t12:00:00.123'], tsOf);
    case 'timestamptz':
      return same(['0001-01-01T00:00:00Z', '9999-12-31T23:59:59.999999+00:00', '2024-02-29T12:00:00+05:30',
        '1970-01-01T00:00:00-0800', '2000-01-01 00:00:00z'], tsOf);
    case 'string':
      return [
        v('""', '""', Buffer.alloc(0)), v('a', '"a"', Buffer.from('a')),
        ...['héllo wörld ✓', '\u{1F600}'.repeat(18), 'x'.repeat(40), 'has,comma', 'has "quotes"', 'two\nlines',
          ' padded ', '\u{10FFFF}\u{10FFFF}', 'ü'.repeat(20)].map((s) => v(csvField(s), jstr(s), Buffer.from(s, 'utf8'))),
      ];
    case 'uuid':
      return ['00000000-0000-0000-0000-000000000000', 'ffffffff-ffff-ffff-ffff-ffffffffffff',
        '123E4567-E89B-12D3-A456-426614174000'].map((s) => v(s, jstr(s), hex(s.replaceAll('-', ''))));
    case 'fixed[4]':
      return [
        v('00000000', '"AAAAAA=="', hex('00000000')), v('FFFFFFFF', '"\\\\xffffffff"', hex('ffffffff')),
        v('\\xdeadbeef', '"3q2+7w"', hex('deadbeef')), v('01020304', '"AQIDBA=="', hex('01020304')),
      ];
    case 'binary': {
      const long = Buffer.from(Array.from({ length: 20 }, (_, i) => i * 13));
      return [
        v('""', '""', Buffer.alloc(0)), v('00', '"AA=="', hex('00')), v('ff'.repeat(20), jstr(Buffer.alloc(20, 0xff).toString('base64')), Buffer.alloc(20, 0xff)),
        v(`\\x${long.toString('hex')}`, jstr(long.toString('base64')), long), v('DEADBEEF', '"\\\\xDEADBEEF"', hex('deadbeef')),
      ];
    }
    default:
      throw new Error(`no edge values for ${type}`);
  }
}

// A null: CSV empty field; JSON null or the key left out.
export const NULL = { csv: '', json: null, want: null };

// Writes rows (arrays of {csv, json, want}) for columns [{name}] as CSV and NDJSON text.
export function toCsv(columns, rows) {
  const lines = [columns.map((c) => csvField(c.name)).join(',')];
  for (const r of rows) lines.push(r.map((x) => x.csv).join(','));
  return `${lines.join('\n')}\n`;
}

export function toNdjson(columns, rows) {
  return rows.map((r, i) => {
    const parts = [];
    r.forEach((x, c) => {
      if (x.json === null && (i + c) % 2 === 0) return; // leave the key out
      parts.push(`${JSON.stringify(columns[c].name)}:${x.json === null ? 'null' : x.json}`);
    });
    return `{${parts.join(',')}}\n`;
  }).join('');
}
