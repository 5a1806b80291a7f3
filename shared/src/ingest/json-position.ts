/**
 * Where a JSON text first goes wrong, for a 400 that names the position (design 4.5). V8's own messages
 * give a position only for some errors and quote the input for others, so this small scanner finds the
 * offset itself. It is only run on text that `JSON.parse` already refused.
 */
export type JsonSyntaxProblem = { position: number; line: number; column: number; reason: string };

class Stop extends Error {
  readonly at: number;
  constructor(at: number, reason: string) {
    super(reason);
    this.at = at;
  }
}

export function locateJsonError(text: string): JsonSyntaxProblem {
  let i = 0;
  const fail = (reason: string): never => {
    throw new Stop(i, i >= text.length ? 'unexpected end of input' : reason);
  };
  const ws = () => {
    while (i < text.length && ' \t\n\r'.includes(text[i] ?? '')) i++;
  };
  const literal = (word: string) => {
    for (const char of word) {
      if (text[i] !== char) fail(`expected '${word}'`);
      i++;
    }
  };
  const string = () => {
    i++; // opening quote
    for (;;) {
      if (i >= text.length) fail('unterminated string');
      const char = text[i] ?? '';
      if (char === '"') return void i++;
      if (char < ' ') fail('control character in string');
      if (char === '\\') {
        i++;
        const escape = text[i] ?? '';
        if (escape === 'u') {
          for (let k = 1; k <= 4; k++) {
            if (!/[0-9a-fA-F]/.test(text[i + k] ?? '')) {
              i += k;
              fail('bad unicode escape');
            }
          }
          i += 5;
          continue;
        }
        if (!'"\\/bfnrt'.includes(escape) || escape === '') fail('bad escape');
      }
      i++;
    }
  };
  const number = () => {
    const match = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i));
    if (!match || match[0] === '-' || match[0] === '') fail('bad number');
    i += match?.[0].length ?? 0;
  };
  const value = (): void => {
    ws();
    const char = text[i];
    if (char === '{') {
      i++;
      ws();
      if (text[i] === '}') return void i++;
      for (;;) {
        ws();
        if (text[i] !== '"') fail('expected a double-quoted property name');
        string();
        ws();
        if (text[i] !== ':') fail("expected ':' after a property name");
        i++;
        value();
        ws();
        if (text[i] === ',') {
          i++;
          continue;
        }
        if (text[i] === '}') return void i++;
        fail("expected ',' or '}'");
      }
    }
    if (char === '[') {
      i++;
      ws();
      if (text[i] === ']') return void i++;
      for (;;) {
        value();
        ws();
        if (text[i] === ',') {
          i++;
          continue;
        }
        if (text[i] === ']') return void i++;
        fail("expected ',' or ']'");
      }
    }
    if (char === '"') return string();
    if (char === 't') return literal('true');
    if (char === 'f') return literal('false');
    if (char === 'n') return literal('null');
    if (char === '-' || (char !== undefined && char >= '0' && char <= '9')) return number();
    fail('unexpected character');
  };
  let at = text.length;
  let reason = 'invalid JSON';
  try {
    value();
    ws();
    if (i < text.length) fail('unexpected text after the JSON value');
  } catch (error) {
    if (!(error instanceof Stop)) throw error;
    at = error.at;
    reason = error.message;
  }
  const before = text.slice(0, at);
  const line = before.split('\n').length;
  const column = at - before.lastIndexOf('\n');
  return { position: at, line, column, reason };
}
