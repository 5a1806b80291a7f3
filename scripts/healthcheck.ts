#!/usr/bin/env node
/**
 * Health check of a service without a port (compose runs it inside the service's container):
 * `node scripts/healthcheck.ts <service>` exits 0 when a process of that service on this host published
 * its metrics snapshot to Redis within the last three intervals, 1 otherwise (or when Redis does not answer).
 */
import { loadConfig, redisConfig } from '@pcg/shared/config';
import { isServiceLiveHere } from '@pcg/shared/metrics';
import { createRedis } from '@pcg/shared/redis';

const ANSWER_WITHIN_MS = 3_000;

const service = process.argv[2];
if (!service) {
  console.error('usage: node scripts/healthcheck.ts <service>');
  process.exit(2);
}
const redis = createRedis(loadConfig(redisConfig, process.env), 'commands');
const timer = setTimeout(() => {
  console.error(`${service}: Redis did not answer within ${ANSWER_WITHIN_MS} ms`);
  process.exit(1);
}, ANSWER_WITHIN_MS);
try {
  const live = await isServiceLiveHere(redis, service);
  if (!live) console.error(`${service}: no fresh metrics snapshot from this host`);
  process.exitCode = live ? 0 : 1;
} catch (error) {
  console.error(`${service}: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 1;
} finally {
  clearTimeout(timer);
  redis.disconnect();
}
