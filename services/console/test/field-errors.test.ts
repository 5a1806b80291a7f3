import { describe, expect, it } from 'vitest';
import { fieldErrorsOf, fieldNameOf } from '../web/field-errors.ts';

// Issue 39: a connect form shows each refusal beside the field it names. The messages are the Console's
// own shapes: the JSON error handler's "invalid body: '<path>' <rule>" and the connections service's
// "<provider> needs valid credentials: 'credentials.<field>' <rule>".
describe('placing a refusal beside its field', () => {
  it('names the interval of "invalid body: …" and leaves nothing for the top of the form', () => {
    const { fields, rest } = fieldErrorsOf("invalid body: 'syncIntervalMinutes' Too small: expected number to be >=1");
    expect([...fields]).toEqual([['syncIntervalMinutes', ['Too small: expected number to be >=1']]]);
    expect(rest).toBe('');
  });

  it('names each credential field, keeps what leads the message for the top of the form, and maps credentials.x to x', () => {
    const { fields, rest } = fieldErrorsOf("Home Assistant needs valid credentials: 'credentials.baseUrl' must be an http:// or https:// address; 'credentials.token' Too small: expected string to have >=1 characters");
    expect([...fields.keys()].map(fieldNameOf)).toEqual(['baseUrl', 'token']);
    expect(fields.get('credentials.baseUrl')).toEqual(['must be an http:// or https:// address']);
    expect(rest).toBe('Home Assistant needs valid credentials');
  });

  it('keeps a message that names no field whole, for the top of the form', () => {
    expect(fieldErrorsOf('the sync queue could not be reached')).toEqual({ fields: new Map(), rest: 'the sync queue could not be reached' });
  });
});
