import { pino } from 'pino';
import { closeOnSignals } from '@pcg/shared/lifecycle';

// A service that is still starting when its launcher's channel closes: it wires its close only after the
// channel is gone, as a slow start would.
const log = pino({ level: 'silent' });
const keepAlive = setInterval(() => undefined, 1_000);
while (process.connected) await new Promise((resolve) => setTimeout(resolve, 10));
await new Promise((resolve) => setTimeout(resolve, 100));
closeOnSignals(
  {
    async close() {
      clearInterval(keepAlive);
      process.stdout.write('closed\n');
    },
  },
  log,
);
