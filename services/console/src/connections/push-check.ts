import { checkAnswer, type CheckStep, type ConnectionCheck, type ConnectionRow } from '@pcg/shared/connections';

/**
 * The check of a push connection (Health Auto Export, issue 32): nothing is pulled, so nothing is asked
 * outward (`requests` 0); the steps are what decides whether the device's pushes land (spec 3.4, 4.6).
 */
export function checkPushConnection(row: Pick<ConnectionRow, 'id' | 'status' | 'has_ingest_secret' | 'last_synced_at'>, now: number): ConnectionCheck {
  const ingestPath = `/api/ingest/${row.id}`;
  const steps: CheckStep[] = [];
  steps.push(
    row.has_ingest_secret
      ? { step: 'secret', title: 'A push secret is set', passed: true, message: 'the connection has a push secret' }
      : { step: 'secret', title: 'A push secret is set', passed: false, message: `no push secret is set, so every push is refused: rotate the secret in the Console and enter the new one in the app's automation` },
  );
  steps.push(
    row.status === 'active' || row.status === 'error'
      ? { step: 'accepting', title: 'The connection accepts pushes', passed: true, message: 'the connection is active' }
      : { step: 'accepting', title: 'The connection accepts pushes', passed: false, message: `the connection is ${row.status.replace('_', ' ')}, so every push is refused: resume it` },
  );
  if (row.last_synced_at === null) {
    steps.push({
      step: 'last_push',
      title: 'A push has arrived',
      passed: false,
      message: `no push has arrived yet: in Health Auto Export add a REST API automation to ${ingestPath} on this gateway with the header X-PCI-Webhook-Secret set to the secret, and run it once`,
    });
  } else {
    const hours = Math.max(0, Math.round((now - Date.parse(row.last_synced_at)) / 3_600_000));
    steps.push({ step: 'last_push', title: 'A push has arrived', passed: true, message: `the last push arrived at ${row.last_synced_at} (${hours} h ago)` });
  }
  return checkAnswer(steps, 0);
}
