/**
 * Postgres arrays in the binary wire format (what `array_recv` reads), for `unnest` parameters.
 *
 * node-postgres sends an array parameter as a text literal: every element is quoted and backslash-
 * escaped in JavaScript, and the server parses it back character by character. For a 10,000-row audit
 * flush whose JSON args are full of quotes that round trip cost more than the INSERT itself. A Buffer
 * parameter goes out in binary format instead: each element is a length and its bytes, nothing to
 * escape and nothing to parse.
 */
const ELEMENT_OIDS = { text: 25, int8: 20, int4: 23, bytea: 17 } as const;
const ELEMENT_BYTES = { int8: 8, int4: 4 } as const;

export type PgArrayElement = keyof typeof ELEMENT_OIDS;
type ElementValue<Element extends PgArrayElement> = (Element extends 'text' ? string : Element extends 'bytea' ? Buffer : number) | null;

function elementBytes(element: PgArrayElement, value: string | number | Buffer): number {
  if (element === 'text') return Buffer.byteLength(value as string, 'utf8');
  if (element === 'bytea') return (value as Buffer).length;
  return ELEMENT_BYTES[element as 'int8' | 'int4'];
}

/** One-dimensional array, lower bound 1. Integers must be safe (int8) or fit 32 bits (int4); else a RangeError. */
export function encodePgArray<Element extends PgArrayElement>(element: Element, values: ReadonlyArray<ElementValue<Element>>): Buffer {
  // Header: ndim, has-null flag, element type, then (length, lower bound) for the one dimension.
  let size = 20;
  let hasNull = 0;
  for (const value of values) {
    if (value === null) {
      size += 4;
      hasNull = 1;
    } else {
      size += 4 + elementBytes(element, value);
    }
  }
  const buffer = Buffer.allocUnsafe(size);
  let offset = buffer.writeInt32BE(1, 0);
  offset = buffer.writeInt32BE(hasNull, offset);
  offset = buffer.writeInt32BE(ELEMENT_OIDS[element], offset);
  offset = buffer.writeInt32BE(values.length, offset);
  offset = buffer.writeInt32BE(1, offset);
  for (const value of values) {
    if (value === null) {
      offset = buffer.writeInt32BE(-1, offset);
    } else if (element === 'bytea') {
      const bytes = value as Buffer;
      offset = buffer.writeInt32BE(bytes.length, offset);
      offset += bytes.copy(buffer, offset);
    } else if (element === 'text') {
      const written = buffer.write(value as string, offset + 4, 'utf8');
      buffer.writeInt32BE(written, offset);
      offset += 4 + written;
    } else if (element === 'int8') {
      if (!Number.isSafeInteger(value)) throw new RangeError(`${String(value)} is not a safe integer`);
      // Two 32-bit halves: exact for safe integers, and no BigInt per element.
      const number = value as number;
      const high = Math.floor(number / 2 ** 32);
      offset = buffer.writeInt32BE(8, offset);
      offset = buffer.writeInt32BE(high, offset);
      offset = buffer.writeUInt32BE(number - high * 2 ** 32, offset);
    } else {
      offset = buffer.writeInt32BE(4, offset);
      offset = buffer.writeInt32BE(value as number, offset);
    }
  }
  return buffer;
}
