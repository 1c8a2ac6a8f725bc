// avsc with Avro longs as BigInt: Iceberg snapshot ids are 63-bit, beyond what
// a double holds.  Pass `registry: { long: bigLong }` to avro.Type.forSchema.
import avro from 'avsc';

export const bigLong = avro.types.LongType.__with({
  fromBuffer: (buf) => buf.readBigInt64LE(),
  toBuffer: (n) => {
    const buf = Buffer.alloc(8);
    buf.writeBigInt64LE(BigInt(n));
    return buf;
  },
  fromJSON: BigInt,
  toJSON: Number,
  isValid: (n) => typeof n === 'bigint',
  compare: (a, b) => (a === b ? 0 : a < b ? -1 : 1),
});
