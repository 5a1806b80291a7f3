import { describe, expect, it } from 'vitest';
import { credentialsOf, type CredentialValue } from '../web/credential-values.ts';

const field = (name: string, required: boolean, value: string) => ({ name, required, value: () => value }) satisfies CredentialValue;

describe("a token provider's connect form", () => {
  it('leaves an optional field the operator left empty out of the credentials, and sends the others as typed', () => {
    expect(credentialsOf([field('appleId', true, 'person@example.com'), field('appPassword', true, 'abcd-efgh-ijkl-mnop'), field('mailAddress', false, '')])).toEqual({
      appleId: 'person@example.com',
      appPassword: 'abcd-efgh-ijkl-mnop',
    });
    expect(credentialsOf([field('appleId', true, ''), field('mailAddress', false, 'person@icloud.com')])).toEqual({ appleId: '', mailAddress: 'person@icloud.com' });
  });
});
