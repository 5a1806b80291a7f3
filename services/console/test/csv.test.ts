import { describe, expect, it } from 'vitest';
import { columnsOf, csvText, toCsv } from '../web/csv.ts';

describe('CSV for spreadsheets (spec 4.5)', () => {
  it.each(['=1+1', '+1', '-1', '@SUM(A1)', '\tcmd', '\rcmd'])('prefixes the formula-looking %j with an apostrophe', (value) => {
    expect(csvText(value)).toBe(`'${value}`);
  });

  it('leaves other text, numbers and booleans as they are, and writes objects as JSON', () => {
    expect(csvText('home')).toBe('home');
    expect(csvText(-12.5)).toBe('-12.5');
    expect(csvText(true)).toBe('true');
    expect(csvText(null)).toBe('');
    expect(csvText({ a: '=x' })).toBe('{"a":"=x"}');
  });

  it('quotes commas, quotes and line breaks, with CRLF between lines', () => {
    expect(toCsv(['a', 'b'], [{ a: 'x,y', b: 'say "hi"' }, { a: 'line\nbreak', b: '=2' }])).toBe('a,b\r\n"x,y","say ""hi"""\r\n"line\nbreak",\'=2\r\n');
  });

  it('lists the columns of every row in order of first appearance', () => {
    expect(columnsOf([{ b: 1 }, { a: 1, b: 2 }], ['object'])).toEqual(['object', 'b', 'a']);
  });
});
