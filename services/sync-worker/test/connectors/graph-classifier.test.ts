import { describe, expect, it } from 'vitest';
import { graphClassifier } from '../../src/connectors/microsoft/graph-client.ts';

const answer = (status: number, body: unknown, headers: Record<string, string> = {}) => ({ status, headers: new Headers(headers), text: JSON.stringify(body) });
const graphError = (code: string, inner?: { code: string }) => ({ error: { code, message: 'm', innerError: { 'request-id': 'r', date: 'd', ...(inner ? { innererror: inner } : {}) } } });

// Issue 31, item 4. Graph, "Use delta query", Token duration: an expired delta token gets "a 40X-series error
// with error codes such as `syncStateNotFound`"; Synchronization reset: 410 Gone. "Microsoft Graph error
// responses", Code property: `syncStateNotFound`, `resyncRequired` (and `resyncRequired` in innererror).
describe('Graph classifier: a delta token Graph no longer honours', () => {
  it('restarts from scratch on a 4xx carrying syncStateNotFound, syncStateInvalid or resyncRequired in any case', () => {
    for (const status of [400, 403, 404, 409, 410]) {
      for (const code of ['syncStateNotFound', 'SyncStateNotFound', 'syncStateInvalid', 'SyncStateInvalid', 'resyncRequired', 'ResyncRequired']) {
        expect(graphClassifier(answer(status, graphError(code)))).toEqual({ kind: 'cursor_expired' });
      }
    }
  });

  it('reads resyncRequired from a nested innererror', () => {
    expect(graphClassifier(answer(400, graphError('invalidRequest', { code: 'resyncRequired' })))).toEqual({ kind: 'cursor_expired' });
  });

  it('restarts on a 410 Gone whatever its body', () => {
    expect(graphClassifier({ status: 410, headers: new Headers({ location: 'https://graph.microsoft.com/v1.0/me/calendarView/delta' }), text: '' })).toEqual({ kind: 'cursor_expired' });
  });

  it('leaves other refusals as they were: a 403 without a resync code needs sign-in, a 400 is rejected, a 5xx retried', () => {
    expect(graphClassifier(answer(403, graphError('ErrorAccessDenied')))).toEqual({ kind: 'needs_sign_in' });
    expect(graphClassifier(answer(400, graphError('ErrorInvalidParameter')))).toEqual({ kind: 'rejected' });
    expect(graphClassifier(answer(502, graphError('syncStateNotFound')))).toMatchObject({ kind: 'retry_later' });
  });
});
